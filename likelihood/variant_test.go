package likelihood

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAgentVariant(t *testing.T) {
	for _, c := range []struct {
		name string
		want AgentVariant
		err  string
	}{
		{"ours", AgentVariant{}, ""},
		{"ours-nonoise", AgentVariant{NoPolicyNoise: true}, ""},
		{"iter3", AgentVariant{PlannerIterations: 3}, ""},
		{"iter10", AgentVariant{PlannerIterations: 10}, ""},
		{"delay1", AgentVariant{Delay: 1}, ""},
		{"nofeedforward", AgentVariant{NoFeedForward: true}, ""},
		{"iter0", AgentVariant{}, "N >= 1"},
		{"iterx", AgentVariant{}, "N >= 1"},
		{"delay2", AgentVariant{}, "unknown agent"},
		{"ref", AgentVariant{}, "unknown agent"},
		{"ours-nonoise+iter10+nofeedforward", AgentVariant{NoPolicyNoise: true, PlannerIterations: 10, NoFeedForward: true}, ""},
		{"ours-nonoise+delay1", AgentVariant{NoPolicyNoise: true, Delay: 1}, ""},
		{"iter3+iter10", AgentVariant{}, "joins nothing new"},
		{"ours+iter3", AgentVariant{}, "joins nothing new"},
		{"iter3+ref", AgentVariant{}, "unknown agent"},
	} {
		v, err := ParseAgentVariant(c.name)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, v, c.name)
		assert.Equal(t, c.name, v.String(), "the name round-trips")
	}
	vs, err := ParseAgentVariants("ours, iter3,ours-nonoise")
	require.NoError(t, err)
	assert.Equal(t, []AgentVariant{{}, {PlannerIterations: 3}, {NoPolicyNoise: true}}, vs)
	_, err = ParseAgentVariants("ours,iter3,ours")
	assert.ErrorContains(t, err, "named twice")
	assert.Equal(t, "ours-nonoise+iter3+delay1", AgentVariant{NoPolicyNoise: true, PlannerIterations: 3, Delay: 1}.String())
}

// TestSimulateVariantTrials: each agent variant simulated through the evaluator (its
// temperature a fitted parameter, 0.3 here) is the task's agent built from the control
// package's parts with that departure: the planner stopped after N iterations, no policy
// noise, a delay of one step. A planner stopped after one iteration acts differently from
// the converged one (the variant is not a no-op), and one allowed 100 iterations is ours.
func TestSimulateVariantTrials(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	e, err := New(m, b, Options{FitTemperature: true})
	require.NoError(t, err)
	const tau, trials, seed = 0.3, 3, 11
	theta := spec.Defaults()
	lengths := []int{spec.Steps, spec.Steps, spec.Steps}
	ids := []int{0, 1, 2}
	direct := func(iters int, so control.SimOptions) [][][]float64 {
		sv, err := control.NewSolver(m, spec.Steps, b, control.SolverOptions{Planner: spec.Planner})
		require.NoError(t, err)
		pol, err := sv.SolveIterations([][]float64{theta}, nil, iters)
		require.NoError(t, err)
		if so.NoFeedForward { // built by hand: the policy without its feed-forward term
			so.NoFeedForward = false
			clear(pol.Offset)
		}
		so.Observe, so.Trials, so.TrialIDs, so.Seed = control.ObservePartial, trials, ids, seed
		xs, err := control.Simulate(m, pol, [][]float64{theta}, b, so)
		require.NoError(t, err)
		return xs[0]
	}
	for _, c := range []struct {
		v    AgentVariant
		want [][][]float64
	}{
		{AgentVariant{}, direct(100, control.SimOptions{Temperature: tau})},
		{AgentVariant{PlannerIterations: 100}, direct(100, control.SimOptions{Temperature: tau})},
		{AgentVariant{PlannerIterations: 1}, direct(1, control.SimOptions{Temperature: tau})},
		{AgentVariant{NoPolicyNoise: true}, direct(100, control.SimOptions{})},
		{AgentVariant{Delay: 1}, direct(100, control.SimOptions{Temperature: tau, Delay: 1})},
		{AgentVariant{NoFeedForward: true}, direct(100, control.SimOptions{Temperature: tau, NoFeedForward: true})},
	} {
		got, err := e.SimulateVariantTrials([][]float64{append(theta[:len(theta):len(theta)], tau)}, lengths, nil, seed, c.v)
		require.NoError(t, err, c.v.String())
		for r := range trials {
			for k := range c.want[r] {
				require.InDeltaSlice(t, c.want[r][k], got[0][r][k], 1e-9, "%s trial %d step %d", c.v, r, k)
			}
		}
	}
	ours := direct(100, control.SimOptions{Temperature: tau})
	early := direct(1, control.SimOptions{Temperature: tau})
	assert.Greater(t, maxAbsDiff(ours, early), 1e-3, "one iteration of iLQG plans another control than the converged one")
	// The pendulum's motor noise grows with the torque, so its converged policy keeps a
	// feed-forward step towards the optimum of the expected cost; without it the agent acts
	// differently.
	assert.Greater(t, maxAbsDiff(ours, direct(100, control.SimOptions{Temperature: tau, NoFeedForward: true})), 1e-4, "the feed-forward term is not a no-op")
	_, err = e.SimulateVariantTrials([][]float64{append(theta[:len(theta):len(theta)], tau)}, lengths, nil, seed, AgentVariant{Delay: 2})
	assert.ErrorContains(t, err, "delay of 0 or 1")
}

