// Package ioc samples the posterior of an agent's parameters given each subject's trials: the
// inverse-optimal-control likelihood of package likelihood, priors in each parameter's fitting
// scale (log10 or linear) on its search box, uniform unless given, and the batched NUTS
// sampler of package posterior.
//
// The subjects are the groups of one posterior.Target: the chains of all subjects sampled
// together advance in lockstep, and every batched call of the sampler, one point per chain
// still building its trajectory, is evaluated by the likelihood in as few graph runs as
// the batching allows (likelihood.Evaluator.EvalRows).
package ioc

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior"
)

// Options configure a Sampler.
type Options struct {
	Chains int    // chains per subject; must be ≥ 1
	Warmup int    // warm-up iterations per chain; 0 means none; must be ≥ 0
	Draws  int    // draws per chain after warm-up; must be ≥ 1
	Seed   uint64 // with the subject's ID, the seed of its chains

	MaxDepth     int     // maximum tree depth; 0 means 10
	TargetAccept float64 // target acceptance statistic of the step-size adaptation; 0 means 0.8
	DenseMetric  bool    // adapt a dense metric instead of a diagonal one (posterior.Options)
	CrossChain   bool    // estimate the metric from all of a subject's chains' window draws (posterior.Options)
	MaxWarmup    int     // with CrossChain, warm up to this many iterations while the chains disagree; 0 means Warmup

	Infer []string           // parameters to sample; nil means every one the likelihood depends on
	Fix   map[string]float64 // parameters held at values in natural units (fit.NewSelection)
	// Priors of sampled parameters by name, in their fitting scale and truncated to their box
	// (posterior.Prior); a sampled parameter without one has a uniform prior on its box.
	Priors map[string]posterior.Prior
	// Init, if set, holds an estimate for every subject to be sampled: its chains then start
	// around it instead of over-dispersed (see Sampler.Sample).
	Init map[string]Estimate
	// Start says where chains start without Init; "" means StartOptimized.
	Start Start
	// ClimbIter is the L-BFGS-B iteration limit of StartOptimized's climbs; 0 means
	// DefaultClimbIter.
	ClimbIter int
	// Adjust is how the likelihood is calibrated before it is sampled: AdjustAuto ("" means
	// it), AdjustCurvature, AdjustBootstrap or AdjustNone. The adjustment is centred at the
	// best climb's end or, with Init, at the subject's estimate; with StartDispersed the climbs
	// are run for it alone. AdjustBootstrap needs Init, each estimate with its bootstrap
	// (Estimate.Bias).
	Adjust string

	// MaxBatch bounds rows × trials per graph run; 0 means likelihood.DefaultMaxBatch.
	MaxBatch int
	// Together is the number of subjects sampled together; 0 means as many as one graph run
	// of MaxBatch holds with all their chains (at least 1).
	Together int

	// Progress, if set, is called after every batched evaluation.
	Progress func(Progress)
}

// Estimate is a point estimate of a subject's parameters, e.g. a maximum-likelihood fit.
type Estimate struct {
	Scaled map[string]float64 // parameters in their fitting scale
	StdErr map[string]float64 // their standard errors in the fitting scale, where known
	// Bias and DOF are the parametric bootstrap's estimated bias (fitting scale) and the
	// degrees of freedom of each interval's Student t (fit.Bootstrap), where the fit ran one;
	// StdErr is then the bootstrap's. AdjustBootstrap needs them.
	Bias, DOF map[string]float64
	// DataDigest is the data the estimate was fitted to (fit.Record.DataDigest); empty where
	// the results file does not say.
	DataDigest string
}

// Progress reports how sampling is going.
type Progress struct {
	SubjectsDone, Subjects int
	Transitions, Total     int  // of the subjects being sampled: done and to run, warm-up included
	Evaluations            int  // likelihood evaluations so far (each a value and gradient)
	Calls                  int  // the chains' batched likelihood calls so far (the climbs' not counted)
	Climbing               bool // the chains' starting points are being found (StartOptimized)
	Elapsed                time.Duration
}

// Sampler draws from the posterior of one likelihood's parameters for many subjects.
type Sampler struct {
	e      *likelihood.Evaluator
	sel    *fit.Selection
	opts   Options
	box    posterior.Box
	priors []posterior.Prior // nil if every prior is uniform
}

