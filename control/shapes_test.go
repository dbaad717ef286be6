package control

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateInChunks: the looped simulation run over its trials in chunks (the last one
// padded) gives every trial the states of one run over all of them, to the bit on the Go
// backend, whether the chunks are smaller than the trials, as many or more.
func TestSimulateInChunks(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	s, err := models.Derive(m)
	require.NoError(t, err)
	const T, M = 12, 20
	sv, err := NewSolver(m, T, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	theta2 := append([]float64(nil), theta...)
	theta2[0] *= 1.5
	thetas := [][]float64{theta, theta2}
	pol, err := sv.Solve(thetas, nil)
	require.NoError(t, err)
	P, n, k := pol.Problems, len(spec.States), len(spec.Controls)
	rng := rand.New(rand.NewPCG(1, 2))
	x0 := make([]float64, n*P*M)
	for i := range n {
		for j := range P * M {
			x0[i*P*M+j] = spec.X0[i] + 0.05*rng.NormFloat64()
		}
	}
	v, w, xi := normals(rng, T*spec.StateNoise*P*M), normals(rng, T*spec.ObsNoise*P*M), normals(rng, T*k*P*M)
	opts := SimOptions{Observe: ObservePartial, Temperature: spec.Temperature}
	whole, err := simulateLooped(b, s, thetas, pol, x0, v, w, xi, M, opts)
	require.NoError(t, err)
	for _, c := range []int{7, M, 32} {
		chunked, err := simulateInChunks(c, b, s, thetas, pol, x0, v, w, xi, M, opts)
		require.NoError(t, err)
		assert.Equal(t, whole, chunked, "chunks of %d trials", c)
	}
}

// normals returns size standard normal draws of rng.
func normals(rng *rand.Rand, size int) []float64 {
	a := make([]float64, size)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	return a
}

// TestSimulateProblemChunks: a simulation of one trial per problem run over its problems in
// chunks (the last padded) gives every problem the states of one run over all of them, to the
// bit on the Go backend, whether the chunks are smaller than the problems, as many or more.
func TestSimulateProblemChunks(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	s, err := models.Derive(m)
	require.NoError(t, err)
	const T, P = 12, 11
	sv, err := NewSolver(m, T, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	thetas := make([][]float64, P)
	for p := range thetas {
		thetas[p] = append([]float64(nil), theta...)
		thetas[p][0] *= 1 + 0.1*float64(p)
	}
	pol, err := sv.Solve(thetas, nil)
	require.NoError(t, err)
	n, k := len(spec.States), len(spec.Controls)
	rng := rand.New(rand.NewPCG(3, 4))
	x0 := make([]float64, n*P)
	for i := range n {
		for p := range P {
			x0[i*P+p] = spec.X0[i] + 0.05*rng.NormFloat64()
		}
	}
	v, w, xi := normals(rng, T*spec.StateNoise*P), normals(rng, T*spec.ObsNoise*P), normals(rng, T*k*P)
	opts := SimOptions{Observe: ObservePartial, Temperature: spec.Temperature}
	whole, err := simulateLooped(b, s, thetas, pol, x0, v, w, xi, 1, opts)
	require.NoError(t, err)
	for _, c := range []int{4, P, 16} {
		chunked, err := simulateProblemChunks(c, b, s, thetas, pol, x0, v, w, xi, opts)
		require.NoError(t, err)
		assert.Equal(t, whole, chunked, "chunks of %d problems", c)
	}
}

// TestSimulateProblemsInCalls: a simulation of one trial per problem, run in calls of a few
// problems on the Go backend, gives every problem the states of one call of all, and a
// diverging problem is named by its number among all problems.
func TestSimulateProblemsInCalls(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	const T, P, bad = 10, 7, 5
	sv, err := NewSolver(m, T, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	pol = pol.Repeat(P)
	for r := range len(pol.Gain) / P { // problem bad's feedback explodes
		pol.Gain[r*P+bad] *= -1e150
	}
	thetas, who := make([][]float64, P), make([]ProblemTrial, P)
	for p := range P {
		thetas[p], who[p] = theta, ProblemTrial{Seed: 8, Problem: p, Trial: 2 * p, X0: spec.X0}
	}
	opts := SimOptions{Observe: ObservePartial, Trials: 1, Temperature: spec.Temperature, PerProblem: who}
	want, wantErr := Simulate(m, pol, thetas, b, opts)
	defer func(c int) { simulationChunk = c }(simulationChunk)
	simulationChunk = 3
	got, gotErr := Simulate(m, pol, thetas, b, opts)
	var wd, gd *DivergedError
	require.ErrorAs(t, wantErr, &wd)
	require.ErrorAs(t, gotErr, &gd)
	assert.Equal(t, []int{bad}, gd.Problems)
	assert.Equal(t, wd.First, gd.First, "the diverging problem named by its number among all")
	require.Len(t, got, P)
	for p := range P {
		if p != bad {
			assert.Equal(t, want[p], got[p], "problem %d", p)
		}
	}
}

// TestSimulateNoiseFree: an agent without policy noise (temperature 0) runs the program of
// temperature 1 with no noise and H̃ = I: its trajectories are those of its control law
// alone, whatever H̃ the policy carries (a matrix that is not positive definite, whose
// factor would be NaN, changes nothing), in both forms, and they differ from a noisy
// agent's of the same seed.
func TestSimulateNoiseFree(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	sv, err := NewSolver(m, 12, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	bad := *pol
	bad.Hessian = make([]float64, len(pol.Hessian))
	for i := range bad.Hessian {
		bad.Hessian[i] = -1
	}
	for _, form := range []string{"unrolled", "looped"} {
		run := func(p *Policy, temperature float64) [][]float64 {
			xs, err := Simulate(m, p, [][]float64{theta}, b, SimOptions{Observe: ObservePartial, Trials: 3, Seed: 5, Temperature: temperature, Form: form})
			require.NoError(t, err)
			return xs[0][2]
		}
		free := run(pol, 0)
		assert.Equal(t, free, run(&bad, 0), "%s: H̃ is not used without policy noise", form)
		for _, x := range free {
			for _, y := range x {
				assert.False(t, math.IsNaN(y) || math.IsInf(y, 0), "%s: finite states", form)
			}
		}
		assert.NotEqual(t, free, run(pol, spec.Temperature), "%s: policy noise changes the trajectory", form)
	}
}

// TestSimulateXLAChunks: on XLA's CPU plugin the simulation runs its trials in chunks of
// SimChunk (two chunks of 256 here, the second padded) and agents with and without policy noise
// share one compiled program; the states equal the Go backend's. Skipped without a plugin.
func TestSimulateXLAChunks(t *testing.T) {
	bx, bg := xlaAndGo(t)
	m, spec, theta := taskDefaults(t, "pendulum")
	sv, err := NewSolver(m, 10, bg, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	trials := SimChunk(bx, 1000) + 44
	for _, temperature := range []float64{1, 0} {
		var xs [2][][][]float64
		for i, backend := range []backends.Backend{bg, bx} {
			out, err := Simulate(m, pol, [][]float64{theta}, backend, SimOptions{Observe: ObservePartial, Trials: trials, Seed: 2, Temperature: temperature, Form: "looped"})
			require.NoError(t, err)
			xs[i] = out[0]
		}
		require.Len(t, xs[1], trials)
		for r := range trials {
			for j, x := range xs[0][r] {
				for i := range x {
					require.InDelta(t, x[i], xs[1][r][j][i], 1e-10*math.Max(1, math.Abs(x[i])), "temperature %g, trial %d, step %d", temperature, r, j)
				}
			}
		}
	}
	sym, err := models.Derive(m)
	require.NoError(t, err)
	engines := 0 // this model's on bx: other tests share both
	simEngines.Range(func(key, _ any) bool {
		if strings.HasPrefix(key.(string), fmt.Sprintf("%p|%p|", bx, sym)) {
			engines++
		}
		return true
	})
	assert.Equal(t, 1, engines, "temperatures 1 and 0 share the XLA simulation's programs")
}

// TestSolveXLAOneRolloutShape: on XLA the solver's initial zero-control rollout runs in the
// line search's shape (K candidates), so a solve compiles one rollout, not two; its policy
// equals the Go backend's. Skipped without a plugin.
func TestSolveXLAOneRolloutShape(t *testing.T) {
	bx, bg := xlaAndGo(t)
	m, spec, theta := taskDefaults(t, "pendulum")
	var pols [2]*Policy
	var sx *Solver
	for i, b := range []backends.Backend{bg, bx} {
		sv, err := NewSolver(m, 10, b, SolverOptions{Planner: spec.Planner})
		require.NoError(t, err)
		pols[i], err = sv.Solve([][]float64{theta}, nil)
		require.NoError(t, err)
		sx = sv
	}
	require.Equal(t, pols[0].Iterations, pols[1].Iterations)
	for i, g := range pols[0].Gain {
		assert.InDelta(t, g, pols[1].Gain[i], 1e-9*math.Max(1, math.Abs(g)), "gain %d", i)
	}
	for i, x := range pols[0].Xbar {
		assert.InDelta(t, x, pols[1].Xbar[i], 1e-9*math.Max(1, math.Abs(x)), "nominal %d", i)
	}
	thetaT := graph.NewTensor(transpose([][]float64{theta}), len(spec.Params), 1, 1)
	compiles := func(alphas []float64) int {
		before := sx.engine.Stats().Compiles
		_, _, _, err := sx.runRollout(thetaT, spec.X0, pols[1], alphas, nil)
		require.NoError(t, err)
		return sx.engine.Stats().Compiles - before
	}
	assert.Positive(t, compiles([]float64{0}), "the solve compiled no rollout of one candidate")
}

// xlaAndGo returns XLA's CPU plugin and the Go backend, and skips the test where no plugin
// is installed (make xla-cpu).
func xlaAndGo(t *testing.T) (bx, bg backends.Backend) {
	t.Helper()
	if _, err := graph.FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	bx, err := graph.NewBackend(graph.BackendXLA)
	require.NoError(t, err)
	bg, err = graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	return bx, bg
}

// TestSimChunk: on the host, 16 trials for calls of at most 16, else 256.
func TestSimChunk(t *testing.T) {
	bg, err := graph.NewBackend(graph.BackendGo) // runs on the host
	require.NoError(t, err)
	for _, c := range []struct{ M, want int }{{1, 16}, {16, 16}, {17, 256}, {250, 256}, {256, 256}, {1000, 256}} {
		assert.Equal(t, c.want, SimChunk(bg, c.M), "%d trials", c.M)
	}
}

// TestPrepareSimulation: on XLA, PrepareSimulation compiles the programs that Simulate then
// runs for the same problems, steps, trials and options, so that Simulate compiles nothing
// more, in one chunk size (20 trials, a noise-free agent) and the other (5 trials, chunks of
// 16); on the Go backend it does nothing. Skipped without a plugin.
func TestPrepareSimulation(t *testing.T) {
	bx, bg := xlaAndGo(t)
	m, spec, theta := taskDefaults(t, "pendulum")
	sym, err := models.Derive(m)
	require.NoError(t, err)
	sv, err := NewSolver(m, 10, bg, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	require.NoError(t, PrepareSimulation(m, bg, 1, 10, 20, SimOptions{}), "the Go backend: nothing to compile")
	for _, c := range []struct {
		trials      int
		temperature float64
	}{{20, 0}, {5, 1}} {
		opts := SimOptions{Observe: ObservePartial, Temperature: c.temperature}
		require.NoError(t, PrepareSimulation(m, bx, 1, 10, c.trials, opts))
		opts.Temperature = 1 // the engine a noise-free agent's simulation runs on
		compiled := simEngine(bx, sym, opts).Stats().Compiles
		assert.Positive(t, compiled, "%d trials: prepared", c.trials)
		_, err := Simulate(m, pol, [][]float64{theta}, bx, SimOptions{Observe: ObservePartial, Trials: c.trials, Seed: 3, Temperature: c.temperature})
		require.NoError(t, err)
		assert.Equal(t, compiled, simEngine(bx, sym, opts).Stats().Compiles, "%d trials: Simulate compiled nothing more", c.trials)
	}
	// a trial for each of 20 problems (PerProblem), in a chunk of 256 problems
	const P = 20
	opts := SimOptions{Observe: ObservePartial, Temperature: 1}
	require.NoError(t, PrepareProblemSimulation(m, bx, P, 10, opts))
	compiled := simEngine(bx, sym, opts).Stats().Compiles
	thetas, idx, who := make([][]float64, P), make([]int, P), make([]ProblemTrial, P)
	for p := range P {
		thetas[p], who[p] = theta, ProblemTrial{Seed: 3, Trial: p, X0: spec.X0}
	}
	opts.Trials, opts.Seed, opts.PerProblem = 1, 3, who
	_, err = Simulate(m, pol.Subset(idx), thetas, bx, opts)
	require.NoError(t, err)
	assert.Equal(t, compiled, simEngine(bx, sym, opts).Stats().Compiles, "a trial per problem: Simulate compiled nothing more")
}
