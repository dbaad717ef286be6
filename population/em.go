package population

// Empirical Bayes by expectation–maximisation with Laplace approximations (Huys et al. 2011,
// PLoS Comput Biol 7:e1002028, "emfit"): every subject's fitted parameters θ_i, in their
// fitting scales, are drawn from the population normal N(X_i β, D), X_i the subject's row of
// the design matrix and D = diag(v) the population's variances. The E-step is a batched MAP
// fit of every subject under the current prior (fit.Options.Priors), warm-started from the
// last step's estimates, with the posterior approximated at the MAP m_i by a normal of
// covariance Σ_i = (H_i + D⁻¹)⁻¹ (H_i the Hessian of the negative log-likelihood); the
// M-step maximises the expected complete-data log-likelihood in closed form:
//
//	β_k = (XᵀX)⁻¹ Xᵀ m_{·k},   v_k = (1/n) Σ_i [(m_ik − X_i β_k)² + Σ_i,kk]
//
// for every parameter k. The log marginal likelihood of the population, Σ_i log p(D_i | β, D),
// is the sum of the subjects' Laplace log evidences under the prior (fit.Result.LogEvidence).

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"gonum.org/v1/gonum/mat"
)

// Estimate is the population: Beta[k][j] is the effect of the design's column j on the mean
// of fitted parameter k (fitting scale), Var[k] the variance of parameter k across subjects.
type Estimate struct {
	Beta [][]float64 `json:"beta"`
	Var  []float64   `json:"var"`
}

// Mean returns the population mean of every fitted parameter for the design row x.
func (p Estimate) Mean(x []float64) []float64 {
	m := make([]float64, len(p.Beta))
	for k, b := range p.Beta {
		for j, v := range b {
			m[k] += v * x[j]
		}
	}
	return m
}

// SubjectFit is one subject's E-step: its MAP estimate under the population prior and the
// Laplace approximation of its posterior there, all in fitting scale over the fitted
// parameters.
type SubjectFit struct {
	Subject     string      `json:"subject"`
	MAP         []float64   `json:"map"`
	Cov         [][]float64 `json:"cov"`     // (H + D⁻¹)⁻¹, made positive definite where it was not
	Hessian     [][]float64 `json:"hessian"` // of the negative log-likelihood at MAP
	LogLik      float64     `json:"loglik"`
	LogEvidence float64     `json:"log_evidence"` // Laplace, under the step's prior
	Evaluations int         `json:"evaluations"`
	Note        string      `json:"note,omitempty"` // what was approximated, if anything
}

// Step is one EM iteration: the E-step's fits under the population Prior and the log
// marginal likelihood of all subjects under it.
type Step struct {
	Iter        int          `json:"iter"`
	Prior       Estimate     `json:"prior"`
	LogMarginal float64      `json:"log_marginal"`
	Subjects    []SubjectFit `json:"subjects"`
	Evaluations int          `json:"evaluations"`
	Seconds     float64      `json:"seconds"`
}

