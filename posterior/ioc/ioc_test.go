package ioc

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulate returns trials of the linear task's agent at its default parameters.
func simulate(t testing.TB, trials, steps int, seed uint64) [][][]float64 {
	t.Helper()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	theta := [][]float64{spec.Defaults()}
	sv, err := control.NewSolver(m, steps, b, control.SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve(theta, nil)
	require.NoError(t, err)
	xs, err := control.Simulate(m, pol, theta, b, control.SimOptions{Trials: trials, Seed: seed, Temperature: spec.Temperature})
	require.NoError(t, err)
	return xs[0]
}

func newEvaluator(t testing.TB, opts likelihood.Options) *likelihood.Evaluator {
	t.Helper()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("linear")
	require.NoError(t, err)
	e, err := likelihood.New(m, b, opts)
	require.NoError(t, err)
	return e
}

func sampleAll(t testing.TB, s *Sampler, subjects []fit.Subject) map[string]Result {
	t.Helper()
	out := map[string]Result{}
	require.NoError(t, s.Sample(context.Background(), subjects, func(rs []Result) error {
		for _, r := range rs {
			out[r.Subject] = r
		}
		return nil
	}))
	return out
}

// exactPosterior is a 1-D posterior density tabulated on a grid.
type exactPosterior struct {
	x, p, cdf []float64
}

// quadrature returns the posterior of parameter k (of the full vector θ in fitting scale, the
// others at base) on [lo, hi] with a uniform prior, from the likelihood on a grid: a coarse
// grid over the box finds where the posterior lives (log density within 40 of its maximum),
// a fine grid of n points there tabulates it, normalized by the trapezoid rule.
func quadrature(t *testing.T, e *likelihood.Evaluator, trials [][][]float64, base []float64, k int, lo, hi float64, n int) exactPosterior {
	return quadratureMapped(t, e, trials, base, k, lo, hi, n, nil)
}

// quadratureMapped is quadrature of the likelihood at to(x) instead of x (nil: x).
func quadratureMapped(t *testing.T, e *likelihood.Evaluator, trials [][][]float64, base []float64, k int, lo, hi float64, n int, to func(float64) float64) exactPosterior {
	t.Helper()
	eval := func(x []float64) []float64 {
		rows := make([][][][]float64, len(x))
		thetas := make([][]float64, len(x))
		for i, v := range x {
			th := append([]float64(nil), base...)
			th[k] = v
			if to != nil {
				th[k] = to(v)
			}
			rows[i], thetas[i] = trials, th
		}
		ll, _, err := e.EvalRows(rows, thetas, likelihood.Batching{})
		require.NoError(t, err)
		return ll
	}
	grid := func(a, b float64, n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = a + (b-a)*float64(i)/float64(n-1)
		}
		return x
	}
	coarse := grid(lo, hi, 401)
	ll := eval(coarse)
	best := math.Inf(-1)
	for _, v := range ll {
		best = math.Max(best, v)
	}
	first, last := len(ll), -1
	for i, v := range ll {
		if v > best-40 {
			first, last = min(first, i), max(last, i)
		}
	}
	a, b := coarse[max(first-1, 0)], coarse[min(last+1, len(coarse)-1)]
	var q exactPosterior
	q.x = grid(a, b, n)
	ll = eval(q.x)
	best = math.Inf(-1)
	for _, v := range ll {
		best = math.Max(best, v)
	}
	q.p = make([]float64, n)
	for i, v := range ll {
		q.p[i] = math.Exp(v - best)
	}
	q.cdf = make([]float64, n)
	for i := 1; i < n; i++ {
		q.cdf[i] = q.cdf[i-1] + 0.5*(q.p[i]+q.p[i-1])*(q.x[i]-q.x[i-1])
	}
	z := q.cdf[n-1]
	for i := range q.p {
		q.p[i] /= z
		q.cdf[i] /= z
	}
	require.Greater(t, n, 20)
	return q
}

// moment returns ∫ f(x) p(x) dx by the trapezoid rule.
func (q exactPosterior) moment(f func(float64) float64) float64 {
	var s float64
	for i := 1; i < len(q.x); i++ {
		s += 0.5 * (f(q.x[i])*q.p[i] + f(q.x[i-1])*q.p[i-1]) * (q.x[i] - q.x[i-1])
	}
	return s
}

// quantile returns the p-quantile and the density there, the CDF interpolated linearly.
func (q exactPosterior) quantile(p float64) (float64, float64) {
	i := sort.SearchFloat64s(q.cdf, p)
	i = min(max(i, 1), len(q.x)-1)
	f := (p - q.cdf[i-1]) / (q.cdf[i] - q.cdf[i-1])
	return q.x[i-1] + f*(q.x[i]-q.x[i-1]), q.p[i-1] + f*(q.p[i]-q.p[i-1])
}

// within requires |got − want| ≤ k·se.
func within(t *testing.T, what string, got, want, se, k float64) {
	t.Helper()
	assert.LessOrEqualf(t, math.Abs(got-want), k*se, "%s: got %.5g, want %.5g ± %g·%.3g", what, got, want, k, se)
}

