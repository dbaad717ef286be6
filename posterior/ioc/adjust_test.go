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
)

// randomSPD returns a random symmetric positive definite p×p matrix.
func randomSPD(rng *rand.Rand, p int) [][]float64 {
	A := mat.NewDense(p, p, nil)
	for i := range p {
		for j := range p {
			A.Set(i, j, rng.NormFloat64())
		}
	}
	var S mat.Dense
	S.Mul(A, A.T())
	out := denseRows(&S)
	for i := range p {
		out[i][i] += 0.5
	}
	return out
}

// widerScores returns J = 2H + E, a covariance of the scores wider than the curvature H in
// every direction for a positive semi-definite E.
func widerScores(H, E [][]float64) [][]float64 {
	J := make([][]float64, len(H))
	for i := range H {
		J[i] = make([]float64, len(H))
		for k := range H {
			J[i][k] = 2*H[i][k] + E[i][k]
		}
	}
	return J
}

// TestAdjustmentCurvature: the adjusted log-likelihood ℓ(θ̂ + C(θ − θ̂)) of a quadratic ℓ
// with curvature H has curvature Cᵀ H C = H J⁻¹ H, the inverse of the sandwich, where that
// widens ℓ in every direction (J ≥ H); where the scores vary less than H says (J = H/2) it
// is left alone (C = I), and for random H, J it is never narrower (H − Cᵀ H C ⪰ 0) and
// equals min(·, 1) of the whitened eigenvalues; its maximum stays at θ̂; pull is its gradient
// (against central differences); SD ratios are the marginal ones; matrices that are not
// positive definite are refused.
func TestAdjustmentCurvature(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const p = 3
	H := randomSPD(rng, p)
	Hm := mat.NewDense(p, p, nil)
	for i := range p {
		Hm.SetRow(i, H[i])
	}
	center := []float64{0.3, -1, 2}
	curvature := func(a *adjustment) *mat.Dense {
		var CtHC mat.Dense
		CtHC.Product(a.C.T(), Hm, a.C)
		return &CtHC
	}

	// J = 2H + E ⪰ H: the sandwich's curvature, H J⁻¹ H, exactly.
	E := randomSPD(rng, p)
	J := make([][]float64, p)
	Jm := mat.NewDense(p, p, nil)
	for i := range p {
		J[i] = make([]float64, p)
		for k := range p {
			J[i][k] = 2*H[i][k] + E[i][k]
		}
		Jm.SetRow(i, J[i])
	}
	a, err := newAdjustment(center, H, J)
	require.NoError(t, err)
	var JiH, want mat.Dense
	require.NoError(t, JiH.Solve(Jm, Hm))
	want.Mul(Hm, &JiH)
	assert.True(t, mat.EqualApprox(curvature(a), &want, 1e-9), "Cᵀ H C = H J⁻¹ H:\n%v\n%v", mat.Formatted(curvature(a)), mat.Formatted(&want))
	var Hi, S mat.Dense
	require.NoError(t, Hi.Inverse(Hm))
	require.NoError(t, S.Inverse(&want)) // the sandwich H⁻¹ J H⁻¹
	for k := range p {
		assert.InDelta(t, math.Sqrt(S.At(k, k)/Hi.At(k, k)), a.sdRatio[k], 1e-9, "SD ratio %d", k)
		assert.Greater(t, a.sdRatio[k], 1.0)
	}
	assert.Equal(t, center, a.apply(center), "the centre maps to itself")

	// J = H/2: the scores vary less than the curvature says; nothing changes.
	half := make([][]float64, p)
	for i := range p {
		half[i] = make([]float64, p)
		for k := range p {
			half[i][k] = H[i][k] / 2
		}
	}
	a2, err := newAdjustment(center, H, half)
	require.NoError(t, err)
	assert.True(t, mat.EqualApprox(a2.C, mat.NewDiagDense(p, []float64{1, 1, 1}), 1e-9), "C = I:\n%v", mat.Formatted(a2.C))

	// Random J: never narrower than ℓ.
	for range 20 {
		Jr := randomSPD(rng, p)
		ar, err := newAdjustment(center, H, Jr)
		require.NoError(t, err)
		var diff mat.Dense
		diff.Sub(Hm, curvature(ar))
		var eig mat.EigenSym
		require.True(t, eig.Factorize(mat.NewSymDense(p, symmetrize(denseRows(&diff))), false))
		for _, l := range eig.Values(nil) {
			assert.GreaterOrEqual(t, l, -1e-9, "H − Cᵀ H C ⪰ 0")
		}
		for _, r := range ar.sdRatio {
			assert.GreaterOrEqual(t, r, 1-1e-9)
		}
	}

	// ℓ(x) = −½ (x − m)ᵀ H (x − m), m the centre: ℓ∘apply is maximal at the centre, with
	// gradient pull(∇ℓ).
	ell := func(x []float64) (float64, []float64) {
		d := make([]float64, p)
		for i := range d {
			d[i] = x[i] - center[i]
		}
		g := make([]float64, p)
		v := 0.0
		for i := range p {
			for j := range p {
				g[i] -= H[i][j] * d[j]
				v -= 0.5 * d[i] * H[i][j] * d[j]
			}
		}
		return v, g
	}
	x := []float64{0.5, -0.7, 1.4}
	_, g := ell(a.apply(x))
	got := a.pull(g)
	const h = 1e-6
	for k := range p {
		xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
		xp[k] += h
		xm[k] -= h
		vp, _ := ell(a.apply(xp))
		vm, _ := ell(a.apply(xm))
		assert.InDelta(t, (vp-vm)/(2*h), got[k], 1e-6, "gradient %d", k)
	}

	notPD := [][]float64{{1, 0, 0}, {0, -1, 0}, {0, 0, 1}}
	_, err = newAdjustment(center, notPD, J)
	assert.ErrorContains(t, err, "Hessian")
	_, err = newAdjustment(center, H, notPD)
	assert.ErrorContains(t, err, "scores")
}

