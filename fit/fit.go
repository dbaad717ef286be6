// Package fit finds maximum-likelihood parameters of the agent for many subjects at once:
// bounded quasi-Newton optimization (L-BFGS-B) with exact gradients, random restarts drawn
// uniformly in each parameter's fitting scale inside its bounds (paper Sec. 4), every
// optimizer step of every (subject, restart) pair evaluated in one batched graph run, and
// Laplace-approximation uncertainty and information criteria at the optimum. A fit saves
// checkpoints of every restart's optimizer state (Checkpoint) and continues from one
// (FitFrom) with the results of an uninterrupted fit.
package fit

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Subject is one subject's observed trials, trials[trial][t][state].
type Subject struct {
	ID     string
	Trials [][][]float64
}

// Options configure a Fitter.
type Options struct {
	Restarts int      // random restarts per subject; must be ≥ 1
	Seed     uint64   // seed of the restarts' initial points
	MaxIter  int      // L-BFGS-B iterations per restart; 0 means 200
	Infer    []string // parameters to fit; nil means every parameter the likelihood depends on
	Fix      map[string]float64
	// MaxBatch bounds rows × trials per graph run (memory); 0 means 2500.
	MaxBatch int
	// BestTol: restarts within BestTol + 1e-7·|best| of the best log-likelihood count as
	// reaching it; 0 means 0.01.
	BestTol  float64
	Settings LBFGSBSettings // PGTol and FTol apply to the negative log-likelihood per transition
	// Progress, if set, is called after every batch of evaluations.
	Progress func(Progress)
	// Checkpoint, if set, is called with the state of the fit (FitFrom continues from it)
	// between two batches of evaluations once CheckpointEvery has passed since the start or
	// the last call, and once more when a cancelled fit has stopped. An error from it stops
	// the fit.
	Checkpoint      func(*Checkpoint) error
	CheckpointEvery time.Duration
	// Uncertainty says how standard errors are computed: UncertaintyRobust ("" means it) or
	// UncertaintyHessian (see Result.Uncertainty).
	Uncertainty string
	// Starts gives subjects, by ID, the initial point of their first restart in place of a
	// random one: parameter name → value in its fitting scale (log10 or linear), clipped into
	// the bounds. Fitted parameters it does not name keep their random coordinates. The other
	// restarts are unchanged, so a fit can both refine an earlier estimate (one of another
	// linearization, say) and search the box.
	Starts map[string]map[string]float64
	// StartsFrom names where Starts came from (a results file), for the records (Run.Start).
	StartsFrom string
	// CheckDraws is the number of data sets the goodness-of-fit check simulates per subject
	// (Check); 0 runs no check.
	CheckDraws int
	// Bootstrap is the number of data sets of the parametric bootstrap of each subject with
	// Uncertainty UncertaintyBootstrap (0 means DefaultBootstrapDraws), and BootstrapRestarts
	// the restarts of each refit (0 means DefaultBootstrapRestarts).
	Bootstrap, BootstrapRestarts int
	// BootstrapAgents are the agents the bootstrap simulates from, its data sets split
	// evenly among them (nil means DefaultBootstrapAgents).
	BootstrapAgents []likelihood.AgentVariant
	// Priors gives subjects, by ID, a normal prior on their fitted parameters in fitting
	// scale: the fit then maximizes the log-likelihood plus the log prior density (a MAP
	// estimate), as a population fit's E-step does. Subjects it does not name are fitted by
	// maximum likelihood. Result.LogLik stays the data's log-likelihood at the estimate.
	Priors map[string]Prior
	// Queue bounds the restarts in flight across subjects: subjects start in their order,
	// each as soon as its restarts fit beside the requests of those still running (at least
	// one subject always runs), so that a fit of many subjects evaluates batches of about
	// Queue rows from start to end instead of all subjects' restarts at first and a few at
	// the end. A subject's result does not depend on it. 0 means by backend: on the Go
	// backend and XLA's CPU plugin four full chunks (MaxBatch / trials rows) per core, on XLA
	// on an accelerator two full chunks (its chunks are all padded to one size); never fewer
	// than a subject's restarts. A negative
	// value starts every subject at once.
	Queue int

	refit bool // a bootstrap's refits: no standard errors
	// curvature, if set, is the Hessian of the negative log-likelihood (nats, fitting scale,
	// over the fitted parameters) near every subject's first initial point: that restart's
	// L-BFGS-B memory starts from it (LBFGSBSettings.Curvature), as a bootstrap's refits do
	// from the subject's Hessian at the estimate they start from.
	curvature [][]float64
}

