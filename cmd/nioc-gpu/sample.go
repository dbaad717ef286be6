package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior/ioc"
)

func init() {
	register(command{name: "sample", summary: "draw from the posterior of every subject's parameters (batched NUTS, resumable)", run: runSample})
}

// samplerFlags are sample's flags of the sampler itself.
type samplerFlags struct {
	chains, warmup, draws, together, maxDepth, fitRestarts, maxWarmup int
	seed                                                              uint64
	prior, init, adjust, metric                                       string
	targetAccept                                                      float64
	force, crossChain                                                 bool
	maxMemory                                                         memoryFlag
}

func (f *samplerFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.chains, "chains", 4, "chains per subject (on a GPU with a few subjects more chains cost little: 16 with --cross-chain gave ten reaching subjects 8 times the effective draws per likelihood call, docs/posterior.md, \"Many chains on a GPU\")")
	fs.IntVar(&f.warmup, "warmup", 500, "warm-up iterations per chain (step size and metric adaptation; not kept); 0 for none")
	fs.IntVar(&f.draws, "draws", 1000, "draws per chain after warm-up")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the chains (with each subject's ID) and of --init fit's restarts")
	fs.StringVar(&f.prior, "prior", "", "priors name=normal(mu,sd),... in each parameter's fitting scale (log10 or linear), truncated to its search box; default uniform on the box in the fitting scale")
	fs.StringVar(&f.init, "init", initFit, "where chains start: fit (fit every subject first as nioc-gpu fit does by default, into OUT/fit.jsonl, and start around its estimates: with --adjust auto the likelihood is then widened as fit's bootstrap intervals say, which is what covers on data not made by the likelihood's agent), a results `file` of nioc-gpu fit (fit.jsonl) of the same task and data (the same, from a fit you ran), optimize (where short likelihood climbs from random points of the box end; faster, but with --adjust auto the intervals are the curvature adjustment's alone, docs/posterior.md) or dispersed (random points of the box, as Stan)")
	fs.IntVar(&f.fitRestarts, "fit-restarts", 50, "with --init fit: random restarts per subject of that fit (fit's --restarts)")
	fs.StringVar(&f.adjust, "adjust", ioc.AdjustAuto, "the likelihood sampled: auto (bootstrap for a subject whose --init fit ran fit's default bootstrap, else curvature), curvature (widened around each subject's maximum-likelihood estimate where the trials' scores vary more than its curvature says, to the robust (sandwich) covariance of fit; needs 10 trials per sampled parameter), bootstrap (as curvature, but to the covariance of fit's default intervals, re-centred by its bootstrap's bias: needs --init with fit's default results; for subjects who may not be the likelihood's agent, docs/posterior.md) or none (as it is: too narrow where the likelihood approximates the agent)")
	fs.BoolVar(&f.force, "force", false, "replace the outputs in --out")
	fs.IntVar(&f.together, "together", 0, "subjects sampled together, their chains in lockstep, written when all are done (default: as many as one graph run of --max-batch holds)")
	fs.IntVar(&f.maxDepth, "max-depth", 10, "maximum tree depth of NUTS (at most 2^depth - 1 leapfrog steps a draw)")
	fs.StringVar(&f.metric, "metric", "dense", "the sampler's metric (mass matrix), adapted in warm-up: dense (the draws' covariance, for correlated parameters) or diag (their variances, Stan's default)")
	fs.IntVar(&f.maxWarmup, "max-warmup", 0, "with --cross-chain, go on warming up past --warmup, one window at a time, while a subject's chains disagree (R-hat > 1.1 over the last window's draws), up to this many iterations (0: --warmup)")
	fs.BoolVar(&f.crossChain, "cross-chain", false, "estimate the metric in warm-up from the draws of all of a subject's chains together (their covariance about their common mean), so that chains spread along a ridge of the posterior take long steps along it (docs/posterior.md, \"Ridges\")")
	fs.Float64Var(&f.targetAccept, "target-accept", 0.8, "target acceptance statistic of the step-size adaptation, in (0, 1); raise it (e.g. 0.95) against divergences")
	f.maxMemory.register(fs)
}