// symmetrize returns the entries of A's upper triangle, row by row, mirrored: a symmetric
// matrix's data for mat.NewSymDense.
func symmetrize(A [][]float64) []float64 {
	p := len(A)
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			out[i*p+j] = (A[i][j] + A[j][i]) / 2
		}
	}
	return out
}

// TestAdjustedPosteriorAgainstQuadrature: by default the sampler draws from the curvature-
// adjusted likelihood around the subject's maximum (the linear task's action cost, 30 trials,
// the other parameters fixed), with the SD ratio of its fit (1/C in one dimension); the draws
// of an adjusted likelihood agree with the quadrature of ℓ(θ̂ + C(θ − θ̂)) within Monte-Carlo
// error (C set to 0.4, far from 1, so that the test sees whether it is applied); with
// --adjust none the sampler reports none, and with too few trials it warns.
func TestAdjustedPosteriorAgainstQuadrature(t *testing.T) {
	sub := fit.Subject{ID: "a", Trials: simulate(t, 30, 10, 7)}
	e := newEvaluator(t, likelihood.Options{})
	opts := Options{Chains: 4, Warmup: 30, Draws: 20, Seed: 5, Fix: map[string]float64{"motor_noise": 0.05, "obs_noise": 0.2}}
	s, err := New(e, opts)
	require.NoError(t, err)
	require.Equal(t, AdjustAuto, s.Options().Adjust, "the default: curvature without a bootstrap")
	r := sampleAll(t, s, []fit.Subject{sub})["a"]
	require.Empty(t, r.Err)
	require.Equal(t, AdjustCurvature, r.Adjustment)
	require.Len(t, r.SDRatio, 1)
	for _, w := range r.Warnings {
		assert.NotEqual(t, WarnAdjustment, w.Kind)
	}

	// The same adjustment, from the same climbs.
	_, _, fits, err := s.climb(context.Background(), []fit.Subject{sub}, nil)
	require.NoError(t, err)
	adj, notes := s.adjustments([]fit.Subject{sub}, fits)
	require.NotNil(t, adj[0], notes[0])
	assert.InDelta(t, 1/adj[0].C.At(0, 0), r.SDRatio[0], 1e-9)
	t.Logf("centre %.4f, C %.3f (SD ratio %.3f)", adj[0].center[0], adj[0].C.At(0, 0), r.SDRatio[0])

	// An adjustment far from the identity, sampled and integrated.
	c, C := adj[0].center[0], 0.4
	adj[0].C.Set(0, 0, C)
	long := opts
	long.Warmup, long.Draws = 250, 250
	s, err = New(e, long)
	require.NoError(t, err)
	res, err := s.sampleBatch(context.Background(), []fit.Subject{sub}, nil, adj, len(sub.Trials), long.Chains, nil)
	require.NoError(t, err)
	lo, hi := s.Selection().Bounds()
	exact := quadratureMapped(t, e, sub.Trials, s.Selection().Full([]float64{0}), 0, lo[0], hi[0], 1201,
		func(v float64) float64 { return c + C*(v-c) })
	mean := exact.moment(func(x float64) float64 { return x })
	sd := math.Sqrt(exact.moment(func(x float64) float64 { return (x - mean) * (x - mean) }))
	sum, err := posterior.SummarizeChains(res.Group(0))
	require.NoError(t, err)
	got := sum[0]
	t.Logf("adjusted by C = %.1f: exact mean %.4f sd %.4f; sampled %.4f, %.4f; ESS bulk %.0f", C, mean, sd, got.Mean, got.SD, got.ESSBulk)
	assert.Greater(t, got.ESSBulk, 200.0)
	within(t, "mean", got.Mean, mean, sd/math.Sqrt(got.ESSBulk), 4)
	within(t, "sd", got.SD, sd, sd/math.Sqrt(2*got.ESSBulk), 4)
	for _, q := range []struct{ p, got float64 }{{0.05, got.Q5}, {0.5, got.Q50}, {0.95, got.Q95}} {
		want, density := exact.quantile(q.p)
		within(t, "quantile", q.got, want, math.Sqrt(q.p*(1-q.p)/got.ESSTail)/density, 4)
	}

	opts.Adjust = AdjustNone
	s, err = New(e, opts)
	require.NoError(t, err)
	r = sampleAll(t, s, []fit.Subject{sub})["a"]
	assert.Equal(t, AdjustNone, r.Adjustment)
	assert.Nil(t, r.SDRatio)

	// Too few trials for the scores' covariance: sampled unadjusted, with a warning.
	opts.Adjust = AdjustCurvature
	s, err = New(e, opts)
	require.NoError(t, err)
	few := fit.Subject{ID: "few", Trials: sub.Trials[:fit.MinRobustTrials-1]}
	r = sampleAll(t, s, []fit.Subject{few})["few"]
	assert.Contains(t, r.Adjustment, AdjustNone+": too few trials")
	kinds := []string{}
	for _, w := range r.Warnings {
		kinds = append(kinds, w.Kind)
	}
	assert.Contains(t, kinds, WarnAdjustment)

	_, err = New(e, Options{Chains: 1, Draws: 1, Adjust: "magnitude"})
	assert.ErrorContains(t, err, `unknown adjustment "magnitude": want auto, curvature, bootstrap or none`)
}

