package population

// Standard errors of the population's effects and spreads. Under the Laplace approximation a
// subject's likelihood is a normal in θ_i of precision H_i, so given the population its
// estimate is distributed as N(X_i β, D + H_i⁻¹), and the information of the log marginal
// likelihood is, with W_i = (D + H_i⁻¹)⁻¹ = D⁻¹ − D⁻¹ Σ_i D⁻¹ (Woodbury, Σ_i the subject's
// posterior covariance (H_i + D⁻¹)⁻¹: defined where H_i is singular, a subject whose data say
// nothing adding nothing):
//
//	I(β)_{kj,lj'} = Σ_i W_i,kl X_ij X_ij'        I(v)_{kl} = ½ Σ_i W_i,kl²
//
// (the Fisher information of a normal's mean and of its variances, as in random-effects
// meta-analysis). The effects' intervals and p-values use Student's t with n − q degrees of
// freedom (n subjects, q design columns), which the normal's would understate at 10–40
// subjects.

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Effect is one population effect: the coefficient of design column Term on the mean of
// parameter Param, in its fitting scale, with its standard error, 95 % interval and the
// two-sided p-value of "no effect" (Student's t with DF degrees of freedom; nil for the
// intercept, whose value 0 means nothing in particular).
type Effect struct {
	Param    string     `json:"param"`
	Term     string     `json:"term"`
	Estimate float64    `json:"estimate"`
	SE       float64    `json:"se"`
	CI95     [2]float64 `json:"ci95"`
	P        *float64   `json:"p,omitempty"`
	DF       int        `json:"df"`
}

// Spread is the population's standard deviation of parameter Param across subjects, in its
// fitting scale, with its standard error (delta method) and 95 % interval: the square roots of
// the variance's Wald interval, its lower end cut at 0 (a spread estimated near 0 reads
// [0, upper]).
type Spread struct {
	Param string     `json:"param"`
	SD    float64    `json:"sd"`
	SE    float64    `json:"se"`
	CI95  [2]float64 `json:"ci95"`
}

// Inference returns the effects and spreads of the population pop of the subjects' E-step
// fits, design X (columns named columns) and fitted parameters names, with standard errors
// from the information of the log marginal likelihood (the file comment). It returns an error
// when an information matrix is singular (too few subjects, or none whose data inform a
// parameter).
func Inference(X [][]float64, columns, names []string, pop Estimate, fits []SubjectFit) ([]Effect, []Spread, error) {
	n, q, p := len(X), len(columns), len(names)
	if n <= q {
		return nil, nil, fmt.Errorf("%d subjects for %d population terms: the effects' errors need more subjects than terms", n, q)
	}
	Ib := mat.NewSymDense(p*q, nil)
	Iv := mat.NewSymDense(p, nil)
	for i, sf := range fits {
		W := precisionOfEstimate(sf.Cov, pop.Var)
		for k := range p {
			for l := k; l < p; l++ {
				Iv.SetSym(k, l, Iv.At(k, l)+0.5*W[k][l]*W[k][l])
				for j := range q {
					for jj := range q {
						a, b := k*q+j, l*q+jj
						if a > b && k == l {
							continue
						}
						Ib.SetSym(a, b, Ib.At(a, b)+W[k][l]*X[i][j]*X[i][jj])
					}
				}
			}
		}
	}
	covB, err := symInverse(Ib)
	if err != nil {
		return nil, nil, fmt.Errorf("the population effects' information: %w", err)
	}
	covV, err := symInverse(Iv)
	if err != nil {
		return nil, nil, fmt.Errorf("the population spreads' information: %w", err)
	}
	df := n - q
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	crit := tq.Quantile(0.975)
	var effects []Effect
	for k, name := range names {
		for j, col := range columns {
			est, se := pop.Beta[k][j], math.Sqrt(covB.At(k*q+j, k*q+j))
			ef := Effect{Param: name, Term: col, Estimate: est, SE: se, CI95: [2]float64{est - crit*se, est + crit*se}, DF: df}
			if j > 0 {
				p := 2 * tq.Survival(math.Abs(est)/se)
				ef.P = &p
			}
			effects = append(effects, ef)
		}
	}
	spreads := make([]Spread, p)
	for k, name := range names {
		sd := math.Sqrt(pop.Var[k])
		seV := math.Sqrt(covV.At(k, k))
		lo, hi := pop.Var[k]-1.959963984540054*seV, pop.Var[k]+1.959963984540054*seV
		spreads[k] = Spread{Param: name, SD: sd, SE: seV / (2 * sd), CI95: [2]float64{math.Sqrt(math.Max(lo, 0)), math.Sqrt(hi)}}
	}
	return effects, spreads, nil
}

// precisionOfEstimate returns W = D⁻¹ − D⁻¹ Σ D⁻¹ for D = diag(v).
func precisionOfEstimate(cov [][]float64, v []float64) [][]float64 {
	p := len(v)
	W := make([][]float64, p)
	for k := range p {
		W[k] = make([]float64, p)
		for l := range p {
			W[k][l] = -cov[k][l] / (v[k] * v[l])
		}
		W[k][k] += 1 / v[k]
	}
	return W
}

// symInverse inverts a symmetric positive definite matrix.
func symInverse(A *mat.SymDense) (*mat.SymDense, error) {
	var ch mat.Cholesky
	if !ch.Factorize(A) {
		return nil, fmt.Errorf("not positive definite")
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, err
	}
	return &inv, nil
}
