package fit

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

// UncertaintyBootstrap (Options.Uncertainty): the robust standard errors widened and the
// intervals re-centred by a bias-corrected parametric bootstrap (Options.Bootstrap).
const UncertaintyBootstrap = "bootstrap"

// DefaultBootstrapDraws and DefaultBootstrapRestarts are the bootstrap's data sets per subject
// and restarts per refit unless Options.Bootstrap and Options.BootstrapRestarts say otherwise.
const (
	DefaultBootstrapDraws    = 20
	DefaultBootstrapRestarts = 5
)

// Bootstrap is what the bias-corrected parametric bootstrap of one subject found: Draws data
// sets simulated from the likelihood's own agent at the estimate θ̂ (as the goodness-of-fit
// check simulates them), each refitted with BootstrapRestarts random restarts. In the fitting
// scale, Bias = mean of the refits − θ̂ estimates the estimator's bias at θ̂ and SD their
// spread; the subject's standard error becomes SE = max(SD, the robust SE) and its 95 %
// interval (θ̂ − Bias) ± 1.96·SE (docs/intervals.md: where the intervals miss, it is mostly
// because the estimator is biased and scattered more than the curvature says, on data of our
// agent and of others).
type Bootstrap struct {
	Draws  int                `json:"draws"`       // data sets simulated
	Refits int                `json:"refits"`      // of them, refitted without error
	Bias   map[string]float64 `json:"bias_scaled"` // mean of the refits − the estimate
	SD     map[string]float64 `json:"sd_scaled"`   // standard deviation of the refits
}

// bootstrap runs the parametric bootstrap of subject s fitted at x (fitted parameters,
// fitting scale) and sets res's standard errors and intervals from it (UncertaintyBootstrap).
func (f *Fitter) bootstrap(ctx context.Context, s Subject, x []float64, res *Result, batching likelihood.Batching) error {
	f.bootstraps.Lock() // bounds the memory of the refits' chunks to one subject's
	defer f.bootstraps.Unlock()
	K := f.opts.Bootstrap
	sims, err := f.simulateAt(s, x, K, bootstrapSeed(f.opts.Seed, s.ID))
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	opts := f.opts
	opts.Restarts = f.opts.BootstrapRestarts
	if opts.Restarts <= 0 {
		opts.Restarts = DefaultBootstrapRestarts
	}
	opts.Seed = bootstrapSeed(f.opts.Seed+1, s.ID)
	opts.Bootstrap, opts.CheckDraws, opts.Progress, opts.Checkpoint, opts.Starts = 0, 0, nil, nil, nil
	opts.refit, opts.batchMost = true, batching.Most // the fit's chunk sizes: no new graph
	nf, err := New(f.e, opts)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	subjects := make([]Subject, len(sims))
	for k, d := range sims {
		subjects[k] = Subject{ID: strconv.Itoa(k), Trials: d}
	}
	var refits [][]float64
	err = nf.FitFrom(ctx, subjects, nil, func(r Result) error {
		if r.Err == "" {
			row := make([]float64, len(f.infer))
			for k, i := range f.infer {
				row[k] = r.Scaled[f.spec.Params[i].Name]
			}
			refits = append(refits, row)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if len(refits) < max(3, K/2) {
		return fmt.Errorf("bootstrap: %d of %d refits failed", K-len(refits), K)
	}
	bs := &Bootstrap{Draws: K, Refits: len(refits), Bias: map[string]float64{}, SD: map[string]float64{}}
	if res.StdErr == nil {
		res.StdErr = map[string]float64{}
	}
	res.CI95 = map[string][2]float64{}
	res.CI95Natural = map[string][2]float64{}
	n := float64(len(refits))
	for k, i := range f.infer {
		prm := f.spec.Params[i]
		var mean, m2 float64
		for j, row := range refits {
			d := row[k] - mean
			mean += d / float64(j+1)
			m2 += d * (row[k] - mean)
		}
		bias, sd := mean-x[k], math.Sqrt(m2/(n-1))
		bs.Bias[prm.Name], bs.SD[prm.Name] = bias, sd
		se := sd
		if old, ok := res.StdErr[prm.Name]; ok {
			se = math.Max(se, old)
		}
		centre := x[k] - bias
		lo, hi := centre-1.959963984540054*se, centre+1.959963984540054*se
		res.StdErr[prm.Name] = se
		res.CI95[prm.Name] = [2]float64{lo, hi}
		if nlo, nhi := prm.FromScale(lo), prm.FromScale(hi); !math.IsInf(nlo, 0) && !math.IsInf(nhi, 0) {
			res.CI95Natural[prm.Name] = [2]float64{nlo, nhi}
		}
	}
	res.Bootstrap, res.Uncertainty = bs, UncertaintyBootstrap
	return nil
}

// simulateAt simulates K data sets of the likelihood's agent at x (fitted parameters, fitting
// scale; the others at their fixed values), each with s's number of trials and their lengths,
// and returns those without a diverged trial.
func (f *Fitter) simulateAt(s Subject, x []float64, K int, seed uint64) ([][][][]float64, error) {
	full := f.full(x)
	spec := f.e.Spec()
	natural := make([]float64, len(full))
	for i, v := range full {
		natural[i] = spec.Params[i].FromScale(v)
	}
	thetas := make([][]float64, K) // one problem per data set: each its own noise
	for k := range thetas {
		thetas[k] = natural
	}
	lengths := make([]int, len(s.Trials))
	for j, tr := range s.Trials {
		lengths[j] = len(tr) - 1
	}
	sims, _, err := f.e.SimulateAgent(thetas, lengths, seed)
	if err != nil {
		return nil, err
	}
	var rows [][][][]float64
	for _, d := range sims {
		if len(d) == len(s.Trials) { // a data set with a diverged trial is left out
			rows = append(rows, d)
		}
	}
	if len(rows) < max(3, K/2) {
		return nil, fmt.Errorf("%d of %d simulated data sets diverged", K-len(rows), K)
	}
	return rows, nil
}

// bootstrapSeed is the seed of subject id's bootstrap: the fit's seed and the ID.
func bootstrapSeed(seed uint64, id string) uint64 { return checkSeed(seed, "bootstrap:"+id) }
