package control

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulateTask solves the task's agent at theta (natural units) and simulates trials.
func simulateTask(t *testing.T, name string, planner models.Planner, theta []float64, observe Observe, trials int, seed uint64) (*Policy, [][][]float64) {
	t.Helper()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get(name)
	require.NoError(t, err)
	spec := m.Spec()
	if theta == nil {
		theta = spec.Defaults()
	}
	if planner == "" {
		planner = spec.Planner
	}
	sv, err := NewSolver(m, spec.Steps, b, SolverOptions{Planner: planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	xs, err := Simulate(m, pol, [][]float64{theta}, b, SimOptions{Observe: observe, Trials: trials, Seed: seed, Temperature: spec.Temperature})
	require.NoError(t, err)
	return pol, xs[0]
}

func finalMean(xs [][][]float64) []float64 {
	T := len(xs[0]) - 1
	mean := make([]float64, len(xs[0][0]))
	for _, tr := range xs {
		for i, v := range tr[T] {
			mean[i] += v / float64(len(xs))
		}
	}
	return mean
}

// handPosition is the reaching task's forward kinematics, written here independently.
func handPosition(x []float64) (float64, float64) {
	const l1, l2 = 0.3, 0.33
	return l1*math.Cos(x[0]) + l2*math.Cos(x[0]+x[1]), l1*math.Sin(x[0]) + l2*math.Sin(x[0]+x[1])
}

func TestReachingHitsTarget(t *testing.T) {
	spread := func(motorNoise float64) (meanErr, sd float64) {
		theta := []float64{1e-4, 1e-2, motorNoise, 1}
		_, xs := simulateTask(t, "reaching", "", theta, ObservePartial, 50, 1)
		var ex, ey []float64
		for _, tr := range xs {
			hx, hy := handPosition(tr[len(tr)-1])
			ex, ey = append(ex, hx), append(ey, hy)
		}
		mx, my := mean(ex), mean(ey)
		return math.Hypot(mx-0.05, my-0.5), math.Sqrt(variance(ex) + variance(ey))
	}
	errLow, sdLow := spread(0.1)
	assert.Less(t, errLow, 0.01, "mean final hand position within 1 cm of the target")
	_, sdHigh := spread(0.4)
	assert.Greater(t, sdHigh, 1.5*sdLow, "the spread of final positions grows with motor noise (%g vs %g)", sdHigh, sdLow)
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func variance(v []float64) float64 {
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v)-1)
}

func TestTasksReachTheirGoals(t *testing.T) {
	t.Run("navigation", func(t *testing.T) {
		_, xs := simulateTask(t, "navigation", "", nil, ObservePartial, 50, 2)
		f := finalMean(xs)
		assert.Less(t, math.Hypot(f[0]-1, f[1]-1), 0.1, "navigation ends within 0.1 of the target: %v", f)
	})
	t.Run("pendulum", func(t *testing.T) {
		_, xs := simulateTask(t, "pendulum", "", nil, ObservePartial, 50, 3)
		total := 0.0
		for _, tr := range xs {
			total += math.Abs(math.Remainder(tr[len(tr)-1][0], 2*math.Pi))
		}
		assert.Less(t, total/float64(len(xs)), 0.2, "pendulum swings up")
	})
	t.Run("cartpole", func(t *testing.T) {
		_, xs := simulateTask(t, "cartpole", "", nil, ObservePartial, 20, 4)
		f := finalMean(xs)
		assert.Less(t, math.Abs(f[0]), 0.1, "cart near the origin: %v", f)
		assert.Less(t, math.Abs(math.Remainder(f[1], 2*math.Pi)), 0.1, "pole upright: %v", f)
	})
	t.Run("fully observable", func(t *testing.T) {
		_, xs := simulateTask(t, "navigation", "", nil, ObserveFull, 20, 5)
		f := finalMean(xs)
		assert.Less(t, math.Hypot(f[0]-1, f[1]-1), 0.1, "%v", f)
	})
}

// TestILQGCostDecreases checks that the nominal cost never increases between iterations and
// that the solver converges, for every task and both planners, batched over parameter vectors.
func TestILQGCostDecreases(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, name := range models.Names() {
		m, err := models.Get(name)
		require.NoError(t, err)
		spec := m.Spec()
		thetas := [][]float64{spec.Defaults()}
		alt := spec.Defaults()
		for i, p := range spec.Params {
			if p.Scale == models.Log10Scale {
				alt[i] = math.Sqrt(p.Lo * p.Hi)
			}
		}
		thetas = append(thetas, alt)
		for _, planner := range []models.Planner{models.PlannerFull, models.PlannerPartial} {
			steps := spec.Steps
			if steps > 60 {
				steps = 60 // keep the test fast
			}
			sv, err := NewSolver(m, steps, b, SolverOptions{Planner: planner})
			require.NoError(t, err)
			pol, err := sv.Solve(thetas, nil)
			require.NoError(t, err, "%s/%s", name, planner)
			for p := range thetas {
				for it := 1; it < len(pol.CostTrace); it++ {
					assert.LessOrEqual(t, pol.CostTrace[it][p], pol.CostTrace[it-1][p], "%s/%s problem %d iteration %d", name, planner, p, it)
				}
				assert.True(t, pol.Converged[p], "%s/%s problem %d converged", name, planner, p)
			}
		}
	}
}

// TestSimulationReproducible checks that the same seed gives the same trajectories and that
// a trial does not depend on how many others are simulated with it.
func TestSimulationReproducible(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	theta := [][]float64{m.Spec().Defaults()}
	sv, err := NewSolver(m, 20, b, SolverOptions{})
	require.NoError(t, err)
	pol, err := sv.Solve(theta, nil)
	require.NoError(t, err)
	a, err := Simulate(m, pol, theta, b, SimOptions{Trials: 3, Seed: 9})
	require.NoError(t, err)
	c, err := Simulate(m, pol, theta, b, SimOptions{Trials: 5, Seed: 9})
	require.NoError(t, err)
	d, err := Simulate(m, pol, theta, b, SimOptions{Trials: 3, Seed: 10})
	require.NoError(t, err)
	assert.Equal(t, a[0], c[0][:3])
	assert.NotEqual(t, a[0], d[0])
	_, err = Simulate(m, pol, theta, b, SimOptions{Trials: 0})
	assert.ErrorContains(t, err, "trials")
	_, err = Simulate(m, pol, theta, b, SimOptions{Trials: 1, Observe: "sideways"})
	assert.ErrorContains(t, err, "observation mode")
}

// TestLightDarkInformationSeeking: the partially observable planner detours towards the light
// (x₁ = 5) to reduce its uncertainty before reaching the target at the origin; the fully
// observable planner acting on its belief goes straight, unless it has a preference for the
// light (paper App. I.4).
func TestLightDarkInformationSeeking(t *testing.T) {
	maxMeanX := func(planner models.Planner, lightCost float64) (float64, []float64) {
		_, xs := simulateTask(t, "lightdark", planner, []float64{0, lightCost, 0.2}, ObservePartial, 50, 6)
		best := math.Inf(-1)
		for step := range xs[0] {
			m := 0.0
			for _, tr := range xs {
				m += tr[step][0] / float64(len(xs))
			}
			best = math.Max(best, m)
		}
		return best, finalMean(xs)
	}
	partial, final := maxMeanX(models.PlannerPartial, 0)
	assert.Greater(t, partial, 3.5, "partially observable iLQG moves towards the light")
	assert.Less(t, math.Hypot(final[0], final[1]), 0.2, "and then to the target: %v", final)
	full, _ := maxMeanX(models.PlannerFull, 0)
	assert.Less(t, full, 2.1, "fully observable iLQG goes straight to the target")
	fullLight, _ := maxMeanX(models.PlannerFull, 1)
	assert.Greater(t, fullLight, 3.5, "unless it prefers the light")
}

// TestSolverLoopedEqualsUnrolled: the iLQG solution with the looped rollouts and backward passes
// equals the unrolled one, for both planners.
func TestSolverLoopedEqualsUnrolled(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, name := range []string{"reaching", "lightdark"} {
		m, _, theta := taskDefaults(t, name)
		for _, planner := range []models.Planner{models.PlannerFull, models.PlannerPartial} {
			var pols [2]*Policy
			for i, form := range []string{"unrolled", "looped"} {
				sv, err := NewSolver(m, 10, b, SolverOptions{Planner: planner, Form: form, MaxIter: 5})
				require.NoError(t, err)
				pols[i], err = sv.Solve([][]float64{theta, theta}, nil)
				require.NoError(t, err)
				if form == "looped" {
					assert.Zero(t, sv.engine.Stats().Late, "%s %s: each flow's dry run compiled its programs", name, planner)
				}
			}
			assert.InDeltaSlice(t, pols[0].Gain, pols[1].Gain, 1e-9, "%s %s gains", name, planner)
			assert.InDeltaSlice(t, pols[0].Offset, pols[1].Offset, 1e-9, "%s %s offsets", name, planner)
			assert.InDeltaSlice(t, pols[0].Xbar, pols[1].Xbar, 1e-9, "%s %s nominal", name, planner)
			assert.InDeltaSlice(t, pols[0].Cost, pols[1].Cost, 1e-9, "%s %s cost", name, planner)
			assert.Equal(t, pols[0].Iterations, pols[1].Iterations)
		}
	}
}

// TestSimulateLoopedEqualsUnrolled: the looped simulation gives the unrolled one's states,
// with and without observation noise and policy noise.
func TestSimulateLoopedEqualsUnrolled(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, name := range []string{"reaching", "lightdark"} {
		m, spec, theta := taskDefaults(t, name)
		sv, err := NewSolver(m, 8, b, SolverOptions{Planner: spec.Planner, MaxIter: 5})
		require.NoError(t, err)
		pol, err := sv.Solve([][]float64{theta}, nil)
		require.NoError(t, err)
		for _, observe := range []Observe{ObservePartial, ObserveFull} {
			var xs [2][][][][]float64
			for i, form := range []string{"unrolled", "looped"} {
				xs[i], err = Simulate(m, pol, [][]float64{theta}, b, SimOptions{Observe: observe, Trials: 3, Seed: 4, Temperature: spec.Temperature, Form: form})
				require.NoError(t, err)
			}
			for r := range xs[0][0] {
				for tt := range xs[0][0][r] {
					assert.InDeltaSlice(t, xs[0][0][r][tt], xs[1][0][r][tt], 1e-12, "%s %s trial %d t=%d", name, observe, r, tt)
				}
			}
		}
	}
}

// taskDefaults returns the task, its spec and its default parameters.
func taskDefaults(t *testing.T, name string) (models.Model, models.Spec, []float64) {
	t.Helper()
	m, err := models.Get(name)
	require.NoError(t, err)
	spec := m.Spec()
	theta := make([]float64, len(spec.Params))
	for i, p := range spec.Params {
		theta[i] = p.Default
	}
	return m, spec, theta
}

// TestSimulateDelay: with a one-step sensorimotor delay the agent senses x_{t−1} at step t
// (x_0 at t = 0): its first step is the undelayed agent's, later steps differ, and the
// unrolled and looped forms agree.
func TestSimulateDelay(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	sv, err := NewSolver(m, 8, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	for _, observe := range []Observe{ObservePartial, ObserveFull} {
		opts := SimOptions{Observe: observe, Trials: 2, Seed: 3, Temperature: spec.Temperature}
		now, err := Simulate(m, pol, [][]float64{theta}, b, opts)
		require.NoError(t, err)
		opts.Delay = 1
		var late [2][][][][]float64
		for i, form := range []string{"unrolled", "looped"} {
			opts.Form = form
			late[i], err = Simulate(m, pol, [][]float64{theta}, b, opts)
			require.NoError(t, err)
		}
		for r := range now[0] {
			assert.InDeltaSlice(t, now[0][r][1], late[0][0][r][1], 1e-12, "%s trial %d: x_1 does not depend on the delay", observe, r)
			diff := 0.0
			for tt := 2; tt <= 8; tt++ {
				for i := range now[0][r][tt] {
					diff = max(diff, math.Abs(now[0][r][tt][i]-late[0][0][r][tt][i]))
				}
				assert.InDeltaSlice(t, late[0][0][r][tt], late[1][0][r][tt], 1e-12, "%s trial %d t=%d: unrolled vs looped", observe, r, tt)
			}
			assert.Greater(t, diff, 1e-6, "%s trial %d: the delay changes the trajectory", observe, r)
		}
	}
	_, err = Simulate(m, pol, [][]float64{theta}, b, SimOptions{Trials: 1, Delay: 2})
	assert.Error(t, err)
}
