package ioc

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/posterior"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestAdjustmentBootstrap: the bootstrap's adjustment ℓ(θ̂ + C(θ − m)) of a quadratic ℓ with
// curvature H has its maximum at m = θ̂ − Bias and the covariance Σ = D R D (D the given
// standard errors, R the sandwich's correlations, or H⁻¹'s without scores) where that widens
// ℓ; where the standard errors are narrower than ℓ's it is left alone (C = I); it is never
// narrower than ℓ; bad inputs are refused.
func TestAdjustmentBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const p = 3
	H, E := randomSPD(rng, p), randomSPD(rng, p)
	J := widerScores(H, E)
	center, mode := []float64{0.3, -1, 2}, []float64{0.25, -0.9, 2.1}
	inverse := func(A [][]float64) *mat.Dense {
		var Ai mat.Dense
		require.NoError(t, Ai.Inverse(mat.NewDense(p, p, symmetrize(A))))
		return &Ai
	}
	Hi := inverse(H)
	var S mat.Dense // the sandwich
	S.Product(Hi, mat.NewDense(p, p, symmetrize(J)), Hi)
	covariance := func(a *adjustment) *mat.Dense { // C⁻¹ H⁻¹ C⁻ᵀ
		var Ci, cov mat.Dense
		require.NoError(t, Ci.Inverse(a.C))
		cov.Product(&Ci, Hi, Ci.T())
		return &cov
	}
	for _, tc := range []struct {
		name     string
		J        [][]float64
		R        mat.Matrix // whose correlations Σ takes
		nuisance []bool
	}{
		{"sandwich", J, &S, nil},
		{"no scores", nil, Hi, nil},
		{"a nuisance parameter", J, &S, []bool{false, false, true}}, // keeps the sandwich's sd and its centre
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := make([]float64, p)
			for k := range p {
				sd[k] = 3 * math.Sqrt(S.At(k, k)) // wider than the sandwich, so wider than ℓ too
			}
			a, err := newBootstrapAdjustment(center, mode, sd, tc.nuisance, H, tc.J)
			require.NoError(t, err)
			assert.Equal(t, AdjustBootstrap, a.kind)
			m := slices.Clone(mode)
			for k, n := range tc.nuisance {
				if n {
					sd[k], m[k] = math.Sqrt(tc.R.At(k, k)), center[k]
				}
			}
			want := mat.NewDense(p, p, nil)
			for i := range p {
				for k := range p {
					want.Set(i, k, sd[i]*sd[k]*tc.R.At(i, k)/math.Sqrt(tc.R.At(i, i)*tc.R.At(k, k)))
				}
			}
			assert.True(t, mat.EqualApprox(covariance(a), want, 1e-9), "C⁻¹ H⁻¹ C⁻ᵀ = D R D:\n%v\n%v", mat.Formatted(covariance(a)), mat.Formatted(want))
			assert.InDeltaSlice(t, center, a.apply(m), 1e-12, "the mode maps to the likelihood's maximum")
			for k := range p {
				assert.InDelta(t, sd[k]/math.Sqrt(Hi.At(k, k)), a.sdRatio[k], 1e-9, "SD ratio %d", k)
			}
		})
	}

	// Standard errors far narrower than ℓ's: nothing to widen.
	tiny := []float64{1e-6, 1e-6, 1e-6}
	a, err := newBootstrapAdjustment(center, mode, tiny, nil, H, J)
	require.NoError(t, err)
	assert.True(t, mat.EqualApprox(a.C, mat.NewDiagDense(p, []float64{1, 1, 1}), 1e-9), "C = I:\n%v", mat.Formatted(a.C))
	// Random standard errors: never narrower than ℓ.
	for range 20 {
		sd := []float64{rng.ExpFloat64(), rng.ExpFloat64(), rng.ExpFloat64()}
		a, err := newBootstrapAdjustment(center, mode, sd, nil, H, J)
		require.NoError(t, err)
		var CtHC, diff mat.Dense
		CtHC.Product(a.C.T(), mat.NewDense(p, p, symmetrize(H)), a.C)
		diff.Sub(mat.NewDense(p, p, symmetrize(H)), &CtHC)
		var eig mat.EigenSym
		require.True(t, eig.Factorize(mat.NewSymDense(p, symmetrize(denseRows(&diff))), false))
		for _, l := range eig.Values(nil) {
			assert.GreaterOrEqual(t, l, -1e-9, "H − Cᵀ H C ⪰ 0")
		}
	}

	_, err = newBootstrapAdjustment(center, mode, []float64{1, 0, 1}, nil, H, J)
	assert.ErrorContains(t, err, "standard error 1 is 0")
	_, err = newBootstrapAdjustment(center, mode, []float64{1, 1, math.NaN()}, nil, H, J)
	assert.ErrorContains(t, err, "standard error 2 is NaN")
	_, err = newBootstrapAdjustment(center, mode, []float64{1, 1, math.NaN()}, []bool{false, false, true}, H, J)
	assert.NoError(t, err, "a nuisance parameter's sd is not used")
	_, err = newBootstrapAdjustment(center, mode, []float64{1, 1, 1}, nil, [][]float64{{1, 0, 0}, {0, -1, 0}, {0, 0, 1}}, J)
	assert.ErrorContains(t, err, "Hessian")
	_, err = newBootstrapAdjustment(center, mode[:2], []float64{1, 1, 1}, nil, H, J)
	assert.ErrorContains(t, err, "2 modes")
}

