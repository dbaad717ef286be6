package fit

// The Laplace approximation at a subject's optimum: standard errors and 95% intervals in
// fitting scale from the Hessian of the negative log-likelihood, made robust (sandwich) with
// the spread of the trials' scores.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/models"
	"gonum.org/v1/gonum/mat"
)

// hessianStep is the central-difference step, in fitting scale, of the Hessian.
const hessianStep = 1e-4

// laplace fills the standard errors and intervals from the Hessian H of the negative
// log-likelihood in fitting scale, by central differences of exact gradients (all 2p
// gradients in one batch), and, unless Options.Uncertainty is UncertaintyHessian, from the
// sandwich H⁻¹ J H⁻¹ (Huber 1967; White 1982), J the covariance of the sum of the trials'
// scores estimated from their spread, N/(N−1)·Σ (s_i − s̄)(s_i − s̄)ᵀ over the N trials.
// The likelihood is an approximation (a Gaussian belief, products of noises replaced by
// their variance), and where it is, its curvature overstates the information in the data:
// on 500 partially observable pendulum trials at (0.00163, 0.00682, 0.203, 6.14) the
// estimates' spread over 12 simulated data sets was 1.2–1.7 times the Hessian's standard
// errors and 0.9–1.25 times the sandwich's on one of them (docs/guide.md, "Reading the
// results"). The trials being independent, J measures the information whatever the
// approximation. With fewer than
// MinRobustTrials trials per fitted parameter J is too noisy, and the Hessian's are used.
func (f *Fitter) laplace(ctx context.Context, b *batcher, si int, s Subject, x []float64, res *Result) error {
	p := len(f.infer)
	grads := make([][]float64, 2*p)
	errs := make([]error, 2*p)
	var wg sync.WaitGroup
	for j := range 2 * p {
		wg.Add(1)
		b.enter()
		go func() {
			defer wg.Done()
			defer b.exit()
			xs := slices.Clone(x)
			if j%2 == 0 {
				xs[j/2] += hessianStep
			} else {
				xs[j/2] -= hessianStep
			}
			ll, g, err := b.call(ctx, si, s.Trials, f.full(xs))
			if err == nil && math.IsInf(ll, -1) {
				err = errors.New("log-likelihood not finite next to the optimum")
			}
			grads[j], errs[j] = g, err
		}()
	}
	b.exit()
	wg.Wait()
	robust := f.robust(s)
	var scores [][]float64
	var scoreErr error
	if robust {
		_, scores, scoreErr = f.e.TrialScores(s.Trials, f.full(x))
	}
	b.enter()
	res.Evaluations += 2 * p
	for _, err := range errs {
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return nil // no uncertainty, but the fit stands
		}
	}
	H := make([][]float64, p)
	for a := range p {
		H[a] = make([]float64, p)
		for c := range p {
			ia := f.infer[a]
			// ∂²(−LL)/∂x_a∂x_c ≈ −(g_a(x + h e_c) − g_a(x − h e_c)) / 2h
			H[a][c] = -(grads[2*c][ia] - grads[2*c+1][ia]) / (2 * hessianStep)
		}
	}
	for a := range p {
		for c := a + 1; c < p; c++ {
			m := 0.5 * (H[a][c] + H[c][a])
			H[a][c], H[c][a] = m, m
		}
	}
	res.Hessian = H
	cov, ok := spdInverse(H)
	res.HessianPD = ok
	if !ok {
		return nil
	}
	res.StdErrHessian = map[string]float64{}
	for k, i := range f.infer {
		res.StdErrHessian[f.spec.Params[i].Name] = math.Sqrt(cov[k][k])
	}
	res.Uncertainty = UncertaintyHessian
	if robust {
		cov = res.robustCov(cov, scores, scoreErr, f.infer)
	}
	res.StdErr = map[string]float64{}
	res.CI95 = map[string][2]float64{}
	res.CI95Natural = map[string][2]float64{}
	for k, i := range f.infer {
		res.setInterval(f.spec.Params[i], x[k], math.Sqrt(cov[k][k]))
	}
	return nil
}

// robustCov returns the sandwich H⁻¹ J H⁻¹ of the inverse Hessian cov with J the covariance
// of the trials' scores (scoreCov over the fitted parameters idx) and sets res.ScoreCov and
// res.Uncertainty to robust; where the scores failed (scoreErr) or one is not finite it
// returns cov unchanged and says why in res.RobustErr.
func (res *Result) robustCov(cov, scores [][]float64, scoreErr error, idx []int) [][]float64 {
	if scoreErr != nil {
		res.RobustErr = fmt.Sprintf("the trials' scores for the robust intervals failed (%v)", scoreErr)
		return cov
	}
	J, ok := scoreCov(scores, idx)
	if !ok {
		res.RobustErr = "a trial's score for the robust intervals is not finite"
		return cov
	}
	res.ScoreCov, res.Uncertainty = J, UncertaintyRobust
	return sandwich(cov, J)
}

