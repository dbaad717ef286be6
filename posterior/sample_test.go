package posterior

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// gaussian2 is the log density of a 2-D normal with means mu, standard deviations sd and
// correlation rho.
type gaussian2 struct {
	mu, sd [2]float64
	rho    float64
}

func (g gaussian2) logp(x []float64) (float64, []float64) {
	a := (x[0] - g.mu[0]) / g.sd[0]
	b := (x[1] - g.mu[1]) / g.sd[1]
	c := 1 - g.rho*g.rho
	lp := -(a*a - 2*g.rho*a*b + b*b) / (2 * c)
	return lp, []float64{-(a - g.rho*b) / (c * g.sd[0]), -(b - g.rho*a) / (c * g.sd[1])}
}

// batch turns a pointwise log density into a batched Func.
func batch(f func(x []float64) (float64, []float64)) Func {
	return func(x [][]float64) ([]float64, [][]float64, error) {
		logp := make([]float64, len(x))
		grad := make([][]float64, len(x))
		for i, xi := range x {
			logp[i], grad[i] = f(xi)
		}
		return logp, grad, nil
	}
}

// within requires |got − want| ≤ k·se.
func within(t *testing.T, name string, got, want, se, k float64) {
	t.Helper()
	assert.LessOrEqualf(t, math.Abs(got-want), k*se, "%s: got %.4g, want %.4g ± %g·%.3g", name, got, want, k, se)
}

// quantileSE is the Monte-Carlo standard error of the p-quantile q of a density f with ess
// effective draws.
func quantileSE(p, density, ess float64) float64 {
	return math.Sqrt(p*(1-p)/ess) / density
}

func TestSampleGaussian2D(t *testing.T) {
	for _, dense := range []bool{false, true} {
		t.Run(map[bool]string{false: "diagonal metric", true: "dense metric"}[dense], func(t *testing.T) {
			testSampleGaussian2D(t, dense)
		})
	}
}

func testSampleGaussian2D(t *testing.T, dense bool) {
	g := gaussian2{mu: [2]float64{1, -2}, sd: [2]float64{1, 2}, rho: 0.8}
	res, err := Sample(context.Background(), NewTarget(2, batch(g.logp)), Options{Seed: 11, DenseMetric: dense})
	require.NoError(t, err)
	require.NoError(t, res.Err())
	require.Len(t, res.Chains, 4)
	sum, err := res.Summary(0)
	require.NoError(t, err)
	for j, s := range sum {
		assert.Less(t, s.RHat, 1.01, "R-hat of x%d", j)
		assert.Greater(t, s.ESSBulk, 800.0, "bulk ESS of x%d", j)
		within(t, "mean", s.Mean, g.mu[j], s.SD/math.Sqrt(s.ESSBulk), 4)
		within(t, "sd", s.SD, g.sd[j], g.sd[j]/math.Sqrt(2*s.ESSBulk), 4)
		n := distuv.Normal{Mu: g.mu[j], Sigma: g.sd[j]}
		for _, q := range []struct{ p, got float64 }{{0.05, s.Q5}, {0.5, s.Q50}, {0.95, s.Q95}} {
			within(t, "quantile", q.got, n.Quantile(q.p), quantileSE(q.p, n.Prob(n.Quantile(q.p)), s.ESSTail), 4)
		}
	}
	x0, x1 := pooled(ParamDraws(res.Chains, 0)), pooled(ParamDraws(res.Chains, 1))
	r := stat.Correlation(x0, x1, nil)
	ess := math.Min(sum[0].ESSBulk, sum[1].ESSBulk)
	within(t, "correlation", r, g.rho, (1-g.rho*g.rho)/math.Sqrt(ess), 4)
	for _, c := range res.Chains {
		assert.Zero(t, c.Divergences())
		assert.Greater(t, c.EBFMI(), 0.3)
		assert.Len(t, c.Draws, 1000)
		assert.Equal(t, c.Draws, c.Scaled, "identity scale")
		for i, d := range c.Draws {
			lp, _ := g.logp(d)
			require.Equal(t, lp, c.LogP[i])
		}
	}
}