// check returns a usage error for a flag's value out of its range; resume is --resume.
func (f *samplerFlags) check(fs *flag.FlagSet, resume bool) error {
	switch {
	case isSet(fs, "together") && f.together < 1:
		return usagef("--together must be >= 1, got %d", f.together)
	case f.maxDepth < 1:
		return usagef("--max-depth must be >= 1, got %d", f.maxDepth)
	case f.maxWarmup < 0:
		return usagef("--max-warmup must be >= 0, got %d", f.maxWarmup)
	case f.maxWarmup > 0 && !f.crossChain:
		return usagef("--max-warmup needs --cross-chain: the chains decide together, from their pooled window draws, whether to go on")
	case !(f.targetAccept > 0 && f.targetAccept < 1):
		return usagef("--target-accept must be in (0, 1), got %g", f.targetAccept)
	case f.metric != "dense" && f.metric != "diag":
		return usagef("unknown --metric %q: want dense or diag", f.metric)
	case f.fitRestarts < 1:
		return usagef("--fit-restarts must be >= 1, got %d", f.fitRestarts)
	case resume && f.force:
		return usagef("--resume continues the run in --out and --force replaces it: give one")
	}
	return nil
}

// start returns where the chains start (--init), and whether at the estimates of a fit's
// results file (--init fit included).
func (f *samplerFlags) start() (start ioc.Start, fromFit bool, err error) {
	if _, err := ioc.ParseStart(f.init); err != nil {
		if f.init == "" {
			return "", false, usagef("--init needs fit, optimize, dispersed or a results file of nioc-gpu fit")
		}
		return ioc.StartDispersed, true, nil
	}
	return ioc.Start(f.init), false, nil
}

func runSample(args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); name == "population" && strings.HasPrefix(a, "-") {
			return runSamplePopulation(args, stdout, stderr)
		}
	}
	fs := newFlags("sample", "--task NAME --data FILE.csv [--chains 4] [--warmup 500] [--draws 1000] [--seed S] [--observe partial|full] [--method ours|baseline] [--planner full|partial] [--timing act-then-see|see-then-act] [--linearize data|mean|ilqg] [--temperature fit|task|τ] [--infer name,...] [--fix name=value,...] [--prior name=normal(mu,sd),...] [--metric dense|diag] [--init fit|FIT.jsonl|optimize|dispersed] [--fit-restarts 50] [--adjust auto|curvature|bootstrap|none] [--shard k/N] [--resume] [--force] [--plots=false] [--truth name=value,...] [--truth-file truth.csv] [--ppc N] [--ppc-draws 10] [--max-memory auto|SIZE] --out DIR", stderr)
	var tf taskFlags
	tf.register(fs, true)
	var sf subjectFlags
	sf.register(fs, "sample", "output directory: draws.csv, summary.csv, summary.json")
	var f samplerFlags
	f.register(fs)
	var ff figureFlags
	ff.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	if err := required(fs, "data", "out"); err != nil {
		return err
	}
	if err := refuseNonDir("out", sf.out); err != nil {
		return err
	}
	if err := f.check(fs, sf.resume); err != nil {
		return err
	}
	k, n, fixed, err := sf.parse()
	if err != nil {
		return err
	}
	priors, err := ioc.ParsePriors(f.prior)
	if err != nil {
		return usageError{err}
	}
	opts, err := tf.likelihoodOptions(m.Spec())
	if err != nil {
		return err
	}
	if err := sf.checkTemperature(&tf, m.Spec(), opts, fixed); err != nil {
		return err
	}
	if err := checkSampleOutputs(&sf, &f); err != nil {
		return err
	}
	set, opts, err := readPlanned(&tf, sf.data, &sf.maxBatch, m, opts, f.maxMemory, stderr)
	if err != nil {
		return err
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	start, fromFit, err := f.start()
	if err != nil {
		return err
	}
	if f.adjust == ioc.AdjustBootstrap && !fromFit {
		return usagef("--adjust bootstrap needs --init FIT.jsonl: the results of nioc-gpu fit (its default --uncertainty bootstrap) on the same data")
	}
	if f.adjust == ioc.AdjustAuto && !fromFit {
		fmt.Fprintf(stderr, "note: with --init %s the likelihood is widened by its curvature alone, whose 90 %% intervals covered 76-88 %% of each parameter of our own agent's data (pendulum, navigation) and far fewer of other agents'; the default --init fit widens it as fit's bootstrap intervals say, which covers (docs/posterior.md)\n", f.init)
	}
	sampler, err := ioc.New(e, ioc.Options{Chains: f.chains, Warmup: f.warmup, Draws: f.draws, Seed: f.seed, Start: start, DenseMetric: f.metric == "dense", CrossChain: f.crossChain, MaxWarmup: f.maxWarmup,
		MaxDepth: f.maxDepth, TargetAccept: f.targetAccept, Infer: parseNames(sf.infer), Fix: fixed, Priors: priors,
		MaxBatch: sf.maxBatch, Together: f.together, Adjust: f.adjust})
	if err != nil {
		return usageError{err}
	}
	if err := ff.check(sampler.Selection().Spec(), m, sf.out, ioc.Subjects(set, k, n), stderr); err != nil {
		return err
	}
	if f.init == initFit {
		sampler.Prebuild(ioc.Subjects(set, k, n)) // on a GPU the sampler's programs compile while the fit runs
		if f.init, err = fitForSample(e, set, k, n, f.fitRestarts, f.seed, parseNames(sf.infer), fixed, sf.maxBatch, sf.out, sf.resume, sf.quiet, stderr); err != nil {
			return err
		}
	}
	err = sampleData(sampler, m, set, &sf, &f, &ff, k, n, fromFit, stderr)
	noteXLACompiled(e.Backend(), err, sf.quiet, stderr)
	return err
}

