package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScaleNoise: dividing H̃ by τ and simulating at temperature 1 is simulating at τ.
func TestScaleNoise(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	thetas := [][]float64{spec.Defaults(), spec.Defaults()}
	sv, err := control.NewSolver(m, 8, b, control.SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	taus := []float64{0.3, 0.01}
	var want [][][][]float64
	for q, tau := range taus {
		pol, err := sv.Solve(thetas[q:q+1], nil)
		require.NoError(t, err)
		xs, err := control.Simulate(m, pol, thetas[q:q+1], b, control.SimOptions{Trials: 3, Seed: 5, Temperature: tau})
		require.NoError(t, err)
		want = append(want, xs[0])
	}
	pol, err := sv.Solve(thetas, nil)
	require.NoError(t, err)
	full := [][]float64{append(spec.Defaults(), taus[0]), append(spec.Defaults(), taus[1])}
	scaleNoise(pol, full, len(spec.Params))
	// Problem q's noise streams are those of problem q: simulate each alone to compare.
	for q := range taus {
		one := &control.Policy{Problems: 1, Steps: pol.Steps, States: pol.States, Controls: pol.Controls,
			Xbar: column(pol.Xbar, 2, q), Ubar: column(pol.Ubar, 2, q), Gain: column(pol.Gain, 2, q),
			Offset: column(pol.Offset, 2, q), Hessian: column(pol.Hessian, 2, q), Converged: []bool{true}}
		xs, err := control.Simulate(m, one, thetas[q:q+1], b, control.SimOptions{Trials: 3, Seed: 5, Temperature: 1})
		require.NoError(t, err)
		for r := range want[q] {
			for k := range want[q][r] {
				assert.InDeltaSlice(t, want[q][r][k], xs[0][r][k], 1e-9, "τ %g trial %d step %d", taus[q], r, k)
			}
		}
	}
}

// column returns problem q of a policy array whose last axis has P problems.
func column(a []float64, P, q int) []float64 {
	out := make([]float64, len(a)/P)
	for i := range out {
		out[i] = a[i*P+q]
	}
	return out
}
