package likelihood

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulateTrials simulates trials of the task's default agent for steps steps.
func simulateTrials(t testing.TB, m models.Model, observe control.Observe, theta []float64, trials, steps int, seed uint64) [][][]float64 {
	return simulateTrialsWith(t, m, m.Spec().Planner, observe, theta, trials, steps, seed)
}

// simulateTrialsWith is simulateTrials with the agent's planner.
func simulateTrialsWith(t testing.TB, m models.Model, planner models.Planner, observe control.Observe, theta []float64, trials, steps int, seed uint64) [][][]float64 {
	t.Helper()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	sv, err := control.NewSolver(m, steps, b, control.SolverOptions{Planner: planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	xs, err := control.Simulate(m, pol, [][]float64{theta}, b, control.SimOptions{Observe: observe, Trials: trials, Seed: seed})
	require.NoError(t, err)
	return xs[0]
}

// goFixture returns the Go backend, the model of task and trials of the given number and
// steps simulated from its default parameters, partially observed, with seed.
func goFixture(t *testing.T, task string, trials, steps int, seed uint64) (backends.Backend, models.Model, [][][]float64) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get(task)
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	return b, m, simulateTrials(t, m, control.ObservePartial, natural, trials, steps, seed)
}

// testTheta returns the task's defaults (Spec.ScalableDefaults).
func testTheta(spec models.Spec) (natural, scaled []float64) { return spec.ScalableDefaults() }

// withTemperature returns testTheta's θ in fitting scale, with a fitted temperature (at 10×
// the task's, so that its derivative is not taken at a special point) appended when opts fit it.
func withTemperature(spec models.Spec, opts Options) []float64 {
	_, theta := testTheta(spec)
	if opts.FitTemperature {
		theta = append(theta, math.Log10(10*spec.Temperature))
	}
	return theta
}

// TestFittedTemperatureEqualsFixed: with the temperature a fitted parameter, the likelihood at
// τ equals the likelihood with τ fixed, for both observabilities and the baseline, and τ
// appears in the evaluator's spec as the last parameter.
func TestFittedTemperatureEqualsFixed(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, theta := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 3, 8, 5)
	for _, opts := range []Options{{Method: Ours, Observe: control.ObservePartial}, {Method: Ours, Observe: control.ObserveFull}, {Method: MCEBaseline}} {
		for _, tau := range []float64{1e-3, 0.05} {
			fixed := opts
			fixed.Temperature = tau
			ef, err := New(m, b, fixed)
			require.NoError(t, err)
			fitted := opts
			fitted.FitTemperature = true
			e, err := New(m, b, fitted)
			require.NoError(t, err)
			params := e.Spec().Params
			require.Len(t, params, len(theta)+1)
			assert.Equal(t, "temperature", params[len(theta)].Name)
			assert.Len(t, m.Spec().Params, len(theta), "the model's spec is not changed")
			d, err := e.Prepare([][][][]float64{trials}, 0)
			require.NoError(t, err)
			want, _, err := ef.Eval(d, [][]float64{theta})
			require.NoError(t, err)
			got, grad, err := e.Eval(d, [][]float64{append(slices.Clone(theta), math.Log10(tau))})
			require.NoError(t, err)
			assert.InEpsilon(t, want[0], got[0], 1e-12, "%+v τ=%g", opts, tau)
			assert.NotZero(t, grad[0][len(theta)], "the likelihood depends on τ")
		}
	}
	_, err = New(m, b, Options{FitTemperature: true, NoPolicyNoise: true})
	assert.Error(t, err, "fitted and no policy noise contradict")
}

// replicate returns a policy with P copies of problem 0 of pol.
func replicate(pol *control.Policy, P int) *control.Policy {
	rep := func(src []float64) []float64 {
		rows := len(src) / pol.Problems
		out := make([]float64, rows*P)
		for r := range rows {
			for p := range P {
				out[r*P+p] = src[r*pol.Problems]
			}
		}
		return out
	}
	return &control.Policy{Problems: P, Steps: pol.Steps, States: pol.States, Controls: pol.Controls,
		Xbar: rep(pol.Xbar), Ubar: rep(pol.Ubar), Gain: rep(pol.Gain), Offset: rep(pol.Offset), Hessian: rep(pol.Hessian)}
}

