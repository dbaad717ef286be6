package ioc

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// The calibrations of the likelihood before sampling (Options.Adjust).
const (
	// AdjustAuto (the default) makes AdjustBootstrap's adjustment for a subject whose estimate
	// in Options.Init holds fit's parametric bootstrap, AdjustCurvature's otherwise. On the
	// pendulum the bootstrap's posterior covered the truth as often or more on our agent's data
	// and far more on the reference's (docs/posterior.md).
	AdjustAuto = "auto"
	// AdjustCurvature samples the curvature-adjusted likelihood
	// ℓ_adj(θ) = ℓ(θ̂ + C(θ − θ̂)) of Ribatet, Cooley & Davison (2012, "Bayesian inference from
	// composite likelihoods", Sec. 3.2; Chandler & Bate 2007), θ̂ the subject's
	// maximum-likelihood estimate, with C chosen so that ℓ_adj's curvature at θ̂ is the
	// inverse of the sandwich covariance H⁻¹ J H⁻¹ (H the Hessian of −ℓ, J the covariance of
	// the trials' scores; fit's robust standard errors). The likelihood tracks a Gaussian
	// belief and replaces products of noises by their variance; its curvature then overstates
	// the information in the data (on the partially observable pendulum by a factor 1.3–1.4 in
	// standard deviation), and an unadjusted posterior is too narrow: its 90 % intervals
	// covered the truth in 73–80 % of simulated data sets (docs/posterior.md, "Calibration"). The shape
	// of ℓ (skew, bounds, several modes) is kept; only its scale around θ̂ changes.
	AdjustCurvature = "curvature"
	// AdjustNone samples the likelihood as it is.
	AdjustNone = "none"

	// AdjustBootstrap samples ℓ_adj(θ) = ℓ(θ̂ + C(θ − m)), centred at the bias-corrected
	// estimate m = θ̂ − Bias of fit's parametric bootstrap (fit.Bootstrap; the estimates of
	// Options.Init must come from it, fit's default --uncertainty bootstrap), with C chosen so
	// that ℓ_adj's curvature at m is the inverse of Σ = D R D: R the correlations of the
	// sandwich H⁻¹ J H⁻¹ (of H⁻¹ where J cannot be estimated) and D each parameter's bootstrap
	// standard error times t/z, the ratio of the 97.5 % quantiles of its interval's Student t
	// and of the normal, so that ℓ_adj's normal approximation has fit's 95 % interval. The
	// bootstrap's refits include agents other than the likelihood's own; where the subject is
	// not the likelihood's agent its posterior is then as wide as fit's default intervals,
	// which cover the truth on other agents' data (docs/intervals.md), where the curvature
	// adjustment's do not. As for AdjustCurvature, ℓ's shape is kept and it is never narrowed.
	// J may be missing (too few trials): the correlations are then H⁻¹'s.
	AdjustBootstrap = "bootstrap"
)

// errNeedsInit: AdjustBootstrap was asked for without the fits it starts from.
var errNeedsInit = fmt.Errorf("--adjust %s needs --init FIT.jsonl: the results of fit with its default --uncertainty bootstrap", AdjustBootstrap)

// adjustment maps a point θ of the sampled parameters (fitting scale) to θ̂ + C(θ − m), where
// the likelihood is evaluated, and pulls the gradient there back to θ (Cᵀ g): θ̂ the
// likelihood's maximum (center), m where the adjusted likelihood's maximum lies (mode: θ̂
// itself for the curvature adjustment, θ̂ − Bias for the bootstrap's).
type adjustment struct {
	kind         string // AdjustCurvature or AdjustBootstrap
	center, mode []float64
	C            *mat.Dense
	sdRatio      []float64 // adjusted over unadjusted marginal standard deviation, per parameter (Result.SDRatio)
	// cov is the adjusted likelihood's covariance at mode in the fitting scale, C⁻¹ H⁻¹ C⁻ᵀ
	// (rows and columns of NaN for the parameters embed leaves unadjusted): where the
	// sampler's metric starts (initialMetric).
	cov [][]float64
	// wall is, per parameter, the scale of the Gaussian fall-off that stands in for the
	// likelihood where θ̂ + C(θ − m) leaves the box (boxed): the likelihood's own conditional
	// standard deviation 1/√H_kk at θ̂.
	wall []float64
}