// TestAdjustmentBoxed: where θ̂ + C(x − m) leaves the box, the likelihood is taken on the
// box's bound and falls off beyond it as a Gaussian of the likelihood's conditional sd; the
// value is continuous across the bound and the sampler's gradient (pulled through C) is that
// of the function it evaluates, by central differences on both sides of the bound.
func TestAdjustmentBoxed(t *testing.T) {
	H := [][]float64{{4, 1.5}, {1.5, 1}}
	J := [][]float64{{16, 2}, {2, 3}}
	a, err := newAdjustment([]float64{0, 0}, H, J)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{0.5, 1}, a.wall, 1e-12, "1/√H_kk")
	lo, hi := []float64{-1, -1}, []float64{1, 1}
	// a smooth stand-in for the likelihood inside the box, with its gradient
	ell := func(y []float64) (float64, []float64) {
		return -2*y[0]*y[0] - 1.5*y[0]*y[1] - 0.5*y[1]*y[1] + y[0], []float64{-4*y[0] - 1.5*y[1] + 1, -1.5*y[0] - y[1]}
	}
	f := func(x []float64) (float64, []float64) { // as sampleBatch evaluates it
		y, beyond := a.boxed(x, lo, hi)
		for k := range y {
			assert.True(t, y[k] >= lo[k] && y[k] <= hi[k], "the likelihood is evaluated inside the box")
		}
		v, g := ell(y)
		wl, wg := a.wallLogDensity(beyond)
		for k, d := range beyond {
			if d != 0 {
				g[k] = wg[k]
			}
		}
		return v + wl, a.pull(g)
	}
	inside := []float64{0.1, -0.2}
	y, beyond := a.boxed(inside, lo, hi)
	assert.Equal(t, []float64{0, 0}, beyond)
	assert.InDeltaSlice(t, a.apply(inside), y, 0, "inside the box, the point itself")
	outside := 0
	for _, x := range [][]float64{inside, {3, 0.5}, {-2.5, 4}, {0.7, -6}, {9, 9}} {
		_, g := f(x)
		const h = 1e-6
		for k := range x {
			xp, xm := slices.Clone(x), slices.Clone(x)
			xp[k] += h
			xm[k] -= h
			vp, _ := f(xp)
			vm, _ := f(xm)
			assert.InDelta(t, (vp-vm)/(2*h), g[k], 1e-5, "∂/∂x_%d at %v", k, x)
		}
		_, beyond := a.boxed(x, lo, hi)
		wl, _ := a.wallLogDensity(beyond)
		assert.LessOrEqual(t, wl, 0.0)
		if wl < 0 {
			outside++
		}
	}
	assert.GreaterOrEqual(t, outside, 3, "points whose image leaves the box")
	// Continuous across a bound: on the line x(τ) = τ·e₀, just inside and just outside the
	// point where the image's first coordinate reaches its upper bound.
	at := hi[0] / a.C.At(0, 0) // apply(τ e₀)₀ = C₀₀ τ, since θ̂ = m = 0
	in, _ := f([]float64{at - 1e-9, 0})
	out, _ := f([]float64{at + 1e-9, 0})
	assert.InDelta(t, in, out, 1e-7)
}

