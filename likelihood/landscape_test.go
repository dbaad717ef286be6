package likelihood

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReachingLandscapePeaksAtTruth evaluates the log-likelihood of reaching data (50 trials
// simulated at the default parameters, with the task's policy noise) on the 25×25 grid of
// paper Fig. 2B, log10 action_cost ∈ [−5, −2] × log10 motor_noise ∈ [−2, −0.5], and requires
// its maximum within one cell of the truth.
func TestReachingLandscapePeaksAtTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("625 likelihood evaluations")
	}
	m, err := models.Get("reaching")
	require.NoError(t, err)
	spec := m.Spec()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	sv, err := control.NewSolver(m, spec.Steps, b, control.SolverOptions{})
	require.NoError(t, err)
	truth := spec.Defaults()
	pol, err := sv.Solve([][]float64{truth}, nil)
	require.NoError(t, err)
	xs, err := control.Simulate(m, pol, [][]float64{truth}, b, control.SimOptions{Trials: 50, Seed: 1, Temperature: spec.Temperature})
	require.NoError(t, err)
	e, err := New(m, b, Options{ValueOnly: true})
	require.NoError(t, err)

	const n, chunk = 25, 50
	axis := func(lo, hi float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = lo + (hi-lo)*float64(i)/(n-1)
		}
		return v
	}
	ac, mn := axis(-5, -2), axis(-2, -0.5)
	var thetas [][]float64
	for _, y := range mn {
		for _, x := range ac {
			thetas = append(thetas, []float64{x, math.Log10(truth[1]), y, math.Log10(truth[3])})
		}
	}
	rows := make([][][][]float64, chunk)
	for i := range rows {
		rows[i] = xs[0]
	}
	d, err := e.Prepare(rows, 0)
	require.NoError(t, err)
	best, bestLL := -1, math.Inf(-1)
	for start := 0; start < len(thetas); start += chunk {
		part := make([][]float64, chunk)
		for i := range part {
			part[i] = thetas[min(start+i, len(thetas)-1)]
		}
		ll, _, err := e.Eval(d, part)
		require.NoError(t, err)
		for i := range min(chunk, len(thetas)-start) {
			if ll[i] > bestLL {
				best, bestLL = start+i, ll[i]
			}
		}
	}
	bx, by := best%n, best/n
	t.Logf("maximum at action_cost 1e%.3f, motor_noise 1e%.4f", ac[bx], mn[by])
	assert.LessOrEqual(t, math.Abs(float64(bx-8)), 1.0, "action_cost cell %d, truth at 8", bx)
	assert.LessOrEqual(t, math.Abs(float64(by-16)), 1.0, "motor_noise cell %d, truth at 16", by)
}