// sampleGaussian2 samples g with o, checks the draws' means and standard deviations against
// g's within 4 Monte-Carlo standard errors, and returns the result and the mean number of
// leapfrog steps a draw.
func sampleGaussian2(t *testing.T, g gaussian2, o Options) (*Result, float64) {
	t.Helper()
	res, err := Sample(context.Background(), NewTarget(2, batch(g.logp)), o)
	require.NoError(t, err)
	require.NoError(t, res.Err())
	sum, err := res.Summary(0)
	require.NoError(t, err)
	for j, s := range sum {
		within(t, "mean", s.Mean, g.mu[j], s.SD/math.Sqrt(s.ESSBulk), 4)
		within(t, "sd", s.SD, g.sd[j], g.sd[j]/math.Sqrt(2*s.ESSBulk), 4)
	}
	steps, n := 0.0, 0
	for _, c := range res.Chains {
		for _, l := range c.NLeapfrog {
			steps += float64(l)
			n++
		}
	}
	return res, steps / float64(n)
}

// TestDenseMetricCorrelated: on a strongly correlated Gaussian the dense metric learns the
// covariance and needs far fewer leapfrog steps per draw than the diagonal one, with the
// same answer.
func TestDenseMetricCorrelated(t *testing.T) {
	g := gaussian2{mu: [2]float64{0, 0}, sd: [2]float64{1, 10}, rho: 0.99}
	steps := map[bool]float64{}
	for _, dense := range []bool{false, true} {
		var res *Result
		res, steps[dense] = sampleGaussian2(t, g, Options{Seed: 3, DenseMetric: dense})
		for _, c := range res.Chains {
			if !dense {
				assert.Nil(t, c.InvMetricDense)
				continue
			}
			cov := g.rho * g.sd[0] * g.sd[1]
			require.Len(t, c.InvMetricDense, 2)
			assert.InEpsilon(t, g.sd[0]*g.sd[0], c.InvMetricDense[0][0], 0.3)
			assert.InEpsilon(t, g.sd[1]*g.sd[1], c.InvMetricDense[1][1], 0.3)
			assert.InEpsilon(t, cov, c.InvMetricDense[0][1], 0.3)
			assert.Equal(t, c.InvMetricDense[0][1], c.InvMetricDense[1][0])
			assert.Equal(t, c.InvMetricDense[1][1], c.InvMetric[1])
		}
	}
	t.Logf("mean leapfrog steps per draw: diagonal %.1f, dense %.1f", steps[false], steps[true])
	assert.Less(t, 3*steps[true], steps[false])
}

// TestInitMetricNarrowPosterior: on a narrow correlated Gaussian (standard deviations of
// 4·10⁻³ and 10⁻³, as well-identified parameter's on the logit scale), chains that start
// from its covariance as their metric (Options.InitMetric) draw the same distribution with
// far fewer leapfrog steps after a short warm-up than chains that start from the identity,
// whose windows' estimates Stan's 10⁻³·I inflates.
func TestInitMetricNarrowPosterior(t *testing.T) {
	g := gaussian2{mu: [2]float64{0.3, -1}, sd: [2]float64{0.004, 0.001}, rho: 0.9}
	c := g.rho * g.sd[0] * g.sd[1]
	truth := [][]float64{{g.sd[0] * g.sd[0], c}, {c, g.sd[1] * g.sd[1]}}
	steps := map[bool]float64{}
	for _, withPrior := range []bool{false, true} {
		o := Options{Seed: 5, Warmup: 150, Draws: 400, DenseMetric: true,
			Init: func(_, chain int) []float64 { return []float64{g.mu[0] + 0.004*float64(chain-2), g.mu[1]} }}
		if withPrior {
			o.InitMetric = func(int) [][]float64 { return truth }
		}
		_, steps[withPrior] = sampleGaussian2(t, g, o)
	}
	t.Logf("mean leapfrog steps per draw: identity start %.1f, initial metric %.1f", steps[false], steps[true])
	assert.Less(t, 2*steps[true], steps[false])
	assert.Less(t, steps[true], 6.0)
}