// The ways of computing standard errors (Options.Uncertainty, Result.Uncertainty).
const (
	// UncertaintyRobust: the sandwich H⁻¹ J H⁻¹ of the Hessian H and the covariance J of the
	// trials' scores, which holds where the likelihood is only an approximation of the
	// agent's (the default).
	UncertaintyRobust = "robust"
	// UncertaintyHessian: the inverse Hessian, exact only where the likelihood is.
	UncertaintyHessian = "hessian"
)

// Progress reports how a fit is going.
type Progress struct {
	SubjectsDone, Subjects int
	// Restarts of all subjects, those finished (checkpointed ones included) and those of them
	// that converged.
	Restarts, RestartsDone, RestartsConverged int
	BestLogLik                                float64 // best log-likelihood of any finished subject so far
	Evaluations                               int     // likelihood evaluations so far (each a value and gradient)
	Elapsed                                   time.Duration
	// Fraction estimates the fraction of the work done, by the restarts' iterations (those
	// left to unfinished restarts estimated from the finished ones), and ETA the time left at
	// the pace of this run so far; 0 while unknown.
	Fraction float64
	ETA      time.Duration
}

// Result is the fit of one subject. Standard errors and intervals are in each parameter's
// fitting scale (log10 or linear), from the Hessian of the negative log-likelihood at the
// optimum (Laplace approximation), made robust with the spread of the trials' scores unless
// Uncertainty says otherwise; CI95Natural holds the intervals' ends in natural units.
type Result struct {
	Subject     string
	Params      map[string]float64 // every parameter, natural units (fixed ones included)
	Fitted      []string           // the fitted parameters, in task order
	Scaled      map[string]float64 // fitted parameters in their fitting scale
	LogLik      float64
	StdErr      map[string]float64    // nil when the Hessian is not positive definite
	CI95        map[string][2]float64 // θ̂ ± 1.96·SE in fitting scale
	CI95Natural map[string][2]float64 // CI95 mapped to natural units (10^x for log10 parameters); absent where 10^x overflows
	HessianPD   bool
	// Uncertainty says what StdErr and the intervals are: UncertaintyRobust (the sandwich) or
	// UncertaintyHessian (asked for, or the subject has fewer than MinRobustTrials (10) trials per fitted
	// parameter); empty when there are none.
	Uncertainty   string
	StdErrHessian map[string]float64 // from the inverse Hessian alone, when it is positive definite
	// Hessian of the negative log-likelihood and ScoreCov, the estimated covariance of the
	// total score (nil unless Uncertainty is robust), in fitting scale over Fitted at the
	// optimum. Not written to results files.
	Hessian  [][]float64 `json:"-"`
	ScoreCov [][]float64 `json:"-"`
	AtBound  []string    // fitted parameters within 1e-6 of a bound (the Laplace approximation is then doubtful)
	AIC, BIC float64
	// LogEvidence is the Laplace approximation of the log marginal likelihood (model
	// evidence) of the subject's data, with a uniform prior over the fitted parameters' box in
	// fitting scale (or the subject's Options.Priors): log p(D|θ̂) + log p(θ̂) + p/2·log 2π −
	// ½·log det H, H the Hessian of the negative log posterior at θ̂ (MacKay 2003, ch. 28).
	// nil where H is not positive definite.
	LogEvidence    *float64
	RestartsAtBest int
	Restarts       int
	Evaluations    int
	Converged      bool
	Status         string // the best restart's optimizer status
	Trials         int
	Seconds        float64
	Err            string // why the subject could not be fitted; empty on success
	// DataDigest is data.Digest of the subject's trials: what the estimate was fitted to.
	DataDigest string
	// Identified is true when the data determine the estimate: the Hessian is positive
	// definite, no parameter but a nuisance one is on a bound of its box, none has a standard
	// error wider than its box, and the trials move. Warnings says what is wrong otherwise
	// (and what to do about it); see diagnose.
	Identified bool
	Warnings   []string
	// Ends holds each restart's final point (the fitted parameters in fitting scale, in
	// restart order; nil for a restart that failed) and EndLogLik its log-likelihood: the
	// local optima a sampler's chains can start from. Not written to results files.
	Ends      [][]float64 `json:"-"`
	EndLogLik []float64   `json:"-"`
	// Check is the goodness-of-fit check (Options.CheckDraws); nil when none ran, and
	// CheckErr then says why if one was asked for.
	Check    *Check
	CheckErr string
	// Bootstrap is the parametric bootstrap (UncertaintyBootstrap); nil when none ran, and
	// BootstrapErr then says why if one was asked for (the robust intervals stand).
	Bootstrap    *Bootstrap
	BootstrapErr string
	// RobustErr says why the robust intervals asked for could not be computed (a trial's
	// score failed or is not finite): StdErr and the intervals are then the inverse Hessian's
	// (Uncertainty is UncertaintyHessian), narrower than the robust ones where the likelihood
	// is approximate. Empty otherwise.
	RobustErr string
	// Profiles holds, for each fitted parameter on a bound of its box, the one-sided profile
	// interval that replaced its interval (Profile); nil when none is on a bound.
	Profiles map[string]Profile
}