// New returns a Sampler of the evaluator's likelihood. It returns an error for counts out of
// range, parameters inferred and fixed as fit.NewSelection refuses them, and a prior on a
// parameter that is not sampled (unknown, fixed or left out) or with a negative or
// non-finite SD or a non-finite mean. A prior with SD 0 is uniform (posterior.Prior).
func New(e *likelihood.Evaluator, opts Options) (*Sampler, error) {
	switch {
	case opts.Chains < 1:
		return nil, fmt.Errorf("--chains must be >= 1, got %d", opts.Chains)
	case opts.Draws < 1:
		return nil, fmt.Errorf("--draws must be >= 1, got %d", opts.Draws)
	case opts.Warmup < 0:
		return nil, fmt.Errorf("--warmup must be >= 0, got %d", opts.Warmup)
	case opts.MaxDepth < 0:
		return nil, fmt.Errorf("--max-depth must be >= 1, got %d", opts.MaxDepth)
	case opts.TargetAccept < 0 || opts.TargetAccept >= 1 || math.IsNaN(opts.TargetAccept):
		return nil, fmt.Errorf("--target-accept must be in (0, 1), got %g", opts.TargetAccept)
	case opts.Together < 0:
		return nil, fmt.Errorf("--together must be >= 1, got %d", opts.Together)
	case opts.ClimbIter < 0:
		return nil, fmt.Errorf("climb iterations must be >= 0, got %d", opts.ClimbIter)
	case e.Options().ValueOnly:
		return nil, fmt.Errorf("sampling needs the likelihood's gradient: the evaluator is value-only")
	}
	if opts.MaxDepth == 0 {
		opts.MaxDepth = 10
	}
	if opts.TargetAccept == 0 {
		opts.TargetAccept = 0.8
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = likelihood.DefaultMaxBatch
	}
	if opts.Start == "" {
		opts.Start = StartOptimized
	}
	if _, err := ParseStart(string(opts.Start)); err != nil {
		return nil, err
	}
	switch opts.Adjust {
	case "":
		opts.Adjust = AdjustAuto
	case AdjustAuto, AdjustCurvature, AdjustNone, AdjustBootstrap:
	default:
		return nil, fmt.Errorf("unknown adjustment %q: want %s, %s, %s or %s", opts.Adjust, AdjustAuto, AdjustCurvature, AdjustBootstrap, AdjustNone)
	}
	if opts.ClimbIter == 0 {
		opts.ClimbIter = DefaultClimbIter
	}
	sel, err := fit.NewSelection(e, opts.Infer, opts.Fix)
	if errors.Is(err, fit.ErrNoParameter) {
		return nil, fmt.Errorf("no parameter left to sample")
	}
	if err != nil {
		return nil, err
	}
	s := &Sampler{e: e, sel: sel, opts: opts}
	if s.box, err = posterior.NewBox(sel.Bounds()); err != nil {
		return nil, err
	}
	spec := e.Spec()
	names := sel.Names()
	index := map[string]int{}
	for k, n := range names {
		index[n] = k
	}
	if len(opts.Priors) > 0 {
		s.priors = make([]posterior.Prior, len(names))
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Priors)) {
		p := opts.Priors[name]
		k, ok := index[name]
		switch {
		case ok:
		case !slices.Contains(spec.ParamNames(), name):
			return nil, fmt.Errorf("--prior: task %s has no parameter %q; its parameters are %s", spec.Name, name,
				strings.Join(spec.ParamNames(), ", "))
		default:
			return nil, fmt.Errorf("--prior on %s, which is not sampled (fixed, held at its default or left out of --infer); sampled: %s",
				name, strings.Join(names, ", "))
		}
		if !(p.SD >= 0) || math.IsInf(p.SD, 0) || math.IsNaN(p.Mu) || math.IsInf(p.Mu, 0) {
			return nil, fmt.Errorf("--prior %s=normal(%g, %g): need a finite mean and a finite sd > 0", name, p.Mu, p.SD)
		}
		s.priors[k] = p
	}
	return s, nil
}

// Selection returns which parameters are sampled and the values of the others.
func (s *Sampler) Selection() *fit.Selection { return s.sel }

// Params returns the sampled parameters, in task order.
func (s *Sampler) Params() []models.Param {
	var out []models.Param
	for _, i := range s.sel.Indices() {
		out = append(out, s.sel.Spec().Params[i])
	}
	return out
}

// Options returns the sampler's options, defaults filled in.
func (s *Sampler) Options() Options { return s.opts }

// SetProgress sets the function called after every batched evaluation.
func (s *Sampler) SetProgress(fn func(Progress)) { s.opts.Progress = fn }