func maxAbsDiff(a, b [][][]float64) float64 {
	var d float64
	for r := range a {
		for k := range a[r] {
			for i := range a[r][k] {
				d = max(d, math.Abs(a[r][k][i]-b[r][k][i]))
			}
		}
	}
	return d
}

// TestSimulateAgentFromStarts: trials simulated from their own initial states are the task's
// agent planned once from their mean initial state (meanInitial, as LinearizeILQG plans) and
// started at each (control.SimOptions.Starts); starts all at the task's x0 give what nil
// gives, to the bit.
func TestSimulateAgentFromStarts(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	e, err := New(m, b, Options{})
	require.NoError(t, err)
	theta := spec.Defaults()
	const seed = 5
	lengths := []int{spec.Steps, spec.Steps, spec.Steps}
	x0 := spec.X0
	starts := [][]float64{{x0[0] + 0.1, x0[1]}, {x0[0] - 0.05, x0[1] + 0.2}, {x0[0], x0[1] - 0.1}}
	got, err := e.SimulateAgentTrials([][]float64{theta}, lengths, starts, seed)
	require.NoError(t, err)
	sv, err := control.NewSolver(m, spec.Steps, b, control.SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	mean := []float64{x0[0] + 0.05/3, x0[1] + 0.1/3}
	pol, err := sv.Solve([][]float64{theta}, [][]float64{mean})
	require.NoError(t, err)
	want, err := control.Simulate(m, pol, [][]float64{theta}, b, control.SimOptions{Observe: control.ObservePartial,
		Trials: 3, Seed: seed, Temperature: spec.Temperature, Starts: starts})
	require.NoError(t, err)
	for r := range lengths {
		require.Len(t, got[0][r], lengths[r]+1)
		assert.Equal(t, starts[r], got[0][r][0], "trial %d starts at its own state", r)
		for k := range got[0][r] {
			require.InDeltaSlice(t, want[0][r][k], got[0][r][k], 1e-9, "trial %d step %d", r, k)
		}
	}
	plain, err := e.SimulateAgentTrials([][]float64{theta}, lengths, nil, seed)
	require.NoError(t, err)
	same, err := e.SimulateAgentTrials([][]float64{theta}, lengths, [][]float64{x0, x0, x0}, seed)
	require.NoError(t, err)
	assert.Equal(t, plain, same, "starts at the task's x0 are the default")
	assert.Greater(t, maxAbsDiff(plain[0], got[0]), 1e-3, "other starts give other trials")
	_, err = e.SimulateAgentTrials([][]float64{theta}, lengths, starts[:2], seed)
	assert.ErrorContains(t, err, "2 initial states for 3 trials")
}

// TestAgentPlansSolvedOnce: the bootstrap's five default agents and the check's, simulated at
// once at one θ (as fit does for a subject), need two iLQG solutions — to convergence and
// stopped after 10 iterations — and get each trial to the bit as an evaluator that solves for
// every simulation alone; a simulation that changes its policy (the fitted temperature's noise
// scale) leaves the kept solution as it was, so the same call twice gives the same trials.
func TestAgentPlansSolvedOnce(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	e, err := New(m, b, Options{FitTemperature: true})
	require.NoError(t, err)
	theta := append(spec.Defaults(), 0.3)
	lengths := []int{spec.Steps, spec.Steps - 5, spec.Steps}
	variants := []AgentVariant{{}, {NoPolicyNoise: true}, {PlannerIterations: 10}, {NoFeedForward: true},
		{NoPolicyNoise: true, PlannerIterations: 10, NoFeedForward: true}, {}}
	got := make([][][][][]float64, len(variants))
	errs := make([]error, len(variants))
	var wg sync.WaitGroup
	for i, v := range variants {
		wg.Go(func() { got[i], errs[i] = e.SimulateVariantTrials([][]float64{theta}, lengths, nil, uint64(7+i), v) })
	}
	wg.Wait()
	assert.Equal(t, 2, e.plans.solves, "one solve to convergence, one stopped after 10 iterations")
	for i, v := range variants {
		require.NoError(t, errs[i], v.String())
		alone, err := New(m, b, Options{FitTemperature: true})
		require.NoError(t, err)
		want, err := alone.SimulateVariantTrials([][]float64{theta}, lengths, nil, uint64(7+i), v)
		require.NoError(t, err)
		assert.Equal(t, want, got[i], "%s: as solved alone", v)
		again, err := e.SimulateVariantTrials([][]float64{theta}, lengths, nil, uint64(7+i), v)
		require.NoError(t, err)
		assert.Equal(t, want, again, "%s: the kept solution unchanged by the simulations", v)
	}
	assert.Equal(t, 2, e.plans.solves)
	other := slices.Clone(theta)
	other[0] *= 1.5
	_, err = e.SimulateVariantTrials([][]float64{other}, lengths, nil, 7, AgentVariant{})
	require.NoError(t, err)
	assert.Equal(t, 3, e.plans.solves, "another θ is another problem")
}