// Fitter fits one task's likelihood.
type Fitter struct {
	e    *likelihood.Evaluator
	spec models.Spec
	opts Options
	sel  *Selection
	// The selection's: indices of the fitted parameters, all parameters in fitting scale
	// (fixed values and defaults) and in natural units, bounds of the fitted ones.
	infer         []int
	base, natural []float64
	lo, hi        []float64
	batches       int
	largest       int          // evaluations of the largest round
	started       func(si int) // if set, told of each subject as FitFrom starts it (tests)
}

// New returns a Fitter for the evaluator's likelihood. It checks the options: restarts ≥ 1,
// and the parameters fitted and fixed as NewSelection does.
func New(e *likelihood.Evaluator, opts Options) (*Fitter, error) {
	spec := e.Spec()
	if opts.Restarts < 1 {
		return nil, fmt.Errorf("restarts must be >= 1, got %d", opts.Restarts)
	}
	if opts.MaxIter == 0 {
		opts.MaxIter = 200
	}
	if opts.MaxIter < 1 {
		return nil, fmt.Errorf("max-iter must be >= 1, got %d", opts.MaxIter)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = likelihood.DefaultMaxBatch
	}
	if opts.BestTol <= 0 {
		opts.BestTol = 0.01
	}
	switch opts.Uncertainty {
	case "", UncertaintyRobust, UncertaintyHessian:
	case UncertaintyBootstrap:
		if opts.Bootstrap == 0 {
			opts.Bootstrap = DefaultBootstrapDraws
		}
		if opts.BootstrapAgents == nil {
			opts.BootstrapAgents = DefaultBootstrapAgents()
		}
		if opts.Bootstrap < 3*len(opts.BootstrapAgents) {
			return nil, fmt.Errorf("the bootstrap needs at least 3 data sets per agent, got %d for %d agents", opts.Bootstrap, len(opts.BootstrapAgents))
		}
	default:
		return nil, fmt.Errorf("unknown uncertainty %q: use %s, %s or %s", opts.Uncertainty, UncertaintyRobust, UncertaintyHessian, UncertaintyBootstrap)
	}
	sel, err := NewSelection(e, opts.Infer, opts.Fix)
	if err != nil {
		return nil, err
	}
	f := &Fitter{e: e, spec: spec, opts: opts, sel: sel, infer: sel.infer, base: sel.base, natural: sel.natural,
		lo: sel.lo, hi: sel.hi}
	return f, nil
}