// setInterval sets prm's standard error se and its 95 % interval centre ± 1.96·se in the
// fitting scale and, where 10^end does not overflow, in natural units.
func (res *Result) setInterval(prm models.Param, centre, se float64) {
	res.setBounds(prm, se, centre-1.959963984540054*se, centre+1.959963984540054*se)
}

// setBounds sets prm's standard error se and its 95 % interval [lo, hi] in the fitting scale,
// and in natural units where both ends have them.
func (res *Result) setBounds(prm models.Param, se, lo, hi float64) {
	res.StdErr[prm.Name] = se
	res.CI95[prm.Name] = [2]float64{lo, hi}
	if nlo, nhi := prm.FromScale(lo), prm.FromScale(hi); !math.IsInf(nlo, 0) && !math.IsInf(nhi, 0) {
		res.CI95Natural[prm.Name] = [2]float64{nlo, nhi}
	}
}

// spdInverse inverts a symmetric matrix by Cholesky; ok is false if it is not positive
// definite.
func spdInverse(A [][]float64) ([][]float64, bool) {
	L, ok := cholesky(A)
	if !ok {
		return nil, false
	}
	n := len(A)
	inv := make([][]float64, n)
	for j := range n {
		e := make([]float64, n)
		e[j] = 1
		choleskySolve(L, e)
		inv[j] = e
	}
	return inv, true
}

// robust reports whether s's standard errors are the sandwich's (they need the trials' scores).
func (f *Fitter) robust(s Subject) bool {
	return f.opts.Uncertainty != UncertaintyHessian && len(s.Trials) >= MinRobustTrials*len(f.infer)
}

// MinRobustTrials is the fewest trials per fitted parameter with which laplace estimates the
// scores' covariance (the sandwich); below it the Hessian's standard errors are reported.
const MinRobustTrials = 10

// scoreCov returns N/(N−1)·Σ_i (s_i − s̄)(s_i − s̄)ᵀ over the N trials' scores, restricted
// to the parameters idx: the estimated covariance of the subject's total score. ok is false
// when a score is not finite.
func scoreCov(scores [][]float64, idx []int) (J [][]float64, ok bool) {
	N, p := float64(len(scores)), len(idx)
	mean := make([]float64, p)
	for _, g := range scores {
		for a, i := range idx {
			if math.IsNaN(g[i]) || math.IsInf(g[i], 0) {
				return nil, false
			}
			mean[a] += g[i] / N
		}
	}
	J = make([][]float64, p)
	for a := range J {
		J[a] = make([]float64, p)
	}
	for _, g := range scores {
		for a, i := range idx {
			for c, j := range idx {
				J[a][c] += (g[i] - mean[a]) * (g[j] - mean[c]) * N / (N - 1)
			}
		}
	}
	return J, true
}

// sandwich returns A J A for symmetric A and J.
func sandwich(A, J [][]float64) [][]float64 {
	p := len(A)
	dense := func(X [][]float64) *mat.Dense {
		D := mat.NewDense(p, p, nil)
		for a := range p {
			D.SetRow(a, X[a])
		}
		return D
	}
	var out mat.Dense
	out.Product(dense(A), dense(J), dense(A))
	rows := make([][]float64, p)
	for a := range rows {
		rows[a] = mat.Row(nil, a, &out)
	}
	return rows
}

// LaplaceAt returns the Laplace approximation of subject s at x, its fitted parameters in
// fitting scale (Fitted's order), as Fit computes it at the optimum: Result's StdErr,
// StdErrHessian, CI95, CI95Natural, HessianPD, Uncertainty, Hessian and ScoreCov, with
// Subject, Fitted, Trials and Scaled set and the other fields zero. x should be a maximum of
// the likelihood (a fit's estimate); elsewhere the intervals mean little.
func (f *Fitter) LaplaceAt(ctx context.Context, s Subject, x []float64) (Result, error) {
	res := Result{Subject: s.ID, Fitted: f.Fitted(), Trials: len(s.Trials), Scaled: map[string]float64{}}
	if len(x) != len(f.infer) {
		return res, fmt.Errorf("LaplaceAt: %d values for %d fitted parameters", len(x), len(f.infer))
	}
	if len(s.Trials) == 0 {
		return res, fmt.Errorf("subject %s has no trials", s.ID)
	}
	for k, i := range f.infer {
		res.Scaled[f.spec.Params[i].Name] = x[k]
	}
	var err error
	f.serve(len(s.Trials), 2*len(f.infer), func(b *batcher) {
		b.enter()
		err = f.laplace(ctx, b, 0, s, x, &res)
		b.exit()
	})
	return res, err
}
