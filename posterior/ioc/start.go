package ioc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

// Start says where a subject's chains start when Options.Init is not given.
type Start string

const (
	// StartOptimized (the default): chain c starts where a short L-BFGS-B climb of the
	// likelihood ends that began at the c-th of fit's random restart points, uniform in each
	// parameter's fitting scale on its box. The starts stay as spread out as the local
	// optima of the likelihood (chains in different modes still disagree, and R̂ says so),
	// while no chain begins in the far tails, where the log-likelihood of these tasks is
	// lower than at its mode by 10⁵ or more and so steep that the adapted step size
	// collapses and every transition of warm-up runs the deepest tree (measured on the
	// pendulum: a chain started at −6·10⁵ was still climbing after 40 iterations at step
	// size 2·10⁻⁴). This is the remedy Stan's users apply by hand (initial values from an
	// optimization, or Pathfinder).
	StartOptimized Start = "optimize"
	// StartDispersed: chains start at points drawn uniformly in (−2, 2) on the
	// unconstrained (logit) scale of the box, as Stan does.
	StartDispersed Start = "dispersed"
)

// DefaultClimbIter is the L-BFGS-B iteration limit of StartOptimized's climbs when
// Options.ClimbIter is 0.
const DefaultClimbIter = 50

// ParseStart returns the Start named s ("optimize" or "dispersed").
func ParseStart(s string) (Start, error) {
	switch Start(s) {
	case StartOptimized, StartDispersed:
		return Start(s), nil
	}
	return "", fmt.Errorf("unknown start %q: want %s or %s", s, StartOptimized, StartDispersed)
}

// fitter returns the fitter of the sampled parameters, whose restarts are the climbs.
func (s *Sampler) fitter() (*fit.Fitter, error) {
	f, err := fit.New(s.e, fit.Options{Restarts: s.opts.Chains, Seed: s.opts.Seed, MaxIter: s.opts.ClimbIter,
		Infer: s.sel.Names(), Fix: s.opts.Fix, MaxBatch: s.opts.MaxBatch})
	if err != nil {
		return nil, err
	}
	if !slices.Equal(f.Fitted(), s.sel.Names()) {
		return nil, fmt.Errorf("climb: fitted %v, sampled %v", f.Fitted(), s.sel.Names())
	}
	return f, nil
}

// climb runs StartOptimized's climbs for the subjects of batch, all (subject, chain) pairs
// batched as fit batches its restarts, and returns the likelihood evaluations spent, each
// subject's chains' unconstrained initial points and the fit of each subject (its best
// climb, with the Laplace approximation there). A climb that fails leaves its chain an
// over-dispersed start; progress is called with the evaluations so far.
func (s *Sampler) climb(ctx context.Context, batch []fit.Subject, progress func(evals int)) (int, [][][]float64, []fit.Result, error) {
	f, err := s.fitter()
	if err != nil {
		return 0, nil, nil, err
	}
	evals := 0
	f.SetProgress(func(p fit.Progress) {
		evals = p.Evaluations
		if progress != nil {
			progress(evals)
		}
	})
	ends := map[string]fit.Result{}
	if err := f.Fit(ctx, batch, func(r fit.Result) error { ends[r.Subject] = r; return nil }); err != nil {
		return evals, nil, nil, err
	}
	fits := make([]fit.Result, len(batch))
	lo, hi := s.box.Lo(), s.box.Hi()
	pts := make([][][]float64, len(batch))
	for g, sub := range batch {
		rng := rand.New(rand.NewPCG(subjectSeed(s.opts.Seed, sub.ID), 0xc11b))
		r := ends[sub.ID]
		fits[g] = r
		pts[g] = make([][]float64, s.opts.Chains)
		for c := range pts[g] {
			x := make([]float64, len(lo))
			for k := range x {
				w := hi[k] - lo[k]
				if c < len(r.Ends) && r.Ends[c] != nil {
					// Optima often lie on a bound, at infinity on the unconstrained scale.
					x[k] = math.Min(math.Max(r.Ends[c][k], lo[k]+1e-3*w), hi[k]-1e-3*w)
				} else {
					x[k] = dispersed(rng, lo[k], hi[k])
				}
			}
			pts[g][c] = s.box.To(x)
		}
	}
	return evals, pts, fits, nil
}