// checkSampleOutputs refuses the outputs of a sample run that exist (unless --resume or
// --force) or that are the data file.
func checkSampleOutputs(sf *subjectFlags, f *samplerFlags) error {
	outputs := ioc.Files(sf.out)
	if f.init == initFit {
		outputs = append(outputs, sampleFitFiles(sf.out)...)
	}
	if !sf.resume && !f.force {
		if err := refuseExisting("use --resume to continue that run, --force to replace it, or choose another --out", outputs...); err != nil {
			return err
		}
	}
	for _, p := range outputs {
		if sameFile(p, sf.data) {
			return usagef("the output %s would overwrite the data file; choose another --out", p)
		}
	}
	return nil
}

// sampleData samples the subjects of set (read from --data) in its shard k of n that the
// output directory lacks with sampler, from the estimates of --init's results file when
// fromFit; m is the task.
func sampleData(sampler *ioc.Sampler, m models.Model, set *data.Set, sf *subjectFlags, f *samplerFlags, ff *figureFlags, k, n int, fromFit bool, stderr io.Writer) error {
	spec := sampler.Selection().Spec()
	if err := noteLengths(stderr, set, spec, sf.data); err != nil {
		return err
	}
	subjects := ioc.Subjects(set, k, n)
	var err error
	if fromFit {
		if sampler, err = initSampler(sampler, f.init, subjects, set, stderr); err != nil {
			return err
		}
	}
	figs, err := ff.parse(m, sampler, f.seed, subjects)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sf.out, 0o755); err != nil {
		return err
	}
	if err := checkWritable(filepath.Join(sf.out, ioc.SummaryJSONFile)); err != nil {
		return err
	}
	run := sampler.Run(f.init)
	run.Version = versionString()
	open := ioc.Create
	if sf.resume {
		open = ioc.Resume
	}
	w, err := open(sf.out, run, sampler.Params())
	if err != nil {
		return err
	}
	defer w.Close()
	if diff := w.DataDifferences(set.Digests()); len(diff) > 0 {
		return fmt.Errorf("%s holds subjects sampled with other data; resume it with its data, or use --force or another --out:\n  %s", sf.out, strings.Join(diff, "\n  "))
	}
	done := len(w.Done())
	if w.EarlierDrawsLayout() {
		fmt.Fprintf(stderr, "note: %s is of an earlier version, without the columns energy, accept_stat and n_leapfrog; the rows added to it leave them out too (--force starts afresh with them)\n",
			filepath.Join(sf.out, ioc.DrawsFile))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return sampleSubjects(ctx, sampler, run, w.Remaining(subjects), w, figs, sf.out, done, sf.quiet, stderr)
}