// EStep fits every subject (subjects[i] has design row X[i]) under the prior N(X_i β, D) of
// pop with the fitter options opts (their Priors, Starts, Uncertainty and CheckDraws
// replaced), starting the first restart of subject i at starts[i] (fitting scale; nil for a
// random start). It returns an error naming the subjects whose fit failed.
func EStep(ctx context.Context, e *likelihood.Evaluator, opts fit.Options, subjects []fit.Subject, X [][]float64,
	pop Estimate, starts [][]float64) ([]SubjectFit, error) {
	opts.Priors = map[string]fit.Prior{}
	opts.Starts = map[string]map[string]float64{}
	opts.Uncertainty, opts.CheckDraws = fit.UncertaintyHessian, 0
	names, err := fittedNames(e, opts)
	if err != nil {
		return nil, err
	}
	for i, s := range subjects {
		opts.Priors[s.ID] = fit.Prior{Mean: pop.Mean(X[i]), Var: pop.Var}
		if starts != nil && starts[i] != nil {
			opts.Starts[s.ID] = map[string]float64{}
			for k, name := range names {
				opts.Starts[s.ID][name] = starts[i][k]
			}
		}
	}
	f, err := fit.New(e, opts)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, s := range subjects {
		index[s.ID] = i
	}
	out := make([]SubjectFit, len(subjects))
	var failed []string
	err = f.Fit(ctx, subjects, func(r fit.Result) error {
		i := index[r.Subject]
		if r.Err != "" {
			failed = append(failed, fmt.Sprintf("%s (%s)", r.Subject, r.Err))
			return nil
		}
		sf := SubjectFit{Subject: r.Subject, Hessian: r.Hessian, LogLik: r.LogLik, Evaluations: r.Evaluations}
		for _, name := range names {
			sf.MAP = append(sf.MAP, r.Scaled[name])
		}
		if r.Hessian == nil || r.LogEvidence == nil {
			uninformative(&sf, opts.Priors[r.Subject])
		} else {
			sf.Cov, sf.LogEvidence = posteriorCov(r.Hessian, pop.Var), *r.LogEvidence
		}
		out[i] = sf
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("the E-step's fit failed for %d subject(s): %v", len(failed), failed)
	}
	return out, nil
}

// uninformative makes sf the E-step of a subject without a usable Hessian at its MAP (a
// likelihood not finite next to it, or a posterior curvature that is not positive definite):
// its data count as uninformative about its parameters, so its posterior covariance is the
// prior's and its Laplace evidence ll + log N(x; m, D) + p/2·log 2π + ½·log det D, which is
// ll − ½ Σ (x−m)²/v.
func uninformative(sf *SubjectFit, prior fit.Prior) {
	p := len(sf.MAP)
	sf.Hessian, sf.Cov = zeros(p), zeros(p)
	precision := zeros(p)
	for k, v := range prior.Var {
		sf.Cov[k][k], precision[k][k] = v, 1/v
	}
	sf.LogEvidence, _ = fit.LaplaceEvidence(sf.LogLik, prior.LogDensity(sf.MAP), precision)
	sf.Note = "no usable Hessian at the MAP: the subject's posterior is taken as the population's spread"
}

// fittedNames returns the names of the parameters a fitter with opts fits.
func fittedNames(e *likelihood.Evaluator, opts fit.Options) ([]string, error) {
	sel, err := fit.NewSelection(e, opts.Infer, opts.Fix)
	if err != nil {
		return nil, err
	}
	return sel.Names(), nil
}

// posteriorCov returns (H + diag(1/v))⁻¹, with the eigenvalues of H + diag(1/v) raised to
// at least 1e-9 of the largest prior precision where it is not positive definite (a MAP on a
// bound of the box).
func posteriorCov(H [][]float64, v []float64) [][]float64 {
	p := len(v)
	A := mat.NewSymDense(p, nil)
	floor := 0.0
	for a := range p {
		for c := a; c < p; c++ {
			A.SetSym(a, c, 0.5*(H[a][c]+H[c][a]))
		}
		A.SetSym(a, a, H[a][a]+1/v[a])
		floor = math.Max(floor, 1e-9/v[a])
	}
	var eig mat.EigenSym
	if !eig.Factorize(A, true) {
		panic("population: eigendecomposition of the posterior precision failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	cov := make([][]float64, p)
	for a := range p {
		cov[a] = make([]float64, p)
		for c := range p {
			for l, lam := range vals {
				cov[a][c] += vecs.At(a, l) * vecs.At(c, l) / math.Max(lam, floor)
			}
		}
	}
	return cov
}

// Initial returns the population that starts EM: per parameter the least-squares effects of
// the design X on the independent estimates est[i] (fitting scale) and the residuals'
// variance, at least minVar.
func Initial(X, est [][]float64, minVar float64) Estimate {
	fits := make([]SubjectFit, len(est))
	for i, x := range est {
		fits[i] = SubjectFit{MAP: x, Cov: zeros(len(x))}
	}
	return MStep(X, fits, minVar)
}

func zeros(p int) [][]float64 {
	z := make([][]float64, p)
	for a := range z {
		z[a] = make([]float64, p)
	}
	return z
}

// MStep returns the population that maximises the expected complete-data log-likelihood
// given the subjects' Laplace posteriors (the file comment's update), variances at least
// minVar. It panics when XᵀX is singular (Design refuses such designs).
func MStep(X [][]float64, fits []SubjectFit, minVar float64) Estimate {
	n, q, p := len(X), len(X[0]), len(fits[0].MAP)
	Xm := mat.NewDense(n, q, nil)
	for i, row := range X {
		Xm.SetRow(i, row)
	}
	var xtx mat.Dense
	xtx.Mul(Xm.T(), Xm)
	var inv mat.Dense
	if err := inv.Inverse(&xtx); err != nil {
		panic(fmt.Sprintf("population: the design is singular: %v", err))
	}
	pop := Estimate{Beta: make([][]float64, p), Var: make([]float64, p)}
	for k := range p {
		m := mat.NewVecDense(n, nil)
		for i, sf := range fits {
			m.SetVec(i, sf.MAP[k])
		}
		var xtm, beta mat.VecDense
		xtm.MulVec(Xm.T(), m)
		beta.MulVec(&inv, &xtm)
		pop.Beta[k] = mat.Col(nil, 0, &beta)
		ss := 0.0
		for i, sf := range fits {
			r := sf.MAP[k] - mat.Dot(Xm.RowView(i), &beta)
			ss += r*r + sf.Cov[k][k]
		}
		pop.Var[k] = math.Max(ss/float64(n), minVar)
	}
	return pop
}

// Config says how Run fits a population.
type Config struct {
	Evaluator *likelihood.Evaluator
	// Fit are the options of the E-steps' fits (Seed, Infer, Fix, MaxIter, …; Restarts is
	// replaced): the first E-step starts at the independent estimates, later ones at the
	// previous step's, each with WarmRestarts restarts (1 if 0: the start alone; the
	// independent fits' restarts have searched the box already).
	Fit          fit.Options
	WarmRestarts int
	Subjects     []fit.Subject
	X            [][]float64 // design, one row per subject
	MaxIter      int         // EM iterations at most; 0 means 50
	// Tol: EM stops when the log marginal likelihood rises by less than Tol (nats); 0 means 0.01.
	Tol    float64
	MinVar float64 // the least population variance in fitting scale; 0 means 1e-4 (an SD of 0.01)
}

func (c *Config) defaults() {
	if c.MaxIter == 0 {
		c.MaxIter = 50
	}
	if c.Tol == 0 {
		c.Tol = 0.01
	}
	if c.MinVar == 0 {
		c.MinVar = 1e-4
	}
	if c.WarmRestarts == 0 {
		c.WarmRestarts = 1
	}
}

// Run runs EM from the population start (Initial of the independent estimates) whose E-step
// starts at starts (the independent estimates), or from the step last (a resumed run; nil to
// begin), calling emit after every E-step. It returns the last step: the one that converged
// (its log marginal likelihood rose by less than Tol), or the MaxIter-th, and whether it
// converged. An error of emit stops it.
func Run(ctx context.Context, c Config, start Estimate, starts [][]float64, last *Step, emit func(Step) error) (Step, bool, error) {
	c.defaults()
	pop, iter, prev := start, 1, math.Inf(-1)
	if last != nil {
		starts = make([][]float64, len(last.Subjects))
		for i, sf := range last.Subjects {
			starts[i] = sf.MAP
		}
		pop, iter, prev = MStep(c.X, last.Subjects, c.MinVar), last.Iter+1, last.LogMarginal
	}
	opts := c.Fit
	var step Step
	opts.Restarts = c.WarmRestarts
	for ; iter <= c.MaxIter; iter++ {
		t0 := time.Now()
		fits, err := EStep(ctx, c.Evaluator, opts, c.Subjects, c.X, pop, starts)
		if err != nil {
			return Step{}, false, fmt.Errorf("EM iteration %d: %w", iter, err)
		}
		step = Step{Iter: iter, Prior: pop, Subjects: fits, Seconds: time.Since(t0).Seconds()}
		for _, sf := range fits {
			step.LogMarginal += sf.LogEvidence
			step.Evaluations += sf.Evaluations
		}
		if err := emit(step); err != nil {
			return step, false, err
		}
		if step.LogMarginal-prev < c.Tol {
			return step, true, nil
		}
		prev = step.LogMarginal
		starts = make([][]float64, len(fits))
		for i, sf := range fits {
			starts[i] = sf.MAP
		}
		pop = MStep(c.X, fits, c.MinVar)
	}
	return step, false, nil
}