// TestBootstrapAdjustedPosterior: with --adjust bootstrap the sampler draws from the
// likelihood moved to the bootstrap's bias-corrected estimate and widened to its standard
// error (times t/z): on the linear task's action cost (30 trials, the other parameters
// fixed), a bootstrap record with bias 0.5 SE and SE three times the likelihood's gives draws
// that agree with the quadrature of ℓ(θ̂ + C(θ − m)), whose mean lies near m = θ̂ − bias and
// whose sd near SE·t/z; without the estimates it starts from, sampling is refused.
func TestBootstrapAdjustedPosterior(t *testing.T) {
	sub := fit.Subject{ID: "a", Trials: simulate(t, 30, 10, 7)}
	e := newEvaluator(t, likelihood.Options{})
	opts := Options{Chains: 4, Warmup: 250, Draws: 250, Seed: 5, Fix: map[string]float64{"motor_noise": 0.05, "obs_noise": 0.2}}
	s, err := New(e, opts)
	require.NoError(t, err)
	_, _, fits, err := s.climb(context.Background(), []fit.Subject{sub}, nil)
	require.NoError(t, err)
	require.True(t, fits[0].HessianPD)
	hat, sdH := fits[0].Scaled["action_cost"], 1/math.Sqrt(fits[0].Hessian[0][0])
	se, bias, dof := 3*sdH, 1.5*sdH, 9.0
	tz := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile(0.975) / 1.959963984540054
	opts.Adjust = AdjustBootstrap
	s, err = New(e, opts)
	require.NoError(t, err)
	assert.ErrorIs(t, s.Sample(context.Background(), []fit.Subject{sub}, func([]Result) error { return nil }), errNeedsInit)
	opts.Init = map[string]Estimate{"a": {Scaled: map[string]float64{"action_cost": hat}, StdErr: map[string]float64{"action_cost": se},
		Bias: map[string]float64{"action_cost": bias}, DOF: map[string]float64{"action_cost": dof}}}
	s, err = New(e, opts)
	require.NoError(t, err)
	r := sampleAll(t, s, []fit.Subject{sub})["a"]
	require.Empty(t, r.Err)
	require.Equal(t, AdjustBootstrap, r.Adjustment)
	require.Len(t, r.SDRatio, 1)

	adjs, notes := s.adjustments([]fit.Subject{sub}, []fit.Result{fits[0]})
	require.NotNil(t, adjs[0], notes[0])
	a := adjs[0]
	C, m := a.C.At(0, 0), a.mode[0]
	assert.InDelta(t, hat-bias, m, 1e-12)
	assert.InDelta(t, 1/(se*tz*math.Sqrt(fits[0].Hessian[0][0])), C, 1e-9, "C = 1/(SE·t/z·√H)")
	assert.InDelta(t, 3*tz, r.SDRatio[0], 1e-9)
	lo, hi := s.Selection().Bounds()
	exact := quadratureMapped(t, e, sub.Trials, s.Selection().Full([]float64{0}), 0, lo[0], hi[0], 1201,
		func(v float64) float64 { return hat + C*(v-m) })
	mean := exact.moment(func(x float64) float64 { return x })
	sd := math.Sqrt(exact.moment(func(x float64) float64 { return (x - mean) * (x - mean) }))
	t.Logf("θ̂ %.4f, m %.4f, SE·t/z %.4f: exact mean %.4f sd %.4f", hat, m, se*tz, mean, sd)
	assert.InDelta(t, m, mean, 0.2*se, "the posterior's mean near the bias-corrected estimate")
	assert.InDelta(t, se*tz, sd, 0.15*se*tz, "its sd near the bootstrap's")
	sum, err := posterior.SummarizeChains(r.Chains)
	require.NoError(t, err)
	got := sum[0]
	assert.Greater(t, got.ESSBulk, 200.0)
	within(t, "mean", got.Mean, mean, sd/math.Sqrt(got.ESSBulk), 4)
	within(t, "sd", got.SD, sd, sd/math.Sqrt(2*got.ESSBulk), 4)
	assert.Equal(t, AdjustBootstrap, s.Run("fit.jsonl").Adjust)

	// The default (auto) makes the bootstrap's adjustment where the estimate holds one, the
	// same draws; the curvature adjustment where it does not.
	opts.Adjust = ""
	s, err = New(e, opts)
	require.NoError(t, err)
	auto := sampleAll(t, s, []fit.Subject{sub})["a"]
	assert.Equal(t, AdjustBootstrap, auto.Adjustment)
	assert.Equal(t, r.Summary, auto.Summary)
	plain := opts.Init["a"]
	plain.Bias, plain.DOF = nil, nil
	opts.Init = map[string]Estimate{"a": plain}
	s, err = New(e, opts)
	require.NoError(t, err)
	assert.Equal(t, AdjustCurvature, sampleAll(t, s, []fit.Subject{sub})["a"].Adjustment)
	assert.Equal(t, AdjustCurvature, s.Run("fit.jsonl").Adjust)
}