// embed returns the adjustment a of the parameters keep of a larger set, centred at center,
// as an adjustment of the whole set that leaves the others as they are: C the identity on
// them, their mode their centre, their SD ratio 1 and no wall (their points never leave the
// box).
func (a *adjustment) embed(center []float64, keep []int) *adjustment {
	p := len(center)
	C := mat.NewDense(p, p, nil)
	mode, ratio, wall := slices.Clone(center), make([]float64, p), make([]float64, p)
	cov := make([][]float64, p)
	for k := range p {
		C.Set(k, k, 1)
		ratio[k], wall[k] = 1, math.Inf(1)
		cov[k] = make([]float64, p)
		for l := range cov[k] {
			cov[k][l] = math.NaN()
		}
	}
	for i, k := range keep {
		for j, l := range keep {
			C.Set(k, l, a.C.At(i, j))
			cov[k][l] = a.cov[i][j]
		}
		mode[k], ratio[k], wall[k] = a.mode[i], a.sdRatio[i], a.wall[i]
		if a.center[i] != center[k] {
			panic("adjustment.embed: the centres differ")
		}
	}
	return &adjustment{kind: a.kind, center: slices.Clone(center), mode: mode, C: C, sdRatio: ratio, wall: wall, cov: cov}
}

// initialMetric returns the inverse metric the chains of a subject whose likelihood a adjusts
// start from (posterior.Options.InitMetric): a's covariance at its mode mapped to the
// sampler's unconstrained space by the box's Jacobian there, dy/ds = 1/((hi − lo)·u·(1 − u))
// with u = (s − lo)/(hi − lo) (posterior.Box). That linearization holds where the mode lies
// at least three of a's standard deviations inside the box; a parameter nearer a bound (the
// temperature of an agent without policy noise, estimated on its lower bound), or whose
// covariance a does not know (embed), gets 1 on the diagonal and no correlations: a posterior
// piled against a bound spreads over about one unit of the logit scale (the logarithm of a
// half-normal draw has a standard deviation of π/√8 ≈ 1.1). It returns nil (the identity)
// where a is nil or the matrix is not positive definite.
func initialMetric(a *adjustment, lo, hi []float64) [][]float64 {
	if a == nil || a.cov == nil {
		return nil
	}
	p := len(a.mode)
	jac := make([]float64, p)
	for k := range p {
		w, sd := hi[k]-lo[k], math.Sqrt(a.cov[k][k])
		if !(a.mode[k]-3*sd > lo[k] && a.mode[k]+3*sd < hi[k]) { // NaN: unknown
			jac[k] = math.NaN()
			continue
		}
		u := (a.mode[k] - lo[k]) / w
		jac[k] = 1 / (w * u * (1 - u))
	}
	m := make([][]float64, p)
	for k := range p {
		m[k] = make([]float64, p)
	}
	for k := range p {
		for l := k; l < p; l++ {
			switch {
			case math.IsNaN(jac[k]) || math.IsNaN(jac[l]):
				if k == l {
					m[k][l] = 1
				}
			default:
				m[k][l] = jac[k] * (a.cov[k][l] + a.cov[l][k]) / 2 * jac[l]
			}
			m[l][k] = m[k][l]
		}
	}
	if !new(mat.Cholesky).Factorize(symOf(m)) {
		return nil
	}
	return m
}

// boxed returns y = θ̂ + C(x − m) (apply) clamped to the box [lo, hi], and beyond, y's
// distance past the box per parameter (0 inside it). The sampler evaluates the likelihood at
// the clamped point and adds wallLogDensity: the likelihood beyond the box is not the
// subject's (the box is the prior's support), and it can exceed the maximum inside it by
// thousands of nats (docs/tutorial.md's subject 2: 13,300 against 7,612 at a temperature of
// 1e-23 and an observation noise of 600), which drew a chain to a corner of the box whose
// image lies out there.
func (a *adjustment) boxed(x, lo, hi []float64) (y, beyond []float64) {
	y = a.apply(x)
	beyond = make([]float64, len(y))
	for k := range y {
		c := min(max(y[k], lo[k]), hi[k])
		beyond[k], y[k] = y[k]-c, c
	}
	return y, beyond
}