// TestMetricMomentum: momenta drawn under a dense metric have covariance M = (M⁻¹)⁻¹, and
// sharp and kinetic apply M⁻¹.
func TestMetricMomentum(t *testing.T) {
	inv := [][]float64{{4, 1.2, 0}, {1.2, 1, -0.3}, {0, -0.3, 0.5}}
	m := unitMetric(3, true)
	require.NoError(t, m.setDense(inv))
	p := []float64{0.3, -1, 2}
	dst := make([]float64, 3)
	m.sharp(dst, p)
	for i := range inv {
		assert.InDelta(t, dot(inv[i], p), dst[i], 1e-15)
	}
	assert.InDelta(t, dot(p, dst), m.kinetic(p), 1e-15)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	var sum [3][3]float64
	for range n {
		m.momentum(rng, p)
		for i := range 3 {
			for j := range 3 {
				sum[i][j] += p[i] * p[j] / n
			}
		}
	}
	// (M⁻¹)·E[ppᵀ] = I within Monte-Carlo error.
	for i := range 3 {
		for j := range 3 {
			want := 0.0
			if i == j {
				want = 1
			}
			got := 0.0
			for k := range 3 {
				got += inv[i][k] * sum[k][j]
			}
			assert.InDelta(t, want, got, 0.03, "(M⁻¹ E[ppᵀ])[%d][%d]", i, j)
		}
	}
	assert.Error(t, m.setDense([][]float64{{1, 2}, {2, 1}}), "not positive definite")
}

func pooled(x [][]float64) []float64 {
	var out []float64
	for _, xc := range x {
		out = append(out, xc...)
	}
	return out
}

// TestSampleBetaBox samples a parameter on the box [−3, −1] whose position u in the box is
// Beta(2, 5): through the logit transform, with the Jacobian.
func TestSampleBetaBox(t *testing.T) {
	lo, hi := -3.0, -1.0
	box, err := NewBox([]float64{lo}, []float64{hi})
	require.NoError(t, err)
	// The log likelihood in the fitting scale: Beta(2, 5) in u = (s − lo)/(hi − lo).
	f := func(_ []int, s [][]float64) ([]float64, [][]float64, error) {
		logp := make([]float64, len(s))
		grad := make([][]float64, len(s))
		for i, si := range s {
			u := (si[0] - lo) / (hi - lo)
			logp[i] = math.Log(u) + 4*math.Log1p(-u)
			grad[i] = []float64{(1/u - 4/(1-u)) / (hi - lo)}
		}
		return logp, grad, nil
	}
	target, err := BoxTarget(box, 1, f, nil)
	require.NoError(t, err)
	res, err := Sample(context.Background(), target, Options{Seed: 3, Warmup: 500})
	require.NoError(t, err)
	sum, err := res.Summary(0)
	require.NoError(t, err)
	s := sum[0]
	beta := distuv.Beta{Alpha: 2, Beta: 5}
	scale := hi - lo
	assert.Less(t, s.RHat, 1.01)
	within(t, "mean", s.Mean, lo+scale*beta.Mean(), s.SD/math.Sqrt(s.ESSBulk), 4)
	variance := scale * scale * beta.Variance()
	// The variance of a sample variance is (μ₄ − σ⁴)/n; Beta(2,5) has kurtosis ≈ 2.88.
	within(t, "variance", s.SD*s.SD, variance, variance*math.Sqrt(1.9/s.ESSBulk), 4)
	for _, q := range []struct{ p, got float64 }{{0.05, s.Q5}, {0.5, s.Q50}, {0.95, s.Q95}} {
		u := beta.Quantile(q.p)
		within(t, "quantile", q.got, lo+scale*u, scale*quantileSE(q.p, beta.Prob(u), s.ESSTail), 4)
	}
	for _, c := range res.Chains {
		assert.Zero(t, c.Divergences())
		for i, d := range c.Draws {
			assert.InDelta(t, c.Scaled[i][0], box.From(d)[0], 0)
			require.True(t, c.Scaled[i][0] > lo && c.Scaled[i][0] < hi)
		}
	}
}

