package fit

import (
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
	Draws   int     `json:"draws"`           // simulated data sets used (those without a diverged trial)
	SimMean float64 `json:"loglik_sim_mean"` // their log-likelihoods' mean at the estimate
	SimSD   float64 `json:"loglik_sim_sd"`   // and standard deviation
	Z       float64 `json:"z"`               // (loglik − SimMean) / SimSD
	// P is the two-sided p-value of the subject's log-likelihood as one more draw of a normal
	// distribution of which the Draws are a sample: (loglik − mean)/(sd·√(1 + 1/Draws)) is
	// Student-t with Draws − 1 degrees of freedom (a log-likelihood sums many trials'
	// terms).
	P float64 `json:"p"`
}

// Warns reports whether the check's p-value is below CheckAlpha.
func (c *Check) Warns() bool { return c != nil && c.P < CheckAlpha }

// check runs the goodness-of-fit check of subject s fitted at x (fitted parameters, fitting
// scale) with log-likelihood loglik, evaluating in the fit's batching.
func (f *Fitter) check(s Subject, x []float64, loglik float64, batching likelihood.Batching) (*Check, error) {
	f.checks.Lock() // bounds the memory of the checks' chunks, which run beside the fit's
	defer f.checks.Unlock()
	K := f.opts.CheckDraws
	rows, err := f.simulateAt(s, x, K, checkSeed(f.opts.Seed, s.ID), likelihood.AgentVariant{})
	if err != nil {
		return nil, fmt.Errorf("goodness-of-fit check: %w", err)
	}
	lls, err := f.logLiksAt(rows, x, batching)
	if err != nil {
		return nil, fmt.Errorf("goodness-of-fit check: %w", err)
	}
	for _, v := range lls {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("goodness-of-fit check: a simulated data set's log-likelihood is not finite")
		}
	}
	n := float64(len(lls))
	mean, sd := stat.MeanStdDev(lls, nil)
	c := &Check{Draws: len(lls), SimMean: mean, SimSD: sd, Z: (loglik - mean) / sd}
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