// TestGradientsMatchFiniteDifferences compares the exact gradient from the graph with
// fourth-order central differences of the log-likelihood for every task, both observabilities, both methods and
// all linearizations, with the agent's filter tracked (default) and nominal. With LinearizeILQG the nominal trajectory is held at its value at θ,
// which is what the gradient (through the last iteration, App. H.1) differentiates.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	const steps, trials, h = 12, 3, 1e-4
	configs := []Options{
		{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeData},
		{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeData, NominalFilter: true},
		{Method: Ours, Observe: control.ObserveFull, Linearize: LinearizeData},
		{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeMean},
		{Method: MCEBaseline, Linearize: LinearizeData},
		{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeILQG},
		{Method: Ours, Observe: control.ObserveFull, Linearize: LinearizeILQG},
		{Method: MCEBaseline, Linearize: LinearizeILQG},
		{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeData, FitTemperature: true},
		{Method: Ours, Observe: control.ObserveFull, Linearize: LinearizeData, FitTemperature: true},
		{Method: MCEBaseline, Linearize: LinearizeData, FitTemperature: true},
	}
	// Agents that see before they act (models.SeeThenAct): signal-dependent motor noise
	// (reaching), non-linear dynamics (pendulum) and a state-dependent observation noise
	// (light-dark, with the fully observable planner and with its own, the partially
	// observable planner).
	for _, name := range []string{"reaching", "navigation", "pendulum", "cartpole", "lightdark", "linear",
		"reaching+see", "pendulum+see", "lightdark+see", "lightdark+see+partial"} {
		base, variant, _ := strings.Cut(name, "+")
		see := variant != ""
		m, err := models.Get(base)
		require.NoError(t, err)
		planner := m.Spec().Planner
		if see {
			m, planner = models.WithTiming(m, models.SeeThenAct), models.PlannerFull
			if variant == "see+partial" {
				planner = models.PlannerPartial
			}
		}
		spec := m.Spec()
		natural, _ := testTheta(spec)
		data := map[control.Observe][][][]float64{
			control.ObservePartial: simulateTrialsWith(t, m, planner, control.ObservePartial, natural, trials, steps, 3),
			control.ObserveFull:    simulateTrialsWith(t, m, planner, control.ObserveFull, natural, trials, steps, 3),
		}
		// Cart-pole's position and angle carry no noise, so its state covariance is nearly
		// singular but for the jitter; with its own (1e-9) the log-likelihood carries about
		// 2e-9 nats of round-off (1e-12 under 1e-6; measured by steps of 1e-13 in θ), which
		// puts the differences up to 4e-5 off at h = 1e-4 (about 1.5·2e-9/h), not shrinking
		// with h. So every cart-pole case is held to 1e-6 under the reference's jitter (the
		// same code; the jitter is a constant) and, under its own, to 1e-4 relative or 1e-4
		// absolute, the round-off's bound.
		all := configs
		if base == "cartpole" {
			all = nil
			for _, opts := range configs {
				tight := opts
				tight.Jitter = DefaultJitter
				all = append(all, tight, opts)
			}
		}
		for _, opts := range all {
			if see && (opts.Method == MCEBaseline || opts.Observe == control.ObserveFull) {
				continue // no observation model: the timing does not enter
			}
			opts.Planner = planner
			observe := opts.Observe
			if observe == "" {
				observe = control.ObservePartial
			}
			rel, floor := 1e-6, 1e-7
			if base == "cartpole" && opts.Jitter == 0 {
				rel, floor = 1e-4, 1e-4
			}
			t.Run(fmt.Sprintf("%s/%s/%s/%s/fit-temperature=%v/nominal-filter=%v/jitter=%g", name, opts.Method, observe, opts.Linearize, opts.FitTemperature, opts.NominalFilter, opts.Jitter), func(t *testing.T) {
				e, err := New(m, b, opts)
				require.NoError(t, err)
				spec := e.Spec()
				theta := withTemperature(m.Spec(), opts)
				p := len(theta)
				// Rows: θ, then θ + s·h·e_i for s in (2, 1, −1, −2) and each parameter i.
				stencil := []float64{2, 1, -1, -2}
				rows := make([][][][]float64, 1+len(stencil)*p)
				thetas := make([][]float64, len(rows))
				for r := range rows {
					rows[r] = data[observe]
					thetas[r] = append([]float64(nil), theta...)
					if r > 0 {
						i, s := (r-1)/len(stencil), stencil[(r-1)%len(stencil)]
						thetas[r][i] += s * h
					}
				}
				d, err := e.Prepare(rows, 0)
				require.NoError(t, err)
				var nominal *control.Policy
				if opts.Linearize == LinearizeILQG {
					one, err := e.Prepare(rows[:1], 0)
					require.NoError(t, err)
					pol, err := e.Nominal(one, thetas[:1])
					require.NoError(t, err)
					nominal = replicate(pol, len(rows))
				}
				ll, grad, err := e.EvalAt(d, thetas, nominal)
				require.NoError(t, err)
				require.False(t, math.IsInf(ll[0], 0), "log-likelihood not finite")
				scale := 0.0
				fd := make([]float64, p)
				for i := range p {
					f := ll[1+4*i : 5+4*i] // f(θ+2h), f(θ+h), f(θ−h), f(θ−2h)
					fd[i] = (-f[0] + 8*f[1] - 8*f[2] + f[3]) / (12 * h)
					scale = math.Max(scale, math.Abs(fd[i]))
				}
				for i := range p {
					tol := rel * math.Max(math.Abs(fd[i]), 1e-3*scale)
					assert.InDelta(t, fd[i], grad[0][i], math.Max(tol, floor),
						"d loglik / d %s: exact %g, finite difference %g (loglik %g)", spec.Params[i].Name, grad[0][i], fd[i], ll[0])
				}
			})
		}
	}
}

// TestMeanLinearizationOfOneTrial checks LinearizeMean against LinearizeData where they must
// agree: the mean of a single trial is that trial. With several trials they differ, and the
// mean linearization gives every trial of a row the same control law.
func TestMeanLinearizationOfOneTrial(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("reaching")
	require.NoError(t, err)
	natural, theta := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 3, 12, 5)
	eval := func(lin Linearization, rows [][][][]float64) []float64 {
		e, err := New(m, b, Options{Linearize: lin})
		require.NoError(t, err)
		d, err := e.Prepare(rows, 0)
		require.NoError(t, err)
		ll, _, err := e.Eval(d, [][]float64{theta, theta, theta})
		require.NoError(t, err)
		return ll
	}
	one := [][][][]float64{trials[:1], trials[1:2], trials[2:3]}
	data, mean := eval(LinearizeData, one), eval(LinearizeMean, one)
	for r := range data {
		assert.InEpsilon(t, data[r], mean[r], 1e-12, "row %d", r)
	}
	all := [][][][]float64{trials, trials, trials}
	data, mean = eval(LinearizeData, all), eval(LinearizeMean, all)
	assert.Greater(t, math.Abs(data[0]-mean[0]), 1e-6*math.Abs(data[0]))
}