// TestSampleFunnel samples Neal's funnel with a mild scale, v ~ normal(0, 1) and
// x₁, x₂ | v ~ normal(0, e^{v/2}), whose curvature varies by a factor e³ over v's ±3σ, and
// checks v's marginal.
func TestSampleFunnel(t *testing.T) {
	const sigma = 1.0
	funnel := func(x []float64) (float64, []float64) {
		v := x[0]
		lp := -0.5 * v * v / (sigma * sigma)
		g := []float64{-v / (sigma * sigma), 0, 0}
		for i := 1; i < 3; i++ {
			// x ~ normal(0, e^{v/2}): −x²e^{−v}/2 − v/2.
			lp += -0.5*x[i]*x[i]*math.Exp(-v) - 0.5*v
			g[0] += 0.5*x[i]*x[i]*math.Exp(-v) - 0.5
			g[i] = -x[i] * math.Exp(-v)
		}
		return lp, g
	}
	res, err := Sample(context.Background(), NewTarget(3, batch(funnel)), Options{Seed: 5, Warmup: 500})
	require.NoError(t, err)
	sum, err := res.Summary(0)
	require.NoError(t, err)
	s := sum[0]
	assert.Less(t, s.RHat, 1.02)
	within(t, "mean of v", s.Mean, 0, s.SD/math.Sqrt(s.ESSBulk), 4)
	within(t, "sd of v", s.SD, sigma, sigma/math.Sqrt(2*s.ESSBulk), 4)
	n := distuv.Normal{Sigma: sigma}
	for _, q := range []struct{ p, got float64 }{{0.05, s.Q5}, {0.5, s.Q50}, {0.95, s.Q95}} {
		within(t, "quantile of v", q.got, n.Quantile(q.p), quantileSE(q.p, n.Prob(n.Quantile(q.p)), s.ESSTail), 4)
	}
	divergent := 0
	for _, c := range res.Chains {
		divergent += c.Divergences()
	}
	assert.Less(t, divergent, 40, "divergences in 4000 draws")
}

// TestSampleDivergences: a density that is zero for x₀ < 0 (a half-normal) must give
// divergent transitions and no error, and no draw outside the support.
func TestSampleDivergences(t *testing.T) {
	half := func(x []float64) (float64, []float64) {
		if x[0] < 0 {
			return math.Inf(-1), nil
		}
		return -0.5 * (x[0]*x[0] + x[1]*x[1]), []float64{-x[0], -x[1]}
	}
	res, err := Sample(context.Background(), NewTarget(2, batch(half)), Options{Seed: 2, Warmup: 300, Draws: 300})
	require.NoError(t, err)
	require.NoError(t, res.Err())
	divergent := 0
	for _, c := range res.Chains {
		divergent += c.Divergences()
		for _, d := range c.Draws {
			require.GreaterOrEqual(t, d[0], 0.0)
		}
	}
	assert.Greater(t, divergent, 0)
	// The mean of a half-normal is √(2/π), roughly recovered despite the boundary.
	assert.InDelta(t, math.Sqrt(2/math.Pi), stat.Mean(pooled(ParamDraws(res.Chains, 0)), nil), 0.1)
}

// TestSampleStepSizeAdapts: after warm-up the mean acceptance statistic is near the target δ
// (a little above it, as in Stan, whose final step size is the dual-averaging mean of the
// log step sizes) and grows with δ while the step size shrinks; the diagonal metric has
// adapted to the scales of the target, a 10-D normal with standard deviations 1 … 10.
func TestSampleStepSizeAdapts(t *testing.T) {
	scales := func(x []float64) (float64, []float64) {
		var lp float64
		g := make([]float64, len(x))
		for i, v := range x {
			s2 := float64((i + 1) * (i + 1))
			lp -= 0.5 * v * v / s2
			g[i] = -v / s2
		}
		return lp, g
	}
	prevAccept, prevStep := 0.0, math.Inf(1)
	for _, delta := range []float64{0.6, 0.8, 0.95} {
		res, err := Sample(context.Background(), NewTarget(10, batch(scales)),
			Options{Seed: 9, Chains: 4, Warmup: 500, Draws: 300, TargetAccept: delta})
		require.NoError(t, err)
		var accept, step float64
		for _, c := range res.Chains {
			accept += stat.Mean(c.AcceptStat, nil) / 4
			step += c.StepSize / 4
			for i, v := range c.InvMetric {
				assert.InEpsilon(t, float64((i+1)*(i+1)), v, 0.5, "inverse metric %d", i)
			}
			for _, a := range c.AcceptStat {
				require.True(t, a >= 0 && a <= 1)
			}
		}
		assert.GreaterOrEqual(t, accept, delta-0.05, "delta %g", delta)
		assert.LessOrEqual(t, accept, math.Min(delta+0.15, 1), "delta %g", delta)
		assert.Greater(t, accept, prevAccept)
		assert.Less(t, step, prevStep)
		prevAccept, prevStep = accept, step
	}
}