// Result is the posterior of one subject. Its summaries, diagnostics included, are of the draws
// in natural units; the bulk effective sample size, which depends only on ranks, is the same in
// every monotone scale, R̂ and the tail effective sample size nearly so.
type Result struct {
	Subject    string
	DataDigest string // data.Digest of the subject's trials
	Trials     int
	Names      []string          // the sampled parameters, in task order
	Chains     []posterior.Chain // the subject's chains, draws in the fitting scale (Chain.Scaled)
	// Summary of each sampled parameter, in the order of Names; nil when Err is set.
	Summary            []posterior.Summary
	Divergences        int // divergent draws over all chains
	TreeDepthSaturated int // draws whose trajectory reached the maximum tree depth
	MaxDepth           int // the maximum tree depth
	// Adjustment says what likelihood was sampled: AdjustCurvature, AdjustBootstrap, or
	// AdjustNone, with why after a colon where an adjustment was asked for but could not be made.
	Adjustment string
	// SDRatio is, per sampled parameter, the factor (≥ 1) by which the adjustment widened the
	// likelihood's marginal standard deviation at the maximum; nil without an adjustment.
	SDRatio  []float64
	EBFMI    []float64 // per chain
	Seconds  float64   // wall time of the sampling run the subject was part of
	Together int       // subjects sampled in that run
	Warnings []Warning
	Err      string // why the subject could not be sampled; empty on success
}