// wallLogDensity returns −½ Σ_k (beyond_k / wall_k)² and its gradient in y: the log-density
// that replaces the likelihood's change past the box (boxed), continuous at its bounds. The
// likelihood's gradient in a coordinate past the box is 0 (it is evaluated on the bound), so
// the gradient there is the wall's alone.
func (a *adjustment) wallLogDensity(beyond []float64) (float64, []float64) {
	ll, g := 0.0, make([]float64, len(beyond))
	for k, d := range beyond {
		if d != 0 {
			ll -= 0.5 * (d / a.wall[k]) * (d / a.wall[k])
			g[k] = -d / (a.wall[k] * a.wall[k])
		}
	}
	return ll, g
}

// newAdjustment returns the curvature adjustment at center for the Hessian H of the negative
// log-likelihood and the covariance J of the total score. The adjusted curvature is
// H J⁻¹ H, the inverse of the sandwich, but never more than H in any direction: with
// H = L Lᵀ and L⁻¹ (H J⁻¹ H) L⁻ᵀ = Q Λ Qᵀ, the eigenvalues are clipped to Λ' = min(Λ, 1)
// and C = L⁻ᵀ Q Λ'^½ Qᵀ Lᵀ, so that Cᵀ H C = L Q Λ' Qᵀ Lᵀ (H J⁻¹ H itself where no
// eigenvalue exceeds 1, and C = I where all do). The adjustment widens the likelihood where the trials' scores
// vary more than its curvature says and leaves it alone where they vary less: there J, from
// tens of trials, is mostly noise or the likelihood is not quadratic (a parameter the data
// hardly constrain, its maximum near a bound), and narrowing it made the posterior miss the
// truth (pendulum, observation noise 0.04: posterior 90 % interval [0.010, 0.017] against
// [0.011, 0.045] unadjusted). It returns an error when H or J is not positive definite.
func newAdjustment(center []float64, H, J [][]float64) (*adjustment, error) {
	p := len(center)
	if len(H) != p || len(J) != p {
		return nil, fmt.Errorf("curvature adjustment: %d parameters, Hessian %d×%d, score covariance %d×%d", p, len(H), len(H), len(J), len(J))
	}
	var cH, cJ mat.Cholesky
	if !cH.Factorize(symOf(H)) {
		return nil, fmt.Errorf("the Hessian of the likelihood at its maximum is not positive definite")
	}
	if !cJ.Factorize(symOf(J)) {
		return nil, fmt.Errorf("the covariance of the trials' scores is not positive definite")
	}
	var L mat.TriDense
	cH.LTo(&L)
	// W = L⁻¹ (H J⁻¹ H) L⁻ᵀ = Lᵀ J⁻¹ L, since H = L Lᵀ.
	var JiL, W mat.Dense
	if err := cJ.SolveTo(&JiL, &L); err != nil {
		return nil, fmt.Errorf("curvature adjustment: %v", err)
	}
	W.Mul(L.T(), &JiL)
	return whitenedAdjustment(AdjustCurvature, center, center, symOf(H), &L, &W)
}

