package fit

import "math"

// Prior is a normal prior on a subject's fitted parameters in their fitting scale (log10 or
// linear), independent across parameters: parameter k (in Fitter.Fitted's order) has mean
// Mean[k] and variance Var[k] > 0. A population fit's E-step fits every subject under the
// population's current Prior (Options.Priors).
type Prior struct {
	Mean, Var []float64
}

// penalty returns −log of the prior's density at x, up to its constant, ½ Σ (x−m)²/v, and
// its gradient.
func (p Prior) penalty(x []float64) (float64, []float64) {
	pen, g := 0.0, make([]float64, len(x))
	for k, v := range x {
		d := v - p.Mean[k]
		pen += 0.5 * d * d / p.Var[k]
		g[k] = d / p.Var[k]
	}
	return pen, g
}

// LogDensity returns the prior's log density at x.
func (p Prior) LogDensity(x []float64) float64 {
	pen, _ := p.penalty(x)
	lp := -pen
	for _, v := range p.Var {
		lp -= 0.5 * math.Log(2*math.Pi*v)
	}
	return lp
}

// logEvidence returns the Laplace approximation of the subject's log model evidence at its
// estimate x (Result.LogEvidence): ll + log p(x) + p/2·log 2π − ½·log det(H + P), H the
// Hessian of the negative log-likelihood and P the prior's precision (none for the uniform
// prior over the box, whose log density is −Σ log(hi − lo)). nil when H is nil or H + P is
// not positive definite.
func (f *Fitter) logEvidence(subject string, x []float64, ll float64, H [][]float64) *float64 {
	if H == nil {
		return nil
	}
	post := make([][]float64, len(H))
	for a := range H {
		post[a] = append([]float64(nil), H[a]...)
	}
	var lp float64
	if prior, ok := f.opts.Priors[subject]; ok {
		lp = prior.LogDensity(x)
		for k := range post {
			post[k][k] += 1 / prior.Var[k]
		}
	} else {
		for k := range f.infer {
			lp -= math.Log(f.hi[k] - f.lo[k])
		}
	}
	ev, ok := LaplaceEvidence(ll, lp, post)
	if !ok {
		return nil
	}
	return &ev
}

// LaplaceEvidence returns the Laplace approximation of a log model evidence, ll + logPrior +
// p/2·log 2π − ½·log det A, from the log-likelihood ll and log prior density logPrior at the
// mode and the p×p precision A there (the Hessian of the negative log posterior); ok is false
// when A is not positive definite.
func LaplaceEvidence(ll, logPrior float64, A [][]float64) (ev float64, ok bool) {
	L, ok := cholesky(A)
	if !ok {
		return 0, false
	}
	logDet := 0.0
	for k := range L {
		logDet += 2 * math.Log(L[k][k])
	}
	return ll + logPrior + 0.5*float64(len(A))*math.Log(2*math.Pi) - 0.5*logDet, true
}
