package fit

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultCheckDraws is the number of data sets the goodness-of-fit check simulates per
// subject unless Options.CheckDraws says otherwise.
const DefaultCheckDraws = 20

// CheckAlpha is the p-value under which the goodness-of-fit check warns.
const CheckAlpha = 0.05

// Check is the goodness-of-fit check of one subject's fit, a parametric bootstrap: Draws data
// sets simulated from the likelihood's own agent at the estimate (the subject's number of
// trials, their lengths and their initial states; likelihood.SimulateAgent)
// give the log-likelihoods the subject's data would have at the estimate if the subject were
// that agent; Z places the subject's own among them, P is its two-sided p-value.
//
// A small P says the data are not what the likelihood's agent would produce at any θ near
// the estimate: the intervals then rest on a model the subject does not follow and are too
// narrow (docs/intervals.md: on data of the JAX reference's agents the 95 % intervals cover
// the truth for half to three quarters of the parameters). On data of our own agent the check
// is quiet: the estimate is fitted to the data, so their log-likelihood is typical.
type Check struct {
	Draws int `json:"draws"` // simulated data sets used (those without a diverged trial and with a finite log-likelihood)
	// NonFinite counts the simulated data sets left out because their log-likelihood at the
	// estimate is not finite: the agent at the estimate makes trials that the likelihood's
	// linearization cannot score, a sign that its approximations fail near this estimate.
	NonFinite int     `json:"non_finite,omitempty"`
	SimMean   float64 `json:"loglik_sim_mean"` // their log-likelihoods' mean at the estimate
	SimSD     float64 `json:"loglik_sim_sd"`   // and standard deviation
	Z         float64 `json:"z"`               // (loglik − SimMean) / SimSD
	// P is the two-sided p-value of the subject's log-likelihood as one more draw of a normal
	// distribution of which the Draws are a sample: (loglik − mean)/(sd·√(1 + 1/Draws)) is
	// Student-t with Draws − 1 degrees of freedom (a log-likelihood sums many trials'
	// terms).
	P float64 `json:"p"`
}

// Warns reports whether the check's p-value is below CheckAlpha.
func (c *Check) Warns() bool { return c != nil && c.P < CheckAlpha }

// check runs the goodness-of-fit check of subject s (the fit's subject si) fitted at x
// (fitted parameters, fitting scale) with log-likelihood loglik, its data sets evaluated as
// workers of b, the fit's batcher; the caller must not be one of b's workers.
func (f *Fitter) check(ctx context.Context, b *batcher, si int, s Subject, x []float64, loglik float64) (*Check, error) {
	K := f.opts.CheckDraws
	rows, err := f.simulateAt(s, x, K, checkSeed(f.opts.Seed, s.ID), likelihood.AgentVariant{})
	if err != nil {
		return nil, fmt.Errorf("goodness-of-fit check: %w", err)
	}
	sets := make([]Subject, len(rows))
	for j, r := range rows {
		sets[j] = Subject{Trials: r}
	}
	lls, err := f.logLiksAt(ctx, b, func(j int) int { return f.setKey(si, f.opts.Bootstrap+j) }, sets, x)
	if err != nil {
		return nil, fmt.Errorf("goodness-of-fit check: %w", err)
	}
	return newCheck(loglik, lls)
}

// minCheckDraws is the fewest simulated data sets with a finite log-likelihood the check
// scores a subject with.
const minCheckDraws = 5

// newCheck places a subject's log-likelihood loglik among those of data sets simulated at its
// estimate, lls. Sets whose log-likelihood is not finite (data the agent makes at the estimate
// that the likelihood's linearization cannot score, e.g. a reaching trial that whips the arm)
// are left out and counted in NonFinite: the subject's own log-likelihood is finite, so it is
// compared with the sets whose log-likelihood is finite too. It returns an error when fewer
// than minCheckDraws remain.
func newCheck(loglik float64, lls []float64) (*Check, error) {
	finite := make([]float64, 0, len(lls))
	for _, v := range lls {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			finite = append(finite, v)
		}
	}
	if len(finite) < minCheckDraws {
		return nil, fmt.Errorf("goodness-of-fit check: the log-likelihood of %d of %d simulated data sets is not finite", len(lls)-len(finite), len(lls))
	}
	n := float64(len(finite))
	mean, sd := stat.MeanStdDev(finite, nil)
	c := &Check{Draws: len(finite), NonFinite: len(lls) - len(finite), SimMean: mean, SimSD: sd, Z: (loglik - mean) / sd}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}
	c.P = 2 * t.Survival(math.Abs(c.Z)/math.Sqrt(1+1/n))
	return c, nil
}

// checkSeed is the seed of subject id's simulated data sets: the fit's seed and the ID.
func checkSeed(seed uint64, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("check:" + id))
	return seed ^ h.Sum64()
}
