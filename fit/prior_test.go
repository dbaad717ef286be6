package fit

import (
	"context"
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gridLogLik returns the subject's log-likelihood at each of xs, the fitted parameter of f
// (one) in fitting scale, by direct evaluations.
func gridLogLik(t *testing.T, f *Fitter, trials [][][]float64, xs []float64) []float64 {
	t.Helper()
	thetas := make([][]float64, len(xs))
	rows := make([][][][]float64, len(xs))
	for i, x := range xs {
		thetas[i], rows[i] = f.full([]float64{x}), trials
	}
	ll, _, err := f.e.EvalRows(rows, thetas, likelihood.Batching{Trials: len(trials)})
	require.NoError(t, err)
	return ll
}

// logSumExpTrapezoid returns log ∫ exp(lf(x)) dx by the trapezoid rule on the uniform grid xs.
func logSumExpTrapezoid(xs, lf []float64) float64 {
	top := math.Inf(-1)
	for _, v := range lf {
		top = math.Max(top, v)
	}
	sum := 0.0
	for i := range lf {
		w := 1.0
		if i == 0 || i == len(lf)-1 {
			w = 0.5
		}
		sum += w * math.Exp(lf[i]-top)
	}
	return top + math.Log(sum*(xs[1]-xs[0]))
}

// TestPriorAndEvidenceAgainstAGrid fits one parameter of the linear task on a few trials
// by maximum likelihood and under a normal prior, and checks both against direct
// evaluations on a fine grid over the box: the estimates maximize the (log-likelihood +
// log prior) found on the grid, Result.LogLik is the data's log-likelihood there (not the
// posterior's), and the Laplace log evidence is the grid's log ∫ p(D|x) p(x) dx within 0.05.
func TestPriorAndEvidenceAgainstAGrid(t *testing.T) {
	trials := simulate(t, "linear", control.ObservePartial, 8, 30, 3)
	prior := Prior{Mean: []float64{-0.6}, Var: []float64{0.05 * 0.05}} // obs_noise: 10^-0.6 ≈ 0.25
	for _, tc := range []struct {
		name   string
		priors map[string]Prior
	}{
		{"uniform over the box", nil},
		{"normal prior", map[string]Prior{"s": prior}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1, Infer: []string{"obs_noise"},
				Uncertainty: UncertaintyHessian, Priors: tc.priors})
			res := fitAll(t, f, []Subject{{ID: "s", Trials: trials}})["s"]
			require.Empty(t, res.Err)
			require.NotNil(t, res.LogEvidence)
			x := res.Scaled["obs_noise"]

			lo, hi := f.lo[0], f.hi[0]
			n := 1201
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = lo + (hi-lo)*float64(i)/float64(n-1)
			}
			ll := gridLogLik(t, f, trials, xs)
			lp := make([]float64, n)
			best := 0
			for i := range xs {
				if tc.priors == nil {
					lp[i] = ll[i] - math.Log(hi-lo)
				} else {
					lp[i] = ll[i] + prior.LogDensity([]float64{xs[i]})
				}
				if lp[i] > lp[best] {
					best = i
				}
			}
			assert.InDelta(t, xs[best], x, 2*(hi-lo)/float64(n-1), "the estimate maximizes log-likelihood + log prior")
			llAt := gridLogLik(t, f, trials, []float64{x})[0]
			assert.InDelta(t, llAt, res.LogLik, 1e-6, "LogLik is the data's log-likelihood")
			assert.InDelta(t, logSumExpTrapezoid(xs, lp), *res.LogEvidence, 0.05, "Laplace evidence against the grid's integral")
		})
	}
}

// TestPriorShrinks checks that a tight prior pulls the estimate to its mean and that a prior
// of the wrong length is the subject's error, not a crash.
func TestPriorShrinks(t *testing.T) {
	trials := simulate(t, "linear", control.ObservePartial, 4, 30, 5)
	f := newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 2, Seed: 1, Infer: []string{"obs_noise"},
		Uncertainty: UncertaintyHessian, Priors: map[string]Prior{
			"tight": {Mean: []float64{0.2}, Var: []float64{1e-6}},
			"bad":   {Mean: []float64{0.2, 0}, Var: []float64{1, 1}},
		}})
	got := map[string]Result{}
	require.NoError(t, f.Fit(context.Background(), []Subject{{ID: "tight", Trials: trials}, {ID: "bad", Trials: trials}, {ID: "free", Trials: trials}},
		func(r Result) error { got[r.Subject] = r; return nil }))
	assert.InDelta(t, 0.2, got["tight"].Scaled["obs_noise"], 0.01)
	assert.Greater(t, math.Abs(got["free"].Scaled["obs_noise"]-0.2), 0.2, "without a prior the estimate is the data's")
	assert.Contains(t, got["bad"].Err, "prior of 2 means")
}
