package fit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOtherOptima: the restarts' ends other than the estimate, best first, each listed once,
// none further below the best than OptimaWithin, failed restarts skipped.
func TestOtherOptima(t *testing.T) {
	r := Result{Fitted: []string{"a", "b"}, LogLik: 100, Scaled: map[string]float64{"a": 0, "b": 1}}
	r.Ends = [][]float64{
		{0, 1},           // the estimate
		{2e-4, 1},        // the estimate again, up to the optimizer's tolerance
		{1, 1},           // a second peak, 3 nats lower
		nil,              // a failed restart
		{0.5, -1},        // a third, 40 nats lower
		{1.0005, 1.0002}, // the second again
		{3, 3},           // far below: left out
		{0.5 + 2e-3, -1}, // apart from the third by more than 1e-3: kept
	}
	r.EndLogLik = []float64{100, 99.9999, 97, 0, 60, 96.9, -1e9, 59}
	got := otherOptima(r)
	assert.Equal(t, []Optimum{
		{LogLik: 97, Scaled: map[string]float64{"a": 1, "b": 1}},
		{LogLik: 60, Scaled: map[string]float64{"a": 0.5, "b": -1}},
		{LogLik: 59, Scaled: map[string]float64{"a": 0.502, "b": -1}},
	}, got)
	r.Ends, r.EndLogLik = [][]float64{{0, 1}, {1e-5, 1}}, []float64{100, 100}
	assert.Empty(t, otherOptima(r), "every restart at the estimate: no other optimum")
}

// TestNearOptima: the bootstrap's 95th percentile of the log-likelihood gaps (of 20, the
// largest; of 40, the 39th) decides which other optima the intervals take in.
func TestNearOptima(t *testing.T) {
	r := Result{Fitted: []string{"a"}, LogLik: 100, Scaled: map[string]float64{"a": 0},
		Ends: [][]float64{{0}, {1}, {2}, {3}}, EndLogLik: []float64{100, 98, 95, 90}}
	gaps := make([]float64, 20)
	for j := range gaps {
		gaps[j] = float64(j) / 4 // 0 … 4.75
	}
	gap95, near := nearOptima(r, gaps)
	assert.Equal(t, 4.75, gap95)
	assert.Equal(t, []Optimum{{LogLik: 98, Scaled: map[string]float64{"a": 1}}}, near, "2 nats below: in; 5 and 10: out")
	gaps = append(gaps, make([]float64, 20)...)
	for j := range gaps {
		gaps[j] = float64(j) / 4 // 0 … 9.75
	}
	gap95, near = nearOptima(r, gaps)
	assert.Equal(t, 9.5, gap95)
	assert.Len(t, near, 2, "5 nats below: in; 10: out")
}

func TestJoinedInterval(t *testing.T) {
	for _, c := range []struct {
		centre, half float64
		peaks        []float64
		lo, hi       float64
	}{
		{1, 0.5, nil, 0.5, 1.5},
		{1, 0.5, []float64{1.2}, 0.5, 1.7},      // a peak inside: the upper end moves out by its own half-width
		{1, 0.5, []float64{-2, 3}, -2.5, 3.5},   // peaks on both sides
		{1, 0.5, []float64{0.9, 1.1}, 0.4, 1.6}, // both inside
	} {
		lo, hi := joinedInterval(c.centre, c.half, c.peaks)
		assert.InDelta(t, c.lo, lo, 1e-12, "%v", c)
		assert.InDelta(t, c.hi, hi, 1e-12, "%v", c)
	}
}