// laplaceAtInit returns the Laplace approximation of each subject of batch at its estimate
// in Options.Init (Result.Err set where an estimate lacks a sampled parameter).
func (s *Sampler) laplaceAtInit(ctx context.Context, batch []fit.Subject) ([]fit.Result, error) {
	f, err := s.fitter()
	if err != nil {
		return nil, err
	}
	out := make([]fit.Result, len(batch))
	for g, sub := range batch {
		est := s.opts.Init[sub.ID]
		x := make([]float64, 0, len(s.sel.Names()))
		for _, name := range s.sel.Names() {
			v, ok := est.Scaled[name]
			if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				out[g].Err = fmt.Sprintf("the initial estimate has no value of %s", name)
				break
			}
			x = append(x, v)
		}
		if out[g].Err != "" {
			continue
		}
		if out[g], err = f.LaplaceAt(ctx, sub, x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// adjustments returns, for each subject of batch, its likelihood's adjustment from its fit
// (nil where Options.Adjust is AdjustNone or the fit allows none) and, where one was asked
// for but cannot be made, why.
func (s *Sampler) adjustments(batch []fit.Subject, fits []fit.Result) ([]*adjustment, []string) {
	adj, notes := make([]*adjustment, len(batch)), make([]string, len(batch))
	if s.opts.Adjust == AdjustNone {
		return adj, notes
	}
	names := s.sel.Names()
	for g := range batch {
		r := fits[g]
		bootstrap := s.opts.Adjust == AdjustBootstrap || s.opts.Adjust == AdjustAuto && s.opts.Init[batch[g].ID].Bias != nil
		switch {
		case r.Err != "":
			notes[g] = "no fit to centre it on: " + r.Err
			continue
		case r.Hessian == nil || !r.HessianPD && !bootstrap: // the bootstrap's may hold the temperature out
			notes[g] = "the Hessian at the best climb's end is not positive definite"
			continue
		case r.ScoreCov == nil && !bootstrap:
			notes[g] = fmt.Sprintf("too few trials (%d) to estimate the scores' covariance: %d per sampled parameter are needed", len(batch[g].Trials), fit.MinRobustTrials)
			continue
		}
		center := make([]float64, len(names))
		for k, name := range names {
			center[k] = r.Scaled[name]
		}
		var a *adjustment
		var err error
		if bootstrap {
			a, err = s.bootstrapAdjustment(batch[g].ID, center, r)
		} else {
			a, err = newAdjustment(center, r.Hessian, r.ScoreCov)
		}
		if err != nil {
			notes[g] = err.Error()
			continue
		}
		adj[g] = a
	}
	return adj, notes
}

// bootstrapAdjustment returns subject id's AdjustBootstrap adjustment at center from the
// bootstrap of its estimate in Options.Init and the Laplace approximation r there. The policy
// noise's temperature, a nuisance parameter, keeps the sandwich's width and its estimate: the
// bootstrap's agents without policy noise spread it over decades, and draws at temperatures
// that far from the estimate simulate trials far noisier than the subject's (--ppc).
func (s *Sampler) bootstrapAdjustment(id string, center []float64, r fit.Result) (*adjustment, error) {
	est := s.opts.Init[id]
	names := s.sel.Names()
	mode, sd := make([]float64, len(names)), make([]float64, len(names))
	nuisance := make([]bool, len(names))
	for k, name := range names {
		if name == likelihood.TemperatureParam(0).Name {
			nuisance[k] = true
			continue
		}
		bias, okB := est.Bias[name]
		se, okS := est.StdErr[name]
		if !okB || !okS {
			return nil, fmt.Errorf("the estimate's fit has no parametric bootstrap of %s (fit --uncertainty bootstrap, its default)", name)
		}
		mode[k], sd[k] = center[k]-bias, se
		if dof, ok := est.DOF[name]; ok && dof > 0 {
			sd[k] *= distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile(0.975) / distuv.UnitNormal.Quantile(0.975)
		}
	}
	if r.HessianPD {
		return newBootstrapAdjustment(center, mode, sd, nuisance, r.Hessian, r.ScoreCov)
	}
	// The Hessian is not positive definite: most often the temperature on its lower bound (an
	// agent without policy noise, as the JAX reference's), where the likelihood still rises
	// past it. Adjust the other parameters by their block of H (whose correlations then stand
	// in for the sandwich's) and leave the temperature as the likelihood has it.
	var keep []int
	for k := range names {
		if !nuisance[k] {
			keep = append(keep, k)
		}
	}
	if len(keep) == len(names) {
		return newFlatBootstrapAdjustment(center, mode, sd, r.Hessian)
	}
	sub := func(v []float64) []float64 {
		out := make([]float64, len(keep))
		for i, k := range keep {
			out[i] = v[k]
		}
		return out
	}
	Hk := make([][]float64, len(keep))
	for i, k := range keep {
		Hk[i] = sub(r.Hessian[k])
	}
	a, err := newBootstrapAdjustment(sub(center), sub(mode), sub(sd), nil, Hk, nil)
	if err != nil { // not even without it: the bootstrap's standard errors alone
		if a, err = newFlatBootstrapAdjustment(sub(center), sub(mode), sub(sd), Hk); err != nil {
			return nil, fmt.Errorf("the Hessian at the best climb's end is not positive definite, nor without the temperature: %v", err)
		}
	}
	return a.embed(center, keep), nil
}
