package ioc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/nioc-gpu/nioc-gpu/fit"
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

// climb runs StartOptimized's climbs for the subjects of batch, all (subject, chain) pairs
// batched as fit batches its restarts, and returns each subject's chains' unconstrained
// initial points and the likelihood evaluations spent. A climb that fails leaves its
// chain an over-dispersed start; progress is called with the evaluations so far.
func (s *Sampler) climb(ctx context.Context, batch []fit.Subject, progress func(evals int)) ([][][]float64, int, error) {
	f, err := fit.New(s.e, fit.Options{Restarts: s.opts.Chains, Seed: s.opts.Seed, MaxIter: s.opts.ClimbIter,
		Infer: s.sel.Names(), Fix: s.opts.Fix, MaxBatch: s.opts.MaxBatch})
	if err != nil {
		return nil, 0, err
	}
	if !slices.Equal(f.Fitted(), s.sel.Names()) {
		return nil, 0, fmt.Errorf("climb: fitted %v, sampled %v", f.Fitted(), s.sel.Names())
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
		return nil, evals, err
	}
	lo, hi := s.box.Lo(), s.box.Hi()
	pts := make([][][]float64, len(batch))
	for g, sub := range batch {
		rng := rand.New(rand.NewPCG(subjectSeed(s.opts.Seed, sub.ID), 0xc11b))
		r := ends[sub.ID]
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
	return pts, evals, nil
}
