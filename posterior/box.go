package posterior

import (
	"fmt"
	"math"
)

// Box maps parameters bounded to lo < s < hi in their fitting scale (log10 or linear, as the
// caller scaled them) to ℝ, coordinate by coordinate, by the logit
//
//	y = logit((s − lo)/(hi − lo)),   s = lo + (hi − lo)·σ(y),
//
// where σ is the logistic function. The zero value is not usable; make one with NewBox.
type Box struct {
	lo, hi []float64
}

// NewBox returns the Box with the given bounds. It returns an error unless lo and hi have
// the same length ≥ 1 and every bound is finite with lo[i] < hi[i].
func NewBox(lo, hi []float64) (Box, error) {
	if len(lo) == 0 || len(lo) != len(hi) {
		return Box{}, fmt.Errorf("posterior: box with %d lower and %d upper bounds", len(lo), len(hi))
	}
	for i := range lo {
		if !finite(lo[i]) || !finite(hi[i]) || !(lo[i] < hi[i]) {
			return Box{}, fmt.Errorf("posterior: box bounds [%g, %g] of parameter %d: need finite lo < hi", lo[i], hi[i], i)
		}
	}
	return Box{lo: append([]float64(nil), lo...), hi: append([]float64(nil), hi...)}, nil
}

// Dim returns the number of parameters.
func (b Box) Dim() int { return len(b.lo) }

// Lo returns a copy of the lower bounds.
func (b Box) Lo() []float64 { return append([]float64(nil), b.lo...) }

// Hi returns a copy of the upper bounds.
func (b Box) Hi() []float64 { return append([]float64(nil), b.hi...) }

func (b Box) check(x []float64) {
	if len(x) != len(b.lo) {
		panic(fmt.Sprintf("posterior: point of length %d for a box of dimension %d", len(x), len(b.lo)))
	}
}

// To returns the unconstrained point y of the point s in the fitting scale: −Inf or +Inf in
// the coordinates where s is on a bound, NaN where it is outside the box. It panics if
// len(s) != Dim().
func (b Box) To(s []float64) []float64 {
	b.check(s)
	y := make([]float64, len(s))
	for i, si := range s {
		u := (si - b.lo[i]) / (b.hi[i] - b.lo[i])
		switch {
		case u == 0:
			y[i] = math.Inf(-1)
		case u == 1:
			y[i] = math.Inf(1)
		case u > 0 && u < 1:
			y[i] = math.Log(u) - math.Log1p(-u)
		default:
			y[i] = math.NaN()
		}
	}
	return y
}

// From returns the point s in the fitting scale of the unconstrained point y; s lies in the
// closed box (on a bound only where |y| is so large that σ(y) rounds to 0 or 1). It panics
// if len(y) != Dim().
func (b Box) From(y []float64) []float64 {
	b.check(y)
	s := make([]float64, len(y))
	for i, yi := range y {
		s[i] = b.lo[i] + (b.hi[i]-b.lo[i])*sigmoid(yi)
	}
	return s
}

// LogJacobian returns log |det ∂s/∂y| = Σᵢ log(hiᵢ − loᵢ) + log σ(yᵢ) + log(1 − σ(yᵢ)), the
// term that turns a density in the fitting scale into one on ℝ; it stays finite for any
// finite y. It panics if len(y) != Dim().
func (b Box) LogJacobian(y []float64) float64 {
	b.check(y)
	var lj float64
	for i, yi := range y {
		lj += math.Log(b.hi[i]-b.lo[i]) - softplus(yi) - softplus(-yi)
	}
	return lj
}

// LogJacobianGrad returns the gradient of LogJacobian at y: 1 − 2σ(yᵢ) in coordinate i. It
// panics if len(y) != Dim().
func (b Box) LogJacobianGrad(y []float64) []float64 {
	b.check(y)
	g := make([]float64, len(y))
	for i, yi := range y {
		g[i] = 1 - 2*sigmoid(yi)
	}
	return g
}

// Prior is the prior of one parameter in its fitting scale, restricted to the box: uniform
// on the box when SD is 0, else a normal(Mu, SD) density truncated to the box (unnormalized
// for the truncation, which does not change the posterior).
type Prior struct {
	Mu, SD float64
}