// TestFlatBootstrapAdjustment: where the Hessian is not positive definite, the adjustment
// widens toward the bootstrap's standard errors without correlations: its covariance
// C⁻¹ H₊⁻¹ C⁻ᵀ (H₊ the Hessian with its eigenvalues raised to 10⁻⁶ of the largest) holds
// D² (never narrower than the bootstrap's) and never less than H₊⁻¹, and the mode maps to θ̂.
func TestFlatBootstrapAdjustment(t *testing.T) {
	H := [][]float64{{100, 20, 0}, {20, 3, 0}, {0, 0, 50}} // indefinite: det of the first block < 0
	center, mode, sd := []float64{1, 2, 3}, []float64{1.1, 1.9, 3}, []float64{0.3, 0.2, 0.5}
	_, err := newBootstrapAdjustment(center, mode, sd, nil, H, nil)
	require.Error(t, err)
	a, err := newFlatBootstrapAdjustment(center, mode, sd, H)
	require.NoError(t, err)
	assert.InDeltaSlice(t, center, a.apply(mode), 1e-12)
	var eig mat.EigenSym
	require.True(t, eig.Factorize(symOf(H), true))
	lambda := eig.Values(nil)
	var Q, Hp mat.Dense
	eig.VectorsTo(&Q)
	for i := range lambda {
		lambda[i] = math.Max(lambda[i], 1e-6*slices.Max(lambda))
	}
	Hp.Product(&Q, mat.NewDiagDense(3, lambda), Q.T())
	var Hpi, Ci, cov mat.Dense
	require.NoError(t, Hpi.Inverse(&Hp))
	require.NoError(t, Ci.Inverse(a.C))
	cov.Product(&Ci, &Hpi, Ci.T())
	psd := func(name string, A mat.Matrix) {
		var e mat.EigenSym
		require.True(t, e.Factorize(symOf(denseRows(mat.DenseCopyOf(A))), false))
		for _, l := range e.Values(nil) {
			assert.GreaterOrEqual(t, l, -1e-9*math.Max(1, mat.Norm(A, 2)), name)
		}
	}
	var d1, d2 mat.Dense
	d1.Sub(&cov, mat.NewDiagDense(3, []float64{sd[0] * sd[0], sd[1] * sd[1], sd[2] * sd[2]}))
	psd("covariance − D²", &d1)
	d2.Sub(&cov, &Hpi)
	psd("covariance − H₊⁻¹", &d2)
	_, err = newFlatBootstrapAdjustment(center, mode, sd, [][]float64{{-1, 0, 0}, {0, -2, 0}, {0, 0, -3}})
	assert.ErrorContains(t, err, "no positive curvature")
}

