package plots

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSparseLogTicks: powers of ten labelled, at most four; 2s and 5s labelled on axes with
// fewer than two powers of ten; round numbers in natural units where that labels fewer than two.
func TestSparseLogTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		labels   []string
	}{
		{1e-5, 1, []string{"1e-5", "0.001", "0.1"}},
		{1e-4, 10, []string{"1e-4", "0.01", "1"}},
		{0.01, 10, []string{"0.01", "0.1", "1", "10"}},
		{0.01, 1, []string{"0.01", "0.1", "1"}},
		{0.25, 2.5, []string{"0.5", "1", "2"}},
		{0.3, 0.9, []string{"0.4", "0.6", "0.8"}},
		{0.1, 1, []string{"0.1", "1"}},
	} {
		var labels []string
		ticks := 0
		for _, tk := range (sparseLogTicks{}).Ticks(c.min, c.max) {
			assert.True(t, tk.Value >= c.min*(1-1e-9) && tk.Value <= c.max*(1+1e-9), "[%g, %g]: tick %g", c.min, c.max, tk.Value)
			ticks++
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		assert.Equal(t, c.labels, labels, "[%g, %g]", c.min, c.max)
		assert.Greater(t, ticks, len(labels), "[%g, %g]: minor ticks", c.min, c.max)
	}
}
