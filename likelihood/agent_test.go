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

// TestSimulateJointly: on the Go backend an agent whose trials have lengths of their own is
// simulated in one call, every trial of every θ a problem of the horizons' joint policy
// (simulateJointly), and its trials are those of a simulation per horizon to the bit: for
// the likelihood's agent with a fitted temperature (each θ's own policy noise), one without
// policy noise, one stopped after two iterations, one that senses a step late and without
// the feed-forward term, and the likelihood's again with trials of their own starts. It fails
// where a trial gets another's noise or start.
func TestSimulateJointly(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	e, err := New(m, b, Options{FitTemperature: true})
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	th := append(append([]float64(nil), natural...), 3*m.Spec().Temperature)
	th2 := append([]float64(nil), th...)
	th2[0] *= 2
	th2[len(th2)-1] *= 4
	lengths := []int{6, 9, 7, 9, 12, 6}
	starts := make([][]float64, len(lengths))
	for j := range starts {
		starts[j] = append([]float64(nil), m.Spec().X0...)
		starts[j][0] += 0.05 * float64(j)
	}
	for c, v := range []AgentVariant{{}, {NoPolicyNoise: true}, {PlannerIterations: 2}, {Delay: 1, NoFeedForward: true}, {}} {
		var from [][]float64
		if c == 4 {
			from = starts
		}
		var out [2][][][][]float64
		for i, joint := range []bool{false, true} {
			jointSimulation = joint
			out[i], err = e.SimulateVariantTrials([][]float64{th, th2}, lengths, from, 4, v)
			jointSimulation = true
			require.NoError(t, err)
		}
		require.Len(t, out[1], 2)
		for p := range out[0] {
			for j := range lengths {
				require.Len(t, out[1][p][j], lengths[j]+1, "%s: θ %d trial %d", v, p, j)
				assert.Equal(t, out[0][p][j], out[1][p][j], "%s: θ %d trial %d", v, p, j)
			}
			assert.NotEqual(t, out[1][p][1][4], out[1][p][3][4], "%s: trials 1 and 3, both of 9 steps, have noises of their own", v)
		}
		assert.NotEqual(t, out[1][0][0][3], out[1][1][0][3], "%s: the two θ differ", v)
	}
}