// newBootstrapAdjustment returns the bootstrap's adjustment (AdjustBootstrap) at center θ̂,
// its maximum moved to mode m = θ̂ − Bias, for the Hessian H of the negative log-likelihood,
// the covariance J of the total score (nil where it cannot be estimated) and sd, D's entries:
// the bootstrap's standard errors times t/z. The adjusted curvature is Σ⁻¹, Σ = D R D with R
// the correlations of H⁻¹ J H⁻¹ (or H⁻¹), clipped as newAdjustment's so that it is never more
// than H in any direction. The parameters k with nuisance[k] (nil: none) keep the sandwich's
// (or H⁻¹'s) standard deviation and their centre: their mode and sd are not used. It returns
// an error when H or J is not positive definite or a used sd is not positive and finite.
func newBootstrapAdjustment(center, mode, sd []float64, nuisance []bool, H, J [][]float64) (*adjustment, error) {
	p := len(center)
	if len(mode) != p || len(sd) != p || len(H) != p || (J != nil && len(J) != p) || (nuisance != nil && len(nuisance) != p) {
		return nil, fmt.Errorf("bootstrap adjustment: %d parameters, %d modes, %d standard errors, Hessian %d×%d", p, len(mode), len(sd), len(H), len(H))
	}
	mode, sd = slices.Clone(mode), slices.Clone(sd)
	for k, v := range sd {
		if nuisance != nil && nuisance[k] {
			continue
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bootstrap adjustment: standard error %d is %g", k, v)
		}
	}
	var cH mat.Cholesky
	if !cH.Factorize(symOf(H)) {
		return nil, fmt.Errorf("the Hessian of the likelihood at its maximum is not positive definite")
	}
	var S mat.Dense // the sandwich H⁻¹ J H⁻¹, or H⁻¹
	var Hi mat.SymDense
	if err := cH.InverseTo(&Hi); err != nil {
		return nil, fmt.Errorf("bootstrap adjustment: %v", err)
	}
	if J == nil {
		S.CloneFrom(&Hi)
	} else {
		Js := symOf(J)
		if !new(mat.Cholesky).Factorize(Js) {
			return nil, fmt.Errorf("the covariance of the trials' scores is not positive definite")
		}
		S.Product(&Hi, Js, &Hi)
	}
	for k := range nuisance {
		if nuisance[k] {
			mode[k], sd[k] = center[k], math.Sqrt(S.At(k, k))
		}
	}
	Sigma := mat.NewSymDense(p, nil) // D R D
	for a := range p {
		for c := a; c < p; c++ {
			r := S.At(a, c) / math.Sqrt(S.At(a, a)*S.At(c, c))
			Sigma.SetSym(a, c, sd[a]*r*sd[c])
		}
	}
	return towardCovariance(center, mode, &cH, symOf(H), Sigma)
}

// towardCovariance returns the bootstrap's adjustment at center with mode mode whose adjusted
// curvature is Sigma⁻¹ for the Hessian H (cH its Cholesky factor), clipped to be never more
// than H in any direction (whitenedAdjustment).
func towardCovariance(center, mode []float64, cH *mat.Cholesky, H, Sigma *mat.SymDense) (*adjustment, error) {
	if !new(mat.Cholesky).Factorize(Sigma) {
		return nil, fmt.Errorf("bootstrap adjustment: the target covariance is not positive definite")
	}
	var L mat.TriDense
	cH.LTo(&L)
	// W = L⁻¹ Σ⁻¹ L⁻ᵀ = (Lᵀ Σ L)⁻¹.
	var LtSL, W mat.Dense
	LtSL.Product(L.T(), Sigma, &L)
	if err := W.Inverse(&LtSL); err != nil {
		return nil, fmt.Errorf("bootstrap adjustment: %v", err)
	}
	return whitenedAdjustment(AdjustBootstrap, center, mode, H, &L, &W)
}

// newFlatBootstrapAdjustment is newBootstrapAdjustment's stand-in where the Hessian H is not
// positive definite (the climb ended short of a maximum, or on a ridge): H with its
// eigenvalues raised to 10⁻⁶ of the largest, and Σ = D² without correlations, H's being
// unreliable there. Its curvature is never more than the raised H's, so that in the
// directions where H is flat the likelihood is left as it is.
func newFlatBootstrapAdjustment(center, mode, sd []float64, H [][]float64) (*adjustment, error) {
	p := len(center)
	var eig mat.EigenSym
	if !eig.Factorize(symOf(H), true) {
		return nil, fmt.Errorf("bootstrap adjustment: eigendecomposition of the Hessian failed")
	}
	lambda := eig.Values(nil)
	top := slices.Max(lambda)
	if !(top > 0) {
		return nil, fmt.Errorf("the Hessian at the best climb's end has no positive curvature")
	}
	var Q mat.Dense
	eig.VectorsTo(&Q)
	raised := mat.NewDiagDense(p, nil)
	for i, l := range lambda {
		raised.SetDiag(i, math.Max(l, 1e-6*top))
	}
	var Hr mat.Dense
	Hr.Product(&Q, raised, Q.T())
	Hs := symOf(denseRows(&Hr))
	var cH mat.Cholesky
	if !cH.Factorize(Hs) {
		return nil, fmt.Errorf("bootstrap adjustment: the raised Hessian is not positive definite")
	}
	Sigma := mat.NewSymDense(p, nil)
	for k, v := range sd {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bootstrap adjustment: standard error %d is %g", k, v)
		}
		Sigma.SetSym(k, k, v*v)
	}
	return towardCovariance(center, mode, &cH, Hs, Sigma)
}

