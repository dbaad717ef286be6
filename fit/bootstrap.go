package fit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"gonum.org/v1/gonum/stat"
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
	column := make([]float64, len(refits))
	for k, i := range f.infer {
		prm := f.spec.Params[i]
		for j, row := range refits {
			column[j] = row[k]
		}
		mean, sd := stat.MeanStdDev(column, nil)
		bs.Bias[prm.Name], bs.SD[prm.Name] = mean-x[k], sd
		se := sd
		if old, ok := res.StdErr[prm.Name]; ok {
			se = math.Max(se, old)
		}
		res.setInterval(prm, x[k]-bs.Bias[prm.Name], se)
	}
	res.Bootstrap, res.Uncertainty = bs, UncertaintyBootstrap
	return nil
}

// simulateAt simulates K data sets of the likelihood's agent at x (fitted parameters, fitting
// scale; the others at their fixed values), each with s's number of trials and their lengths
// (the trials of one problem, planned once), and returns those without a diverged trial.
func (f *Fitter) simulateAt(s Subject, x []float64, K int, seed uint64) ([][][][]float64, error) {
	full := f.full(x)
	spec := f.e.Spec()
	natural := make([]float64, len(full))
	for i, v := range full {
		natural[i] = spec.Params[i].FromScale(v)
	}
	N := len(s.Trials)
	lengths := make([]int, K*N)
	for j := range lengths {
		lengths[j] = len(s.Trials[j%N]) - 1
	}
	sims, err := f.e.SimulateAgentTrials([][]float64{natural}, lengths, seed)
	if err != nil {
		return nil, err
	}
	var rows [][][][]float64
	for k := range K {
		d := sims[0][k*N : (k+1)*N]
		if !slices.ContainsFunc(d, func(tr [][]float64) bool { return tr == nil }) { // a data set with a diverged trial is left out
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
