package control

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateStarts: trials started away from the task's x0 (SimOptions.Starts). On the
// linear task two trials with the same noise streams, one from x0 and one from x0 + d, differ
// by d_t with d_{t+1} = (A + B·L_t)·d_t, A and B the point mass's dynamics and L_t the
// policy's gains — observed partially too, because the agent's belief starts at the trial's
// own initial state, so the EKF's estimates differ by the same d_t. (A belief started at the
// task's x0 would not give this.) A trial started at x0 is the default simulation's, and the
// unrolled and looped forms agree.
func TestSimulateStarts(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "linear")
	const T = 12
	const linearDt = 0.1 // models.LinearGaussian's step
	sv, err := NewSolver(m, T, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	d := []float64{-0.4, 0.7}
	starts := [][]float64{spec.X0, {spec.X0[0] + d[0], spec.X0[1] + d[1]}}
	for _, observe := range []Observe{ObservePartial, ObserveFull} {
		base := SimOptions{Observe: observe, Trials: 1, Seed: 6, Temperature: spec.Temperature}
		plain, err := Simulate(m, pol, [][]float64{theta}, b, base)
		require.NoError(t, err)
		for _, form := range []string{"unrolled", "looped"} {
			opts := SimOptions{Observe: observe, Trials: 2, TrialIDs: []int{0, 0}, Seed: 6, Temperature: spec.Temperature, Starts: starts, Form: form}
			xs, err := Simulate(m, pol, [][]float64{theta}, b, opts)
			require.NoError(t, err)
			from, moved := xs[0][0], xs[0][1]
			assert.Equal(t, starts[1], moved[0], "%s %s: x_0 is the trial's start", observe, form)
			dt := []float64{d[0], d[1]}
			for tt := range T {
				assert.InDeltaSlice(t, plain[0][0][tt+1], from[tt+1], 1e-12, "%s %s t=%d: the trial from x0 is the default's", observe, form, tt+1)
				L := pol.Gain[tt*2 : tt*2+2] // k = 1, n = 2, P = 1
				u := L[0]*dt[0] + L[1]*dt[1]
				dt = []float64{dt[0] + linearDt*dt[1], dt[1] + linearDt*u}
				got := []float64{moved[tt+1][0] - from[tt+1][0], moved[tt+1][1] - from[tt+1][1]}
				assert.InDeltaSlice(t, dt, got, 1e-12, "%s %s t=%d: the difference follows (A + B·L_t)", observe, form, tt+1)
			}
			assert.Greater(t, max(dt[0], -dt[0], dt[1], -dt[1]), 1e-3, "the test's difference has not died out")
		}
	}
	for _, c := range []struct {
		name   string
		starts [][]float64
		want   string
	}{
		{"count", [][]float64{spec.X0}, "1 initial states for 2 trials"},
		{"dimension", [][]float64{spec.X0, {1}}, "trial 1's initial state has 1 values"},
		{"NaN", [][]float64{spec.X0, {1, math.NaN()}}, "trial 1's initial state vel is NaN"},
	} {
		_, err := Simulate(m, pol, [][]float64{theta}, b, SimOptions{Trials: 2, Seed: 1, Starts: c.starts})
		assert.ErrorContains(t, err, c.want, c.name)
	}
}
