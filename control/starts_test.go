package control

import (
	"math"
	"slices"
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

// TestSimulateStartSpread: with SimOptions.StartSD each trial starts at DrawStarts' state and
// keeps the noises it has from x0 (the same trial started there explicitly with Starts is the
// same trajectory). With Replan each trial is planned from its own start: on the linear task
// the optimal control law is the same affine function of the state from any start, so the
// trajectories are those without replanning; on reaching they differ, and each equals that of
// an agent solved from that trial's start alone (Solve with x0) and simulated from it.
func TestSimulateStartSpread(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, c := range []struct {
		task       string
		sd         []float64
		replanSame bool
	}{
		{"linear", []float64{0.3, 0.2}, true},
		{"reaching", []float64{0.15, 0.15, 0, 0}, false},
	} {
		m, spec, theta := taskDefaults(t, c.task)
		const trials = 4
		lengths := [][]int{slices.Repeat([]int{spec.Steps}, trials)}
		seeds := []uint64{11}
		opts := SimOptions{Observe: ObservePartial, Temperature: spec.Temperature, StartSD: c.sd}
		spread, _, err := SimulateLengths(m, theta, lengths, seeds, b, SolverOptions{Planner: spec.Planner}, opts)
		require.NoError(t, err, c.task)
		starts := DrawStarts(spec.X0, c.sd, seeds[0], []int{0, 1, 2, 3})
		sv, err := NewSolver(m, spec.Steps, b, SolverOptions{Planner: spec.Planner})
		require.NoError(t, err)
		pol, err := sv.Solve([][]float64{theta}, nil)
		require.NoError(t, err)
		explicit, err := Simulate(m, pol, [][]float64{theta}, b, SimOptions{Observe: ObservePartial, Temperature: spec.Temperature, Trials: trials, Seed: seeds[0], Starts: starts})
		require.NoError(t, err)
		for r := range trials {
			assert.Equal(t, starts[r], spread[0][r][0], "%s trial %d starts at its draw", c.task, r)
			assert.NotEqual(t, spec.X0, starts[r], "%s trial %d is spread", c.task, r)
			assert.Equal(t, explicit[0][r], spread[0][r], "%s trial %d: StartSD is Starts at DrawStarts' states", c.task, r)
		}
		opts.Replan = true
		replanned, _, err := SimulateLengths(m, theta, lengths, seeds, b, SolverOptions{Planner: spec.Planner}, opts)
		require.NoError(t, err, c.task)
		for r := range trials {
			diff := 0.0
			for tt, x := range replanned[0][r] {
				for i := range x {
					diff = max(diff, math.Abs(x[i]-spread[0][r][tt][i]))
				}
			}
			if c.replanSame {
				assert.Less(t, diff, 1e-9, "%s trial %d: replanning a linear-quadratic agent changes nothing", c.task, r)
				continue
			}
			assert.Greater(t, diff, 1e-4, "%s trial %d: the replanned agent acts otherwise", c.task, r)
			own, err := sv.Solve([][]float64{theta}, starts[r:r+1])
			require.NoError(t, err)
			alone, err := Simulate(m, own, [][]float64{theta}, b, SimOptions{Observe: ObservePartial, Temperature: spec.Temperature, Trials: 1, TrialIDs: []int{r}, Seed: seeds[0], Starts: starts[r : r+1]})
			require.NoError(t, err)
			for tt, x := range replanned[0][r] {
				assert.InDeltaSlice(t, alone[0][0][tt], x, 1e-9, "%s trial %d t=%d: the agent solved from the trial's start", c.task, r, tt)
			}
		}
	}
	assert.Panics(t, func() { DrawStarts([]float64{1, 2}, []float64{1}, 1, []int{0}) })
	m, spec, theta := taskDefaults(t, "linear")
	sv, err := NewSolver(m, 5, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		sd   []float64
		want string
	}{
		{[]float64{1}, "1 start spreads, task linear has 2 states"},
		{[]float64{1, -1}, "start spread of vel is -1"},
		{[]float64{math.NaN(), 0}, "start spread of pos is NaN"},
	} {
		_, err := Simulate(m, pol, [][]float64{theta}, b, SimOptions{Trials: 1, StartSD: c.sd})
		assert.ErrorContains(t, err, c.want)
	}
}