// Sample samples the posterior of every subject, Options.Together subjects at a time, and
// calls emit with the results of each such batch, in the order of subjects, as soon as it is
// done; an error from emit stops sampling. A subject's draws depend only on the seed, its ID
// and its trials, not on which subjects it is sampled with, as far as the likelihood's values
// do not (they may differ in the last bits where other subjects have more trials, to which
// its own are padded).
//
// Chains start where short climbs of the likelihood from random points of the box end
// (StartOptimized, the default), or at points drawn uniformly in (−2, 2) on the
// unconstrained (logit) scale of the box (StartDispersed); with Options.Init, chain c starts at the subject's estimate plus a draw from normal(0, se) of
// each parameter in its fitting scale (se its standard error, or 2 % of the box width where
// unknown; parameters without an estimate start over-dispersed), kept inside the box.
//
// A subject whose chains fail (Chain.Err) is reported with Err set; an error of the
// likelihood or the cancellation of ctx stops sampling, and Sample returns it.
func (s *Sampler) Sample(ctx context.Context, subjects []fit.Subject, emit func([]Result) error) error {
	if len(subjects) == 0 {
		return nil
	}
	if s.opts.Adjust == AdjustBootstrap && s.opts.Init == nil {
		return errNeedsInit
	}
	trials := 0
	for _, sub := range subjects {
		if len(sub.Trials) == 0 {
			return fmt.Errorf("subject %s has no trials", sub.ID)
		}
		if s.opts.Init != nil {
			if _, ok := s.opts.Init[sub.ID]; !ok {
				return fmt.Errorf("no initial estimate for subject %s", sub.ID)
			}
		}
		trials = max(trials, len(sub.Trials))
	}
	together := sampledTogether(s.opts.Together, s.opts.MaxBatch, trials, s.opts.Chains, len(subjects))
	s.Prebuild(subjects) // compiles beside the climbs, on a GPU
	start := time.Now()
	evals, calls, done := 0, 0, 0
	for first := 0; first < len(subjects); first += together {
		batch := subjects[first:min(first+together, len(subjects))]
		t0 := time.Now()
		progress := func(p posterior.Progress) {
			if s.opts.Progress != nil {
				s.opts.Progress(Progress{SubjectsDone: done, Subjects: len(subjects), Transitions: p.Transitions,
					Total: p.Total, Evaluations: evals + p.Evaluations, Calls: calls + p.Calls, Elapsed: time.Since(start)})
			}
		}
		var inits [][][]float64
		var fits []fit.Result // the climbs' results, or the Laplace approximation at Init
		if s.opts.Init != nil {
			inits = make([][][]float64, len(batch))
			for g, sub := range batch {
				inits[g] = s.initialPoints(sub.ID)
			}
			if s.opts.Adjust != AdjustNone {
				var err error
				if fits, err = s.laplaceAtInit(ctx, batch); err != nil {
					return err
				}
			}
		} else if s.opts.Start == StartOptimized || s.opts.Adjust != AdjustNone {
			climbed, climbs, climbFits, err := s.climb(ctx, batch, func(n int) {
				if s.opts.Progress != nil {
					s.opts.Progress(Progress{SubjectsDone: done, Subjects: len(subjects), Evaluations: evals + n,
						Calls: calls, Elapsed: time.Since(start), Climbing: true})
				}
			})
			evals += climbed
			if err != nil {
				return err
			}
			if s.opts.Start == StartOptimized {
				inits = climbs
			}
			fits = climbFits
		}
		adj, notes := s.adjustments(batch, fits)
		res, err := s.sampleBatch(ctx, batch, inits, adj, trials, together*s.opts.Chains, progress)
		if err != nil {
			return err
		}
		seconds := time.Since(t0).Seconds()
		evals += res.Evaluations
		calls += res.Calls
		out := make([]Result, len(batch))
		for g, sub := range batch {
			out[g] = s.result(sub, res.Group(g), adj[g], notes[g])
			out[g].Seconds, out[g].Together = seconds, len(batch)
		}
		done += len(batch)
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}

// Prebuild starts compiling, in the background, the programs of the likelihood calls with
// which Sample will sample the first of subjects sampled together (their chains' rows), where
// that helps: on an accelerator (likelihood.Evaluator.Prebuild). `sample` calls it before it
// fits the subjects for --init fit, so that on a GPU the sampler's shape compiles on host
// cores while the fit runs on the device; Sample calls it before its climbs.
func (s *Sampler) Prebuild(subjects []fit.Subject) {
	trials := 0
	for _, sub := range subjects {
		trials = max(trials, len(sub.Trials))
	}
	if trials == 0 {
		return
	}
	together := sampledTogether(s.opts.Together, s.opts.MaxBatch, trials, s.opts.Chains, len(subjects))
	lo, hi := s.sel.Bounds()
	mid := make([]float64, len(lo))
	for i := range mid {
		mid[i] = (lo[i] + hi[i]) / 2
	}
	var rows [][][][]float64
	var thetas [][]float64
	for _, sub := range subjects[:together] {
		for range s.opts.Chains {
			rows, thetas = append(rows, sub.Trials), append(thetas, s.sel.Full(mid))
		}
	}
	s.e.Prebuild(rows, thetas, likelihood.Batching{Trials: trials, MaxBatch: s.opts.MaxBatch, Most: together * s.opts.Chains, Keep: true})
}

// sampledTogether returns the subjects sampled together: together if it is set, else as many
// as one graph run of maxBatch trajectories holds with chains chains of trials trials each,
// and never more than the subjects there are. Each batch's calls are planned for that many
// subjects' chains (likelihood.Batching.Most), so that more would pad every call's rows into
// chunks planned for subjects that do not exist (3 pendulum subjects of 20 trials on XLA's CPU
// plugin: 6 rows in chunks of 25, and of 125 before likelihood.HostBatch; `sample` 32.5 →
// 14 s).
func sampledTogether(together, maxBatch, trials, chains, subjects int) int {
	if together == 0 {
		together = max(1, maxBatch/(trials*chains))
	}
	return max(1, min(together, subjects))
}

// sampleBatch runs the sampler on the subjects of batch, their trials padded to trials,
// subject g's chain c starting at inits[g][c] (unconstrained) or, with inits nil,
// over-dispersed, and subject g's likelihood adjusted by adj[g] where it is not nil; most is
// the most points of any batched call of any batch (likelihood.Batching).
func (s *Sampler) sampleBatch(ctx context.Context, batch []fit.Subject, inits [][][]float64, adj []*adjustment, trials, most int, progress func(posterior.Progress)) (*posterior.Result, error) {
	idx := s.sel.Indices()
	lo, hi := s.sel.Bounds()
	logLik := func(groups []int, x [][]float64) ([]float64, [][]float64, error) {
		rows := make([][][][]float64, len(x))
		thetas := make([][]float64, len(x))
		beyond := make([][]float64, len(x))
		for i := range x {
			at := x[i]
			if a := adj[groups[i]]; a != nil {
				at, beyond[i] = a.boxed(at, lo, hi)
			}
			rows[i], thetas[i] = batch[groups[i]].Trials, s.sel.Full(at)
		}
		ll, grad, err := s.e.EvalRows(rows, thetas, likelihood.Batching{Trials: trials, MaxBatch: s.opts.MaxBatch, Most: most, Keep: true})
		if err != nil {
			return nil, nil, err
		}
		g := make([][]float64, len(x))
		for i := range x {
			g[i] = make([]float64, len(idx))
			for k, j := range idx {
				g[i][k] = grad[i][j]
			}
			if a := adj[groups[i]]; a != nil {
				wl, wg := a.wallLogDensity(beyond[i])
				ll[i] += wl
				for k, d := range beyond[i] {
					if d != 0 {
						g[i][k] = wg[k]
					}
				}
				g[i] = a.pull(g[i])
			}
		}
		return ll, g, nil
	}
	target, err := posterior.BoxTarget(s.box, len(batch), logLik, s.priors)
	if err != nil {
		return nil, err
	}
	warmup := s.opts.Warmup
	if warmup == 0 {
		warmup = -1 // none
	}
	po := posterior.Options{Chains: s.opts.Chains, Warmup: warmup, Draws: s.opts.Draws,
		MaxDepth: s.opts.MaxDepth, TargetAccept: s.opts.TargetAccept, DenseMetric: s.opts.DenseMetric, CrossChain: s.opts.CrossChain, MaxWarmup: s.opts.MaxWarmup,
		Progress: progress, Unsynchronized: true,
		GroupSeed: func(g int) uint64 { return subjectSeed(s.opts.Seed, batch[g].ID) }}
	if inits != nil {
		po.Init = func(g, c int) []float64 { return inits[g][c] }
	}
	po.InitMetric = func(g int) [][]float64 { return initialMetric(adj[g], lo, hi) }
	return posterior.Sample(ctx, target, po)
}

// subjectSeed returns the seed of a subject's chains: the seed mixed with a hash of its ID.
func subjectSeed(seed uint64, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return seed ^ h.Sum64()
}

// initialPoints returns the unconstrained initial points of the subject's chains around its
// estimate (see Sample).
func (s *Sampler) initialPoints(id string) [][]float64 {
	est := s.opts.Init[id]
	lo, hi := s.box.Lo(), s.box.Hi()
	rng := rand.New(rand.NewPCG(subjectSeed(s.opts.Seed, id), 0x5ca1ab1e))
	pts := make([][]float64, s.opts.Chains)
	for c := range pts {
		x := make([]float64, len(lo))
		for k, name := range s.sel.Names() {
			w := hi[k] - lo[k]
			m, ok := est.Scaled[name]
			if !ok || math.IsNaN(m) || math.IsInf(m, 0) {
				x[k] = dispersed(rng, lo[k], hi[k])
				continue
			}
			se := est.StdErr[name]
			if !(se > 0) || math.IsInf(se, 0) {
				se = 0.02 * w
			}
			x[k] = math.Min(math.Max(m+se*rng.NormFloat64(), lo[k]+1e-3*w), hi[k]-1e-3*w)
		}
		pts[c] = s.box.To(x)
	}
	return pts
}

func sigmoid(y float64) float64 { return 1 / (1 + math.Exp(-y)) }

// dispersed returns a point of [lo, hi] drawn as posterior's default start: uniform in
// (−2, 2) on the box's logit scale.
func dispersed(rng *rand.Rand, lo, hi float64) float64 {
	return lo + (hi-lo)*sigmoid(2*(2*rng.Float64()-1))
}

// result summarizes the chains of one subject and lists its warnings.
func (s *Sampler) result(sub fit.Subject, chains []posterior.Chain, adj *adjustment, note string) Result {
	r := Result{Subject: sub.ID, DataDigest: data.Digest(sub.Trials), Trials: len(sub.Trials), Names: s.sel.Names(), Chains: chains, MaxDepth: s.opts.MaxDepth,
		Adjustment: AdjustNone}
	if adj != nil {
		r.Adjustment, r.SDRatio = adj.kind, adj.sdRatio
	} else if note != "" {
		r.Adjustment = AdjustNone + ": " + note
	}
	var errs []error
	for c := range chains {
		if chains[c].Err != nil {
			errs = append(errs, chains[c].Err)
		}
	}
	if len(errs) > 0 {
		r.Err = errors.Join(errs...).Error()
		return r
	}
	spec := s.sel.Spec()
	idx := s.sel.Indices()
	for c := range chains {
		r.Divergences += chains[c].Divergences()
		for _, d := range chains[c].TreeDepth {
			if d >= s.opts.MaxDepth {
				r.TreeDepthSaturated++
			}
		}
		r.EBFMI = append(r.EBFMI, chains[c].EBFMI())
	}
	r.Summary = make([]posterior.Summary, len(idx))
	for k, i := range idx {
		x := posterior.ParamDraws(chains, k)
		for _, xc := range x {
			for d, v := range xc {
				xc[d] = spec.Params[i].FromScale(v)
			}
		}
		r.Summary[k] = posterior.Summarize(x)
	}
	r.Warnings = s.warnings(r)
	return r
}