// Ignored returns, when Options.Infer is nil, the parameters left at their defaults, neither
// fitted nor fixed, because the likelihood does not depend on them (Evaluator.Identifiable);
// nil otherwise.
func (f *Fitter) Ignored() []string { return f.sel.Ignored() }

// Options returns the fitter's options, defaults filled in.
func (f *Fitter) Options() Options { return f.opts }

// TaskDigest returns models.Digest of the fitted task (likelihood.Evaluator.TaskDigest).
func (f *Fitter) TaskDigest() string { return f.e.TaskDigest() }

// Restarts returns the number of restarts per subject.
func (f *Fitter) Restarts() int { return f.opts.Restarts }

// SetStarts sets the initial points of the subjects' first restarts and where they came from
// (see Options.Starts and Options.StartsFrom).
func (f *Fitter) SetStarts(from string, starts map[string]map[string]float64) {
	f.opts.StartsFrom, f.opts.Starts = from, starts
}

// SetProgress sets the function called after every batch of evaluations.
func (f *Fitter) SetProgress(fn func(Progress)) { f.opts.Progress = fn }

// SetCheckpoint sets the function called with the fit's state every interval (see
// Options.Checkpoint); a nil fn or an interval of 0 or less disables checkpoints.
func (f *Fitter) SetCheckpoint(every time.Duration, fn func(*Checkpoint) error) {
	f.opts.CheckpointEvery, f.opts.Checkpoint = every, fn
}

// Fitted returns the names of the fitted parameters.
func (f *Fitter) Fitted() []string { return f.sel.Names() }

// InitialPoints returns the restarts' initial points for the subject with the given ID,
// uniform in each fitted parameter's scale inside its bounds, the first one moved to the
// subject's Options.Starts where given. They depend only on the seed, the ID and the starts,
// so a subject gets the same restarts whether it is fitted alone, with others, in a shard or
// after a resume.
func (f *Fitter) InitialPoints(subject string) [][]float64 {
	h := fnv.New64a()
	h.Write([]byte(subject))
	rng := rand.New(rand.NewPCG(f.opts.Seed, h.Sum64()))
	pts := make([][]float64, f.opts.Restarts)
	for r := range pts {
		pts[r] = make([]float64, len(f.infer))
		for k := range f.infer {
			pts[r][k] = f.lo[k] + rng.Float64()*(f.hi[k]-f.lo[k])
		}
	}
	for k, name := range f.Fitted() {
		if v, ok := f.opts.Starts[subject][name]; ok {
			pts[0][k] = min(max(v, f.lo[k]), f.hi[k])
		}
	}
	return pts
}

func (f *Fitter) full(x []float64) []float64 { return f.sel.Full(x) }

// Fit fits every subject and calls emit with each subject's result as soon as it is final
// (emit calls are serialized; an error from emit stops the fit). All restarts of all subjects
// advance together: each round of optimizer steps is one batched likelihood evaluation.
// Cancelling ctx stops the fit; subjects not yet emitted are lost, except for what the last
// checkpoint holds (Options.Checkpoint).
func (f *Fitter) Fit(ctx context.Context, subjects []Subject, emit func(Result) error) error {
	return f.FitFrom(ctx, subjects, nil, emit)
}

