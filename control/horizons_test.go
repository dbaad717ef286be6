package control

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// horizonCase is four pendulum problems of horizons 7, 12, 9 and 12 (two parameter
// vectors), and each one's policy from a solver of its own horizon on the Go backend.
func horizonCase(t *testing.T) (thetas [][]float64, horizons []int, alone []*Policy) {
	t.Helper()
	bg, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	other := append([]float64(nil), theta...)
	other[0] *= 3
	thetas = [][]float64{theta, other, other, theta}
	horizons = []int{7, 12, 9, 12}
	for p, h := range horizons {
		sv, err := NewSolver(m, h, bg, SolverOptions{Planner: spec.Planner, Form: "looped"})
		require.NoError(t, err)
		pol, err := sv.Solve(thetas[p:p+1], nil)
		require.NoError(t, err)
		alone = append(alone, pol)
	}
	return thetas, horizons, alone
}

// sameSteps asserts that the first h steps of problem p of pol are those of the policy one of
// its own horizon, within tol (relative, 0: to the bit), and so are its nominal to x_h, its
// cost and whether it converged.
func sameSteps(t *testing.T, pol *Policy, p int, one *Policy, tol float64) {
	t.Helper()
	h, P := one.Steps, pol.Problems
	near := func(what string, a, b float64) {
		if tol == 0 {
			assert.Equal(t, b, a, "problem %d (horizon %d): %s", p, h, what)
		} else {
			assert.InDelta(t, b, a, tol*math.Max(1, math.Abs(b)), "problem %d (horizon %d): %s", p, h, what)
		}
	}
	for _, a := range []struct {
		name      string
		got, want []float64
		rows      int
	}{
		{"gain", pol.Gain, one.Gain, h * one.Controls * one.States},
		{"offset", pol.Offset, one.Offset, h * one.Controls},
		{"H̃", pol.Hessian, one.Hessian, h * one.Controls * one.Controls},
		{"nominal states", pol.Xbar, one.Xbar, (h + 1) * one.States},
		{"nominal controls", pol.Ubar, one.Ubar, h * one.Controls},
	} {
		for r := range a.rows {
			near(a.name, a.got[r*P+p], a.want[r])
		}
	}
	near("cost", pol.Cost[p], one.Cost[0])
	assert.Equal(t, one.Converged[0], pol.Converged[p], "problem %d converged", p)
}

// TestSolveHorizons: problems of horizons 7, 12, 9 and 12 solved together over 12 steps
// (the looped form on the Go backend) get, before their horizons, the policies, nominal
// trajectories and costs that solvers of their own horizons give them, to the bit; a
// simulation under the padded policy reaches the same states by each horizon.
func TestSolveHorizons(t *testing.T) {
	thetas, horizons, alone := horizonCase(t)
	bg, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, _ := taskDefaults(t, "pendulum")
	sv, err := NewSolver(m, 12, bg, SolverOptions{Planner: spec.Planner, Form: "looped"})
	require.NoError(t, err)
	require.True(t, sv.SolvesHorizons())
	pol, err := sv.SolveHorizons(thetas, nil, horizons, 100)
	require.NoError(t, err)
	for p := range horizons {
		sameSteps(t, pol, p, alone[p], 0)
	}
	for p, h := range horizons {
		opts := SimOptions{Observe: ObservePartial, Trials: 2, Seed: 9, Temperature: spec.Temperature, Form: "looped"}
		padded, err := Simulate(m, pol.Subset([]int{p}), thetas[p:p+1], bg, opts)
		require.NoError(t, err)
		own, err := Simulate(m, alone[p], thetas[p:p+1], bg, opts)
		require.NoError(t, err)
		for r := range 2 {
			assert.Equal(t, own[0][r], padded[0][r][:h+1], "problem %d trial %d", p, r)
		}
	}

	_, err = sv.SolveHorizons(thetas, nil, []int{7, 13, 9, 12}, 100)
	assert.ErrorContains(t, err, "horizon is 13 steps")
	unrolled, err := NewSolver(m, 12, bg, SolverOptions{Planner: spec.Planner, Form: "unrolled"})
	require.NoError(t, err)
	assert.False(t, unrolled.SolvesHorizons())
	_, err = unrolled.SolveHorizons(thetas, nil, horizons, 100)
	assert.ErrorContains(t, err, "looped form")
}