// TestLinearPosteriorAgainstQuadrature samples the posterior of the linear task's action cost
// (log10 scale, uniform prior on its box, the other parameters fixed at their true values;
// the likelihood unadjusted) for two subjects sampled together, and checks its mean, sd and 5/50/95 % quantiles against the
// exact posterior by quadrature of the likelihood, within Monte-Carlo error.
func TestLinearPosteriorAgainstQuadrature(t *testing.T) {
	const trials, steps = 8, 10
	subjects := []fit.Subject{
		{ID: "a", Trials: simulate(t, trials, steps, 3)},
		{ID: "b", Trials: simulate(t, trials, steps, 4)},
	}
	e := newEvaluator(t, likelihood.Options{})
	spec := e.Spec()
	s, err := New(e, Options{Chains: 4, Warmup: 250, Draws: 250, Seed: 5, Adjust: AdjustNone,
		Fix: map[string]float64{"motor_noise": 0.05, "obs_noise": 0.2}})
	require.NoError(t, err)
	require.Equal(t, []string{"action_cost"}, s.Selection().Names())
	calls := 0
	var last Progress
	s.SetProgress(func(p Progress) { calls++; last = p })
	chainEvals := 0
	res := sampleAll(t, s, subjects)
	require.Len(t, res, 2)
	lo, hi := s.Selection().Bounds()
	p := spec.Params[0]
	for _, sub := range subjects {
		r := res[sub.ID]
		require.Empty(t, r.Err)
		assert.Equal(t, 2, r.Together, "both subjects in one run")
		exact := quadrature(t, e, sub.Trials, s.Selection().Full([]float64{0}), 0, lo[0], hi[0], 1201)
		mean := exact.moment(func(x float64) float64 { return x })
		sd := math.Sqrt(exact.moment(func(x float64) float64 { return (x - mean) * (x - mean) }))
		sum, err := posterior.SummarizeChains(r.Chains) // fitting scale
		require.NoError(t, err)
		got := sum[0]
		t.Logf("subject %s: exact mean %.4f sd %.4f; sampled %.4f, %.4f; R-hat %.4f, ESS bulk %.0f, tail %.0f",
			sub.ID, mean, sd, got.Mean, got.SD, got.RHat, got.ESSBulk, got.ESSTail)
		assert.Less(t, got.RHat, 1.02)
		assert.Greater(t, got.ESSBulk, 200.0)
		within(t, "mean", got.Mean, mean, sd/math.Sqrt(got.ESSBulk), 4)
		within(t, "sd", got.SD, sd, sd/math.Sqrt(2*got.ESSBulk), 4)
		for _, q := range []struct{ p, got, natural float64 }{{0.05, got.Q5, r.Summary[0].Q5},
			{0.5, got.Q50, r.Summary[0].Q50}, {0.95, got.Q95, r.Summary[0].Q95}} {
			want, density := exact.quantile(q.p)
			se := math.Sqrt(q.p*(1-q.p)/got.ESSTail) / density
			within(t, "quantile", q.got, want, se, 4)
			within(t, "quantile in natural units", p.ToScale(q.natural), want, se, 4)
		}
		// The summary in natural units: the mean of 10^x, not 10^mean.
		natMean := exact.moment(func(x float64) float64 { return p.FromScale(x) })
		natSD := math.Sqrt(exact.moment(func(x float64) float64 { return math.Pow(p.FromScale(x)-natMean, 2) }))
		within(t, "natural mean", r.Summary[0].Mean, natMean, natSD/math.Sqrt(got.ESSBulk), 4)
		assert.InDelta(t, got.ESSBulk, r.Summary[0].ESSBulk, 1e-9, "the bulk ESS does not depend on the scale")
		assert.InDelta(t, got.RHat, r.Summary[0].RHat, 0.01)
		assert.Len(t, r.EBFMI, 4)
		// Every leapfrog step of a chain was a call of its own, shared with the other chains.
		for _, c := range r.Chains {
			chainEvals += c.Evaluations
			steps := 0
			for _, n := range c.NLeapfrog {
				steps += n
			}
			assert.LessOrEqual(t, steps, last.Calls, "a chain's draws' leapfrog steps, each in its own call")
		}
	}
	assert.Positive(t, calls)
	assert.LessOrEqual(t, last.Calls, chainEvals)
	assert.Less(t, chainEvals, 8*last.Calls, "8 chains at most in a call, and some wait")
}