// FitFrom is Fit continuing from a checkpoint of a fit with the same options (nil: from the
// start): each restart of a subject found in it goes on from its state there, so that the
// results are those of a fit that was never interrupted. Subjects of the checkpoint that
// are not among subjects are ignored. A checkpoint of other restarts, fitted parameters,
// values of the others or data of a subject is an error.
func (f *Fitter) FitFrom(ctx context.Context, subjects []Subject, from *Checkpoint, emit func(Result) error) error {
	if len(subjects) == 0 {
		return nil
	}
	trials := 0
	for _, s := range subjects {
		if len(s.Trials) == 0 {
			return fmt.Errorf("subject %s has no trials", s.ID)
		}
		trials = max(trials, len(s.Trials))
	}
	tr, err := f.newTracker(subjects, from)
	if err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var (
		mu       sync.Mutex
		done     int
		best     = math.Inf(-1)
		evals    int
		emitErr  error
		evalErr  error
		ckptErr  error
		progress = f.opts.Progress
		lastCkpt = start
		startP   Progress
	)
	checkpointing := f.opts.Checkpoint != nil && f.opts.CheckpointEvery > 0
	tr.progress(&startP)
	// Most requests in flight at once, as the chunks are planned: every restart of every
	// subject, or a Hessian's 2p, or the queue's. (A subject's bootstrap refits and check
	// evaluate in the same batches; planning for them too, 25 and 20 a subject, made the Go
	// backend's chunks larger and the pendulum's default fit 30 % slower.)
	perSubject := max(f.opts.Restarts, 2*len(f.infer))
	most := perSubject * len(subjects)
	queue := f.queueRows(trials)
	if queue >= most {
		queue = 0 // every subject at once
	}
	if queue > 0 {
		most = max(queue, perSubject)
	}
	b := newBatcher(func(reqs []*request) ([]float64, [][]float64, error) {
		ll, grad, err := f.evalBatch(trials, most, reqs)
		mu.Lock()
		evals += len(reqs)
		if err != nil && evalErr == nil {
			evalErr = err
		}
		p := Progress{SubjectsDone: done, Subjects: len(subjects), BestLogLik: best, Evaluations: evals, Elapsed: time.Since(start)}
		mu.Unlock()
		if progress != nil {
			tr.progress(&p)
			if p.Fraction-startP.Fraction > 1e-3 {
				p.ETA = time.Duration(float64(p.Elapsed) * (1 - p.Fraction) / (p.Fraction - startP.Fraction))
			}
			progress(p)
		}
		if checkpointing && time.Since(lastCkpt) >= f.opts.CheckpointEvery {
			lastCkpt = time.Now()
			if err := f.opts.Checkpoint(tr.snapshot()); err != nil {
				mu.Lock()
				ckptErr = cmp.Or(ckptErr, err)
				mu.Unlock()
				cancel()
			}
		}
		return ll, grad, err
	})
	if !graph.CompilesSlowly(f.e.Backend()) {
		// The trial scores' graph is built while the restarts' first graph is: on the Go
		// backend a build runs on one core and leaves the other idle. Its flat chunks serve
		// the last rounds, when few restarts are left, and the robust standard errors use it;
		// with the Hessian's alone it pays too (reaching, one subject, 10 restarts: 3.67 →
		// 3.29 s; cart-pole 7.44 → 6.54 s; docs/speed.md, change 10).
		if err := f.e.FlatChunks(subjects[0].Trials); err != nil {
			return err
		}
		var warm sync.WaitGroup // the fit returns after it, so that nothing outlives Fit
		defer warm.Wait()
		warm.Go(func() { _, _, _ = f.e.TrialScores(subjects[0].Trials, f.full(f.InitialPoints(subjects[0].ID)[0])) })
	}
	var wg sync.WaitGroup
	wg.Add(len(subjects))
	startSubject := func(si int) {
		if f.started != nil {
			f.started(si)
		}
		b.enter()
		go func() {
			defer wg.Done()
			defer b.exit()
			res := f.fitSubject(ctx, b, si, si, subjects[si], start, tr)
			mu.Lock()
			defer mu.Unlock()
			if ctx.Err() != nil || emitErr != nil {
				return
			}
			done++
			if res.Err == "" {
				best = math.Max(best, res.LogLik)
			}
			if err := emit(res); err != nil {
				emitErr = err
				cancel()
				return
			}
			tr.emit(si)
		}()
	}
	if queue == 0 {
		for si := range subjects {
			startSubject(si)
		}
	} else {
		next := 0
		b.admit = func(pending int) bool {
			n := 0
			for next < len(subjects) && (pending == 0 && n == 0 || pending+(n+1)*f.opts.Restarts <= queue || ctx.Err() != nil) {
				startSubject(next)
				next++
				n++
			}
			return n > 0
		}
	}
	stop := make(chan struct{})
	served := make(chan struct{})
	go func() { b.run(stop); close(served) }()
	wg.Wait()
	close(stop)
	<-served
	f.batches += b.batches
	f.largest = max(f.largest, b.largest)
	switch {
	case emitErr != nil:
		return emitErr
	case ckptErr != nil:
		return fmt.Errorf("checkpoint: %w", ckptErr)
	case ctx.Err() != nil:
		if parent.Err() != nil && checkpointing {
			if err := f.opts.Checkpoint(tr.snapshot()); err != nil {
				return fmt.Errorf("%w; checkpoint: %v", ctx.Err(), err)
			}
		}
		return ctx.Err()
	case evalErr != nil:
		return evalErr
	}
	return nil
}