func TestSampleZeroDensityEverywhere(t *testing.T) {
	calls := 0
	f := func(x [][]float64) ([]float64, [][]float64, error) {
		calls++
		logp := make([]float64, len(x))
		for i := range logp {
			logp[i] = math.NaN()
		}
		return logp, make([][]float64, len(x)), nil
	}
	res, err := Sample(context.Background(), NewTarget(1, f), Options{Chains: 3, Warmup: 10, Draws: 10})
	require.NoError(t, err)
	require.Error(t, res.Err())
	for _, c := range res.Chains {
		require.Error(t, c.Err)
		assert.Contains(t, c.Err.Error(), "no point of positive density")
		assert.Empty(t, c.Draws)
		assert.Equal(t, 100, c.Evaluations)
	}
	assert.Equal(t, 100, calls, "the three chains' initial points are evaluated together")
	_, err = res.Summary(0)
	assert.Error(t, err)
}

func TestSampleErrors(t *testing.T) {
	g := gaussian2{sd: [2]float64{1, 1}}
	good := batch(g.logp)
	boom := errors.New("boom")
	t.Run("log density error", func(t *testing.T) {
		n := 0
		f := func(x [][]float64) ([]float64, [][]float64, error) {
			if n++; n == 50 {
				return nil, nil, boom
			}
			return good(x)
		}
		before := runtime.NumGoroutine()
		_, err := Sample(context.Background(), NewTarget(2, f), Options{Chains: 8, Warmup: 100, Draws: 100})
		require.ErrorIs(t, err, boom)
		deadline := time.Now().Add(time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		assert.LessOrEqual(t, runtime.NumGoroutine(), before, "every chain's goroutine ends")
	})
	t.Run("wrong lengths", func(t *testing.T) {
		f := func(x [][]float64) ([]float64, [][]float64, error) {
			lp, g, _ := good(x)
			return lp[:len(lp)-1], g, nil
		}
		_, err := Sample(context.Background(), NewTarget(2, f), Options{Warmup: 10, Draws: 10})
		require.ErrorContains(t, err, "returned")
		f = func(x [][]float64) ([]float64, [][]float64, error) {
			lp, g, _ := good(x)
			g[0] = g[0][:1]
			return lp, g, nil
		}
		_, err = Sample(context.Background(), NewTarget(2, f), Options{Warmup: 10, Draws: 10})
		require.ErrorContains(t, err, "gradient of length 1")
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		f := func(x [][]float64) ([]float64, [][]float64, error) {
			if n++; n == 30 {
				cancel()
			}
			return good(x)
		}
		_, err := Sample(ctx, NewTarget(2, f), Options{Warmup: 100, Draws: 100})
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("options", func(t *testing.T) {
		for _, o := range []Options{{Chains: -1}, {Draws: -2}, {TargetAccept: 1}, {TargetAccept: -0.5},
			{StepSize: math.NaN()}, {MaxDepth: -1}, {Window: -1}} {
			_, err := Sample(context.Background(), NewTarget(2, good), o)
			assert.Error(t, err, "%+v", o)
		}
	})
	t.Run("bad init", func(t *testing.T) {
		res, err := Sample(context.Background(), NewTarget(2, good), Options{Chains: 1, Warmup: 10, Draws: 10,
			Init: func(group, chain int) []float64 { return []float64{1} }})
		require.NoError(t, err)
		assert.ErrorContains(t, res.Err(), "need 2 finite values")
	})
	t.Run("panics", func(t *testing.T) {
		assert.Panics(t, func() { NewTarget(0, good) })
		assert.Panics(t, func() { NewTarget(1, nil) })
		assert.Panics(t, func() { NewGroupTarget(1, 0, Grouped(good)) })
	})
}

func TestSampleNoWarmupAndInit(t *testing.T) {
	g := gaussian2{sd: [2]float64{1, 1}}
	var progress []Progress
	res, err := Sample(context.Background(), NewTarget(2, batch(g.logp)), Options{Chains: 2, Warmup: -1, Draws: 50,
		StepSize: 0.3, Init: func(group, chain int) []float64 { return []float64{float64(chain), 0} },
		Progress: func(p Progress) { progress = append(progress, p) }})
	require.NoError(t, err)
	for _, c := range res.Chains {
		assert.Equal(t, 0.3, c.StepSize)
		assert.Equal(t, []float64{1, 1}, c.InvMetric)
		assert.Len(t, c.Draws, 50)
	}
	require.NotEmpty(t, progress)
	last := progress[len(progress)-1]
	assert.Equal(t, 100, last.Total)
	assert.Equal(t, res.Calls, last.Calls)
	assert.Equal(t, res.Evaluations, last.Evaluations)
	assert.GreaterOrEqual(t, last.Transitions, 98)
}

// TestSampleGroupSeed: with GroupSeed, a group's draws depend on its seed only, not on its
// index or the groups sampled with it.
func TestSampleGroupSeed(t *testing.T) {
	g := gaussian2{sd: [2]float64{1, 2}, rho: 0.5}
	seeds := []uint64{3, 8}
	opts := Options{Chains: 2, Warmup: 50, Draws: 30}
	opts.GroupSeed = func(group int) uint64 { return seeds[group] }
	both, err := Sample(context.Background(), NewGroupTarget(2, 2, Grouped(batch(g.logp))), opts)
	require.NoError(t, err)
	opts.GroupSeed = func(int) uint64 { return seeds[1] }
	alone, err := Sample(context.Background(), NewTarget(2, batch(g.logp)), opts)
	require.NoError(t, err)
	for c := range 2 {
		assert.Equal(t, alone.Group(0)[c].Draws, both.Group(1)[c].Draws, "chain %d", c)
	}
	assert.NotEqual(t, both.Group(0)[0].Draws, both.Group(1)[0].Draws)
}

// TestSampleEnergy: a chain's Energy is the Hamiltonian at each draw, so Energy + LogP is the
// kinetic energy of the draw's momentum, ½pᵀM⁻¹p with p ~ normal(0, M) whatever the adapted
// metric: χ²_d/2 distributed, of mean d/2 and variance d/2 (the momentum is drawn afresh at
// every transition and the multinomial choice of the draw keeps its canonical distribution);
// the variance of a sample variance is σ⁴(2 + excess kurtosis 12/d)/n.
func TestSampleEnergy(t *testing.T) {
	const d = 5
	stdNormal := func(x []float64) (float64, []float64) {
		var lp float64
		g := make([]float64, len(x))
		for i, v := range x {
			lp -= v * v / 2
			g[i] = -v
		}
		return lp, g
	}
	for _, dense := range []bool{false, true} {
		res, err := Sample(context.Background(), NewTarget(d, batch(stdNormal)), Options{Seed: 5, Draws: 1000, DenseMetric: dense})
		require.NoError(t, err)
		require.NoError(t, res.Err())
		var kinetic []float64
		for _, c := range res.Chains {
			require.Len(t, c.Energy, len(c.LogP))
			require.Len(t, c.AcceptStat, len(c.LogP))
			for i := range c.Energy {
				k := c.Energy[i] + c.LogP[i]
				require.GreaterOrEqual(t, k, 0.0, "kinetic energy ≥ 0")
				kinetic = append(kinetic, k)
			}
		}
		mean, sd := stat.MeanStdDev(kinetic, nil)
		n := float64(len(kinetic))
		within(t, "mean kinetic energy", mean, d/2.0, math.Sqrt(d/2.0/n), 5)
		within(t, "variance of the kinetic energy", sd*sd, d/2.0, d/2.0*math.Sqrt((2+12.0/d)/n), 5)
	}
}