// BoxTarget returns the Target on ℝ^Dim() of the posterior whose log likelihood in the
// fitting scale is f: at an unconstrained point y with s = b.From(y) its log density is
//
//	f(s) + Σᵢ log priorᵢ(sᵢ) + b.LogJacobian(y),
//
// with the gradient by the chain rule. priors is nil (uniform priors on the box) or has one
// Prior per parameter. The target's Scale maps draws back to the fitting scale. A value of f
// that is not finite is a point of zero density, as for GroupFunc. BoxTarget returns an error
// if b is not a valid box, groups < 1, f is nil, or priors has the wrong length or an SD
// that is negative or not finite or a Mu that is not finite.
func BoxTarget(b Box, groups int, f GroupFunc, priors []Prior) (*Target, error) {
	dim := b.Dim()
	if dim == 0 {
		return nil, fmt.Errorf("posterior: empty box")
	}
	if groups < 1 {
		return nil, fmt.Errorf("posterior: %d groups < 1", groups)
	}
	if f == nil {
		return nil, fmt.Errorf("posterior: nil log density")
	}
	if priors != nil && len(priors) != dim {
		return nil, fmt.Errorf("posterior: %d priors for %d parameters", len(priors), dim)
	}
	for i, p := range priors {
		if !finite(p.Mu) || !finite(p.SD) || p.SD < 0 {
			return nil, fmt.Errorf("posterior: prior %d: normal(%g, %g): need a finite mean and a finite sd ≥ 0", i, p.Mu, p.SD)
		}
	}
	priors = append([]Prior(nil), priors...)
	var logUniform float64 // Σ log(1/(hi − lo)) over the parameters with uniform priors
	for i := range dim {
		if priors == nil || priors[i].SD == 0 {
			logUniform -= math.Log(b.hi[i] - b.lo[i])
		}
	}
	wrapped := func(groups []int, y [][]float64) ([]float64, [][]float64, error) {
		s := make([][]float64, len(y))
		for k, yk := range y {
			s[k] = b.From(yk)
		}
		logp, grad, err := f(groups, s)
		if err != nil {
			return nil, nil, err
		}
		if len(logp) != len(y) || len(grad) != len(y) {
			return nil, nil, fmt.Errorf("posterior: log density returned %d values and %d gradients for %d points",
				len(logp), len(grad), len(y))
		}
		outLogp := make([]float64, len(y))
		outGrad := make([][]float64, len(y))
		for k, yk := range y {
			if !finite(logp[k]) {
				outLogp[k] = math.Inf(-1)
				continue
			}
			if len(grad[k]) != dim {
				return nil, nil, fmt.Errorf("posterior: log density returned a gradient of length %d at point %d, dimension %d",
					len(grad[k]), k, dim)
			}
			lp := logp[k] + logUniform + b.LogJacobian(yk)
			g := make([]float64, dim)
			for i, yi := range yk {
				gs := grad[k][i] // ∂/∂sᵢ of the log density in the fitting scale
				if priors != nil && priors[i].SD > 0 {
					z := (s[k][i] - priors[i].Mu) / priors[i].SD
					lp += -0.5*z*z - math.Log(priors[i].SD) - 0.5*math.Log(2*math.Pi)
					gs -= z / priors[i].SD
				}
				sg := sigmoid(yi)
				g[i] = gs*(b.hi[i]-b.lo[i])*sg*(1-sg) + 1 - 2*sg
			}
			outLogp[k], outGrad[k] = lp, g
		}
		return outLogp, outGrad, nil
	}
	t := NewGroupTarget(dim, groups, wrapped)
	box := b
	t.box = &box
	return t, nil
}

// sigmoid returns 1/(1 + e^−y) without overflow.
func sigmoid(y float64) float64 {
	if y >= 0 {
		return 1 / (1 + math.Exp(-y))
	}
	e := math.Exp(y)
	return e / (1 + e)
}

// softplus returns log(1 + e^y) without overflow.
func softplus(y float64) float64 {
	return math.Max(y, 0) + math.Log1p(math.Exp(-math.Abs(y)))
}