// TestBootstrapAdjustmentKeepsTheTemperature: the policy noise's temperature, a nuisance, keeps
// its centre and the sandwich's width under the bootstrap's adjustment however far the
// bootstrap spread it (its agents without policy noise move it by decades), while the cost
// beside it takes the bootstrap's; where the Hessian is not positive definite, the cost is
// adjusted by its own block and the temperature left as it is.
func TestBootstrapAdjustmentKeepsTheTemperature(t *testing.T) {
	sub := fit.Subject{ID: "a", Trials: simulate(t, 40, 10, 7)}
	e := newEvaluator(t, likelihood.Options{FitTemperature: true})
	opts := Options{Chains: 2, Warmup: 10, Draws: 10, Seed: 5, Fix: map[string]float64{"motor_noise": 0.05, "obs_noise": 0.2}}
	s, err := New(e, opts)
	require.NoError(t, err)
	names := s.Selection().Names()
	require.Equal(t, []string{"action_cost", "temperature"}, names)
	_, _, fits, err := s.climb(context.Background(), []fit.Subject{sub}, nil)
	require.NoError(t, err)
	require.True(t, fits[0].HessianPD)
	curv, notes := s.adjustments([]fit.Subject{sub}, fits)
	require.NotNil(t, curv[0], notes[0])

	sdH := []float64{1 / math.Sqrt(fits[0].Hessian[0][0]), 1 / math.Sqrt(fits[0].Hessian[1][1])}
	est := Estimate{Scaled: fits[0].Scaled, StdErr: map[string]float64{}, Bias: map[string]float64{}, DOF: map[string]float64{}}
	for k, name := range names {
		est.StdErr[name], est.Bias[name] = 50*sdH[k], 20*sdH[k] // the temperature's as its bootstrap makes it
	}
	opts.Adjust, opts.Init = AdjustBootstrap, map[string]Estimate{"a": est}
	s, err = New(e, opts)
	require.NoError(t, err)
	adjs, notes := s.adjustments([]fit.Subject{sub}, fits)
	require.NotNil(t, adjs[0], notes[0])
	a := adjs[0]
	assert.InDelta(t, fits[0].Scaled["temperature"], a.mode[1], 1e-12, "the temperature's mode is its estimate")
	assert.InDelta(t, fits[0].Scaled["action_cost"]-20*sdH[0], a.mode[0], 1e-12, "the cost's is bias-corrected")
	var S mat.Dense // the sandwich, whose sd the temperature keeps
	var Hi mat.Dense
	require.NoError(t, Hi.Inverse(mat.NewDense(2, 2, symmetrize(fits[0].Hessian))))
	S.Product(&Hi, mat.NewDense(2, 2, symmetrize(fits[0].ScoreCov)), &Hi)
	var Ci, cov mat.Dense
	require.NoError(t, Ci.Inverse(a.C))
	cov.Product(&Ci, &Hi, Ci.T())
	assert.InDelta(t, 50*sdH[0], math.Sqrt(cov.At(0, 0)), 1e-6*sdH[0], "the cost's sd is the bootstrap's")
	assert.InDelta(t, math.Max(math.Sqrt(S.At(1, 1)), sdH[1]), math.Sqrt(cov.At(1, 1)), 0.5*sdH[1], "the temperature's is the sandwich's, not 50 times the likelihood's")
	assert.Less(t, a.sdRatio[1], 5.0)

	// A Hessian that is not positive definite (the temperature on its bound, the likelihood
	// still rising past it): the cost is adjusted by its own block, the temperature left alone.
	bad := fits[0]
	bad.HessianPD, bad.ScoreCov = false, nil
	bad.Hessian = [][]float64{{fits[0].Hessian[0][0], fits[0].Hessian[0][1]}, {fits[0].Hessian[1][0], -1}}
	adjs, notes = s.adjustments([]fit.Subject{sub}, []fit.Result{bad})
	require.NotNil(t, adjs[0], notes[0])
	a = adjs[0]
	assert.Equal(t, []float64{1, 0}, []float64{a.C.At(1, 1), a.C.At(1, 0)}, "the temperature as the likelihood has it")
	assert.Zero(t, a.C.At(0, 1))
	assert.InDelta(t, fits[0].Scaled["temperature"], a.mode[1], 0)
	assert.InDelta(t, fits[0].Scaled["action_cost"]-20*sdH[0], a.mode[0], 1e-12, "the cost's mode is bias-corrected")
	assert.InDelta(t, 1/(50*sdH[0]*math.Sqrt(fits[0].Hessian[0][0])), a.C.At(0, 0), 1e-9, "C = 1/(SE·√H₀₀)")
	assert.InDelta(t, 50, a.sdRatio[0], 1e-9)
	assert.Equal(t, 1.0, a.sdRatio[1])
	// The curvature adjustment has nothing to go on there.
	opts.Adjust = AdjustCurvature
	s, err = New(e, opts)
	require.NoError(t, err)
	adjs, notes = s.adjustments([]fit.Subject{sub}, []fit.Result{bad})
	assert.Nil(t, adjs[0])
	assert.Contains(t, notes[0], "not positive definite")
}