// TestSolveInChunks: problems solved together in chunks (a population's trials of many
// lengths) get, to the bit, the policies, nominal trajectories, costs and convergence that
// one solve of them all gives; the joined solution took the most iterations any chunk took,
// and SolveEachHorizon with small chunks returns what it returns with one.
func TestSolveInChunks(t *testing.T) {
	thetas, horizons, _ := horizonCase(t)
	bg, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, _ := taskDefaults(t, "pendulum")
	sv, err := NewSolver(m, 12, bg, SolverOptions{Planner: spec.Planner, Form: "looped"})
	require.NoError(t, err)
	whole, err := sv.SolveHorizons(thetas, nil, horizons, 100)
	require.NoError(t, err)
	for _, c := range []int{1, 3, 4} {
		got, err := solveInChunks(sv, thetas, nil, horizons, 100, c)
		require.NoError(t, err)
		assert.Equal(t, whole.Problems, got.Problems, "chunks of %d", c)
		assert.Equal(t, whole.Gain, got.Gain, "chunks of %d: gains", c)
		assert.Equal(t, whole.Offset, got.Offset, "chunks of %d: offsets", c)
		assert.Equal(t, whole.Hessian, got.Hessian, "chunks of %d: H̃", c)
		assert.Equal(t, whole.Xbar, got.Xbar, "chunks of %d: nominal states", c)
		assert.Equal(t, whole.Ubar, got.Ubar, "chunks of %d: nominal controls", c)
		assert.Equal(t, whole.Cost, got.Cost, "chunks of %d: costs", c)
		assert.Equal(t, whole.Converged, got.Converged, "chunks of %d: convergence", c)
		iters := 0
		for p := range thetas {
			one, err := sv.SolveHorizons(thetas[p:p+1], nil, horizons[p:p+1], 100)
			require.NoError(t, err)
			iters = max(iters, one.Iterations)
		}
		if c == 1 {
			assert.Equal(t, iters, got.Iterations, "the most iterations a problem took alone")
		}
		require.Len(t, got.CostTrace, len(whole.CostTrace), "chunks of %d", c)
		assert.Equal(t, whole.CostTrace[len(whole.CostTrace)-1], got.CostTrace[len(got.CostTrace)-1], "chunks of %d: the last costs", c)
	}
	problems := func(i int) ([][]float64, [][]float64) { return thetas[2*i : 2*i+2], nil }
	hs := []int{9, 12}
	want, wantJoint, err := SolveEachHorizon(m, bg, SolverOptions{Planner: spec.Planner}, hs, problems, 0)
	require.NoError(t, err)
	defer func(f func(backends.Backend) int) { horizonChunk = f }(horizonChunk)
	horizonChunk = func(backends.Backend) int { return 3 }
	got, gotJoint, err := SolveEachHorizon(m, bg, SolverOptions{Planner: spec.Planner}, hs, problems, 0)
	require.NoError(t, err)
	assert.Equal(t, wantJoint.Gain, gotJoint.Gain, "the joint policy, in chunks of 3")
	for _, h := range hs {
		assert.Equal(t, want[h].Gain, got[h].Gain, "horizon %d, in chunks of 3", h)
		assert.Equal(t, want[h].Xbar, got[h].Xbar, "horizon %d, in chunks of 3", h)
	}
}

// TestSolveHorizonsXLA is TestSolveHorizons on XLA's CPU plugin, against the Go backend's
// solvers of each horizon. Skipped without a plugin.
func TestSolveHorizonsXLA(t *testing.T) {
	bx, _ := xlaAndGo(t)
	thetas, horizons, alone := horizonCase(t)
	m, spec, _ := taskDefaults(t, "pendulum")
	sv, err := NewSolver(m, 12, bx, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.SolveHorizons(thetas, nil, horizons, 100)
	require.NoError(t, err)
	for p := range horizons {
		sameSteps(t, pol, p, alone[p], 1e-9)
	}
}

// TestPadHorizon: padded horizons are multiples of 8 up to 64 steps, of a quarter of the
// power of two below beyond, never shorter and from 32 steps on at most a quarter longer.
func TestPadHorizon(t *testing.T) {
	for _, c := range []struct{ T, want int }{{1, 8}, {8, 8}, {9, 16}, {32, 32}, {33, 40}, {50, 56}, {64, 64}, {65, 80}, {100, 112}, {200, 224}, {1000, 1024}} {
		assert.Equal(t, c.want, PadHorizon(c.T), "T = %d", c.T)
	}
	for T := 1; T <= 2000; T++ {
		got := PadHorizon(T)
		require.GreaterOrEqual(t, got, T)
		if T >= 32 {
			require.LessOrEqual(t, float64(got), 1.25*float64(T), "T = %d", T)
		}
	}
}