// TestInitialMetric: the metric the chains start from is the adjusted likelihood's
// covariance, the inverse of its curvature Cᵀ H C, mapped to the sampler's unconstrained
// space by the Jacobian of posterior.Box.To at the mode (against central differences); a
// parameter within three standard deviations of a bound, or that embed leaves unadjusted, gets
// 1 on the diagonal and no correlations; without an adjustment the chains start from the
// identity (nil).
func TestInitialMetric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const p = 3
	H, E := randomSPD(rng, p), randomSPD(rng, p)
	for i := range p {
		for k := range p {
			H[i][k] *= 1e4 // standard deviations of about 10⁻²
			E[i][k] *= 1e4
		}
	}
	J := widerScores(H, E)
	lo, hi := []float64{-3, 0, -8}, []float64{-1, 10, 2}
	box, err := posterior.NewBox(lo, hi)
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		center []float64
		unit   []bool // parameters near a bound
	}{
		{"inside", []float64{-2.5, 9.6, -7.8}, []bool{false, false, false}}, // near the bounds too, where the Jacobian is large
		{"on a bound", []float64{-2.5, 9.6, -8}, []bool{false, false, true}},
		{"near two", []float64{-1.001, 0.002, 0}, []bool{true, true, false}},
	} {
		a, err := newAdjustment(c.center, H, J)
		require.NoError(t, err, c.name)
		var curv, cov mat.Dense
		curv.Product(a.C.T(), mat.NewDense(p, p, slices.Concat(H...)), a.C)
		require.NoError(t, cov.Inverse(&curv))
		m := initialMetric(a, lo, hi)
		require.Len(t, m, p, c.name)
		for k := range p {
			h := 1e-7 * (hi[k] - lo[k])
			up, down := slices.Clone(a.mode), slices.Clone(a.mode)
			up[k] += h
			down[k] -= h
			jk := (box.To(up)[k] - box.To(down)[k]) / (2 * h)
			for l := range p {
				assert.Equal(t, m[k][l], m[l][k])
				if c.unit[k] || c.unit[l] {
					assert.Equal(t, map[bool]float64{true: 1, false: 0}[k == l], m[k][l], "%s (%d, %d)", c.name, k, l)
					continue
				}
				up, down := slices.Clone(a.mode), slices.Clone(a.mode)
				hl := 1e-7 * (hi[l] - lo[l])
				up[l] += hl
				down[l] -= hl
				jl := (box.To(up)[l] - box.To(down)[l]) / (2 * hl)
				assert.InEpsilon(t, jk*cov.At(k, l)*jl, m[k][l], 1e-5, "%s (%d, %d)", c.name, k, l)
			}
		}
	}

	// Embedded: parameter 1 left as the likelihood has it.
	center := []float64{-2.5, 9.6, -7.8}
	sub, err := newAdjustment([]float64{center[0], center[2]}, [][]float64{{H[0][0], H[0][2]}, {H[2][0], H[2][2]}},
		[][]float64{{J[0][0], J[0][2]}, {J[2][0], J[2][2]}})
	require.NoError(t, err)
	e := initialMetric(sub.embed(center, []int{0, 2}), lo, hi)
	require.Len(t, e, p)
	assert.Equal(t, []float64{0, 1, 0}, e[1])
	assert.Equal(t, 0.0, e[0][1])
	full := initialMetric(sub, []float64{lo[0], lo[2]}, []float64{hi[0], hi[2]})
	assert.Equal(t, full[0][1], e[0][2])
	assert.Equal(t, full[1][1], e[2][2])

	assert.Nil(t, initialMetric(nil, lo, hi))
}