// initSampler returns sampler with its chains starting at the estimates of the subjects in
// the results file path (ioc.Sampler.WithInit), and says on stderr which parameters no
// estimate holds and which subjects' estimates were fitted to other data than set.
func initSampler(sampler *ioc.Sampler, path string, subjects []fit.Subject, set *data.Set, stderr io.Writer) (*ioc.Sampler, error) {
	ids := make([]string, len(subjects))
	for i, s := range subjects {
		ids[i] = s.ID
	}
	sampler, absent, fitted, err := sampler.WithInit(path, ids)
	if err != nil {
		return nil, err
	}
	if len(absent) > 0 {
		fmt.Fprintf(stderr, "--init: %s holds no estimate of %s: those chains start over-dispersed\n", path, strings.Join(absent, ", "))
	}
	noteStartData(stderr, "--init", path, fitted, set)
	return sampler, nil
}

// sampleSubjects samples subjects with sampler into w (the outputs in dir, which already hold
// done subjects), draws each subject's figures with figs (nil: none) and reports on stderr.
func sampleSubjects(ctx context.Context, sampler *ioc.Sampler, run ioc.Run, subjects []fit.Subject, w *ioc.Output, figs *sampleFigures, dir string, done int, quiet bool, stderr io.Writer) error {
	for _, name := range sampler.Selection().Ignored() {
		spec := sampler.Selection().Spec()
		fmt.Fprintf(stderr, "not sampled: %s, held at %g: the likelihood (method %s, observe %s, planner %s) does not depend on it\n",
			name, spec.Params[paramIndex(spec, name)].Default, run.Method, run.Observe, run.Planner)
	}
	priors := "uniform in each parameter's fitting scale on its search box"
	if len(run.Priors) > 0 {
		var p []string
		for _, name := range run.Sampled {
			if v, ok := run.Priors[name]; ok {
				p = append(p, name+"="+v)
			}
		}
		priors = strings.Join(p, ", ") + " (fitting scale); the others uniform"
	}
	fmt.Fprintf(stderr, "sampling %s (%s, %s observability) for %d subject(s): %d chains × (%d warm-up + %d draws); sampled: %s; priors: %s\n",
		run.Task, run.Method, run.Observe, len(subjects), run.Chains, run.Warmup, run.Draws, strings.Join(run.Sampled, ", "), priors)
	if done > 0 {
		fmt.Fprintf(stderr, "resuming: %d subject(s) already in %s\n", done, dir)
	}
	bar := newProgressBar(stderr, quiet)
	sampler.SetProgress(func(p ioc.Progress) {
		if !bar.due() {
			return
		}
		phase := ""
		if p.Climbing {
			phase = "finding starting points  "
		}
		bar.show(p.Fraction(), fmt.Sprintf("%s%d/%d subjects  %.0f evals/s  %s", phase, p.SubjectsDone, p.Subjects,
			float64(p.Evaluations)/p.Elapsed.Seconds(), p.Elapsed.Round(time.Second)))
	})
	var failed, warned, warnings, written int
	err := sampler.Sample(ctx, subjects, func(rs []ioc.Result) error {
		if err := w.Write(rs); err != nil {
			return err
		}
		figs.write(sampler, rs, bar.println)
		for _, r := range rs {
			written++
			if r.Err != "" {
				failed++
				bar.println(fmt.Sprintf("subject %s: could not be sampled: %s", r.Subject, r.Err))
			}
			if len(r.Warnings) > 0 {
				warned++
			}
			for _, wn := range r.Warnings {
				warnings++
				bar.println("warning: " + wn.Message)
			}
		}
		return nil
	})
	bar.finish()
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: %d subject(s) are in %s; rerun with --resume to continue\n", done+written, dir)
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if failed > 0 && failed == len(subjects) {
		return fmt.Errorf("no subject could be sampled: all %d failed (see above and the error field of %s)", failed,
			filepath.Join(dir, ioc.SummaryJSONFile))
	}
	fmt.Fprintf(stderr, "done: %d subject(s) in %s (%s, %s, %s%s)", done+written, dir, ioc.DrawsFile, ioc.SummaryFile, ioc.SummaryJSONFile, figs.files())
	if failed > 0 {
		fmt.Fprintf(stderr, "; %d could not be sampled", failed)
	}
	if warnings > 0 {
		fmt.Fprintf(stderr, "; %d warning(s) for %d subject(s), listed in summary.json: do not trust those summaries before acting on them", warnings, warned)
	}
	fmt.Fprintln(stderr)
	return nil
}