// whitenedAdjustment returns the adjustment of kind with C = L⁻ᵀ Q Λ'^½ Qᵀ Lᵀ for the target
// curvature's whitened form W = L⁻¹ P L⁻ᵀ = Q Λ Qᵀ (H = L Lᵀ) and Λ' = min(Λ, 1).
func whitenedAdjustment(kind string, center, mode []float64, H *mat.SymDense, L *mat.TriDense, W *mat.Dense) (*adjustment, error) {
	p := len(center)
	var eig mat.EigenSym
	if !eig.Factorize(symOf(denseRows(W)), true) {
		return nil, fmt.Errorf("%s adjustment: eigendecomposition failed", kind)
	}
	lambda := eig.Values(nil)
	var Q mat.Dense
	eig.VectorsTo(&Q)
	root := mat.NewDiagDense(p, nil) // Λ'^½
	for i, l := range lambda {
		root.SetDiag(i, math.Sqrt(math.Min(l, 1)))
	}
	var R, LtR, C mat.Dense
	R.Product(&Q, root, Q.T()) // Q Λ'^½ Qᵀ
	LtR.Mul(&R, L.T())
	if err := C.Solve(L.T(), &LtR); err != nil { // Lᵀ C = Q Λ'^½ Qᵀ Lᵀ
		return nil, fmt.Errorf("%s adjustment: %v", kind, err)
	}
	// The marginal standard deviations' ratio, adjusted over unadjusted: the adjusted
	// likelihood's covariance is C⁻¹ H⁻¹ C⁻ᵀ.
	var Hi, Ci, adjCov mat.Dense
	if err := Hi.Inverse(H); err != nil {
		return nil, fmt.Errorf("%s adjustment: %v", kind, err)
	}
	if err := Ci.Inverse(&C); err != nil {
		return nil, fmt.Errorf("%s adjustment: %v", kind, err)
	}
	adjCov.Product(&Ci, &Hi, Ci.T())
	ratio, wall := make([]float64, p), make([]float64, p)
	for k := range ratio {
		ratio[k] = math.Sqrt(adjCov.At(k, k) / Hi.At(k, k))
		wall[k] = 1 / math.Sqrt(H.At(k, k))
	}
	return &adjustment{kind: kind, center: slices.Clone(center), mode: slices.Clone(mode), C: &C, sdRatio: ratio, wall: wall,
		cov: denseRows(&adjCov)}, nil
}

// symOf returns the symmetric part of A as a SymDense.
func symOf(A [][]float64) *mat.SymDense {
	p := len(A)
	S := mat.NewSymDense(p, nil)
	for a := range p {
		for c := a; c < p; c++ {
			S.SetSym(a, c, (A[a][c]+A[c][a])/2)
		}
	}
	return S
}

func denseRows(A *mat.Dense) [][]float64 {
	r, c := A.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = make([]float64, c)
		for j := range out[i] {
			out[i][j] = A.At(i, j)
		}
	}
	return out
}

// apply returns θ̂ + C(x − m).
func (a *adjustment) apply(x []float64) []float64 {
	p := len(x)
	out := make([]float64, p)
	for i := range p {
		out[i] = a.center[i]
		for j := range p {
			out[i] += a.C.At(i, j) * (x[j] - a.mode[j])
		}
	}
	return out
}

// pull returns Cᵀ g, the gradient at x of ℓ(apply(x)) given the gradient g of ℓ at apply(x).
func (a *adjustment) pull(g []float64) []float64 {
	p := len(g)
	out := make([]float64, p)
	for j := range p {
		for i := range p {
			out[j] += a.C.At(i, j) * g[i]
		}
	}
	return out
}
