package plots

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/plot"
)

// TestSparseLogTicks: at most four labelled decades; axes with few decades keep all labels.
func TestSparseLogTicks(t *testing.T) {
	count := func(ts []plot.Tick) int {
		n := 0
		for _, tk := range ts {
			if tk.Label != "" {
				n++
			}
		}
		return n
	}
	for _, r := range [][2]float64{{1e-5, 1}, {1e-4, 10}, {1e-3, 1e3}, {0.01, 1}, {0.1, 1}} {
		full := count(plot.LogTicks{Prec: -1}.Ticks(r[0], r[1]))
		sparse := count(sparseLogTicks{}.Ticks(r[0], r[1]))
		assert.LessOrEqual(t, sparse, 4, "%v", r)
		if full <= 4 {
			assert.Equal(t, full, sparse, "%v", r)
		} else {
			assert.GreaterOrEqual(t, sparse, 2, "%v", r)
		}
	}
}