// TestSampleTogetherOrAlone: a subject's draws depend on the seed and its ID only, not on the
// subjects it is sampled with; chains started at a fit start near it.
func TestSampleTogetherOrAlone(t *testing.T) {
	subjects := []fit.Subject{
		{ID: "a", Trials: simulate(t, 4, 8, 1)},
		{ID: "b", Trials: simulate(t, 4, 8, 2)},
	}
	e := newEvaluator(t, likelihood.Options{})
	opts := Options{Chains: 2, Warmup: 30, Draws: 20, Seed: 9, Infer: []string{"action_cost", "motor_noise"}}
	s, err := New(e, opts)
	require.NoError(t, err)
	together := sampleAll(t, s, subjects)
	opts.Together = 1
	s, err = New(e, opts)
	require.NoError(t, err)
	alone := sampleAll(t, s, subjects)
	for _, id := range []string{"a", "b"} {
		assert.Equal(t, 2, together[id].Together)
		assert.Equal(t, 1, alone[id].Together)
		require.Len(t, alone[id].Chains, 2)
		for c := range 2 {
			assert.Equal(t, together[id].Chains[c].Scaled, alone[id].Chains[c].Scaled, "subject %s chain %d", id, c)
		}
	}
	assert.NotEqual(t, together["a"].Chains[0].Scaled, together["b"].Chains[0].Scaled)

	// Started at an estimate, without warm-up: the first draws are near it.
	opts.Warmup, opts.Draws = 0, 2
	opts.Init = map[string]Estimate{"a": {Scaled: map[string]float64{"action_cost": -1, "motor_noise": -1.3},
		StdErr: map[string]float64{"action_cost": 1e-3}}}
	s, err = New(e, opts)
	require.NoError(t, err)
	r := sampleAll(t, s, subjects[:1])["a"]
	require.Empty(t, r.Err)
	for _, c := range r.Chains {
		assert.InDelta(t, -1, c.Scaled[0][0], 1, "chain starts near the estimate")
	}
	err = s.Sample(context.Background(), subjects[1:], func([]Result) error { return nil })
	assert.ErrorContains(t, err, "no initial estimate for subject b")
}

func TestNewErrors(t *testing.T) {
	e := newEvaluator(t, likelihood.Options{})
	ok := Options{Chains: 1, Draws: 1}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		msg  string
	}{
		{"chains", func(o *Options) { o.Chains = 0 }, "--chains must be >= 1"},
		{"draws", func(o *Options) { o.Draws = 0 }, "--draws must be >= 1"},
		{"warmup", func(o *Options) { o.Warmup = -1 }, "--warmup must be >= 0"},
		{"target accept", func(o *Options) { o.TargetAccept = 1 }, "--target-accept"},
		{"prior on unknown", func(o *Options) { o.Priors = map[string]posterior.Prior{"noise": {SD: 1}} }, `has no parameter "noise"`},
		{"prior on fixed", func(o *Options) {
			o.Fix = map[string]float64{"obs_noise": 0.2}
			o.Priors = map[string]posterior.Prior{"obs_noise": {SD: 1}}
		}, "--prior on obs_noise, which is not sampled"},
		{"prior sd", func(o *Options) { o.Priors = map[string]posterior.Prior{"obs_noise": {SD: -1}} }, "finite sd > 0"},
		{"nothing to sample", func(o *Options) {
			o.Fix = map[string]float64{"action_cost": 0.1, "motor_noise": 0.05, "obs_noise": 0.2}
		},
			"no parameter left to sample"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			_, err := New(e, o)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestParsePriors(t *testing.T) {
	p, err := ParsePriors(" action_cost=normal(-1, 0.5),obs_noise=uniform , motor_noise=normal(-1.3,2e-1)")
	require.NoError(t, err)
	assert.Equal(t, map[string]posterior.Prior{"action_cost": {Mu: -1, SD: 0.5}, "obs_noise": {},
		"motor_noise": {Mu: -1.3, SD: 0.2}}, p)
	assert.Equal(t, "normal(-1,0.5)", FormatPrior(p["action_cost"]))
	assert.Equal(t, "uniform", FormatPrior(p["obs_noise"]))
	p, err = ParsePriors("")
	require.NoError(t, err)
	assert.Empty(t, p)
	for _, tc := range []struct{ in, msg string }{
		{"a=cauchy(0,1)", `unknown prior family "cauchy"`},
		{"a=normal(0,0)", "sd must be a finite number > 0"},
		{"a=normal(0,-1)", "sd must be a finite number > 0"},
		{"a=normal(NaN,1)", "mean must be finite"},
		{"a=normal(0,Inf)", "sd must be a finite number > 0"},
		{"a=normal(0)", "normal takes two numbers"},
		{"a=normal(0,x)", "normal takes two numbers"},
		{"a=normal(0,1", "missing closing parenthesis"},
		{"a=uniform(0,1)", "uniform takes no arguments"},
		{"a", "not name=normal(mu,sd)"},
		{"a=normal(0,1),a=uniform", "parameter a given twice"},
	} {
		_, err := ParsePriors(tc.in)
		assert.ErrorContains(t, err, tc.msg, tc.in)
	}
}

// TestSampleCancel: cancelling stops sampling after the batch being sampled; the batches
// emitted before are kept by the caller.
func TestSampleCancel(t *testing.T) {
	subjects := []fit.Subject{{ID: "a", Trials: simulate(t, 3, 6, 1)}, {ID: "b", Trials: simulate(t, 3, 6, 2)}}
	s, err := New(newEvaluator(t, likelihood.Options{}), Options{Chains: 2, Warmup: 10, Draws: 10, Together: 1,
		Infer: []string{"action_cost"}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	err = s.Sample(ctx, subjects, func(rs []Result) error {
		for _, r := range rs {
			got = append(got, r.Subject)
		}
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"a"}, got)
}