// nonFiniteTrials returns the positions (from 1, at most ten, then "…") of the subject's
// trials whose own log-likelihood is not finite at x, or "" if there are none or the
// evaluation fails.
func (f *Fitter) nonFiniteTrials(s Subject, x []float64) string {
	rows := make([][][][]float64, len(s.Trials))
	thetas := make([][]float64, len(s.Trials))
	for i, tr := range s.Trials {
		rows[i], thetas[i] = [][][]float64{tr}, f.full(x)
	}
	d, err := f.e.Prepare(rows, 1)
	if err != nil {
		return ""
	}
	ll, _, err := f.e.Eval(d, thetas)
	if err != nil {
		return ""
	}
	var bad []string
	for i, v := range ll {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			if len(bad) == 10 {
				bad = append(bad, "…")
				break
			}
			bad = append(bad, strconv.Itoa(i+1))
		}
	}
	return strings.Join(bad, ", ")
}

// batchOrder returns the order in which evalBatch evaluates reqs: by row, then by parameter
// vector; the same for any order the requests came in.
func batchOrder(reqs []*request) []int {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(reqs[a].row, reqs[b].row), slices.Compare(reqs[a].theta, reqs[b].theta), cmp.Compare(a, b))
	})
	return order
}

// Batches returns the number of batched evaluation rounds run so far.
func (f *Fitter) Batches() int { return f.batches }

// LargestBatch returns the most evaluations of any round run so far (the rows of the largest
// batch, before they are split into chunks).
func (f *Fitter) LargestBatch() int { return f.largest }

// evalBatch evaluates requests on their trials, in graph runs of at most MaxBatch rows ×
// trials (likelihood.Evaluator.EvalRows); most is the most requests of any batch of the fit.
//
// The requests are evaluated grouped by row (a subject's restarts side by side, which packs
// faster: likelihood's prepare copies a row that repeats the one before it), and within a row
// in the order of their parameter vectors, not in the order the workers asked: on XLA's CPU
// plugin with its code for AVX-512 a row's last bits can depend on its place in its chunk
// (where trials are not lanes and the command did not cap the code: graph.ExactRowsOnCPU,
// docs/backends.md, "A row's place in its chunk"), and the workers' order changes from run to
// run.
func (f *Fitter) evalBatch(trials, most int, reqs []*request) ([]float64, [][]float64, error) {
	order := batchOrder(reqs)
	dataRows := make([][][][]float64, len(reqs))
	thetas := make([][]float64, len(reqs))
	for k, i := range order {
		dataRows[k], thetas[k] = reqs[i].data, reqs[i].theta
	}
	ll, grad, err := f.e.EvalRows(dataRows, thetas, likelihood.Batching{Trials: trials, MaxBatch: f.opts.MaxBatch, Most: most, Keep: true})
	if err != nil {
		return nil, nil, err
	}
	outLL, outGrad := make([]float64, len(reqs)), make([][]float64, len(reqs))
	for k, i := range order {
		outLL[i], outGrad[i] = ll[k], grad[k]
	}
	return outLL, outGrad, nil
}
