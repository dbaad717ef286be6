package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/posterior/ioc"
)

func init() {
	register(command{name: "sample", summary: "draw from the posterior of every subject's parameters (batched NUTS, resumable)", run: runSample})
}

func runSample(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sample", "--task NAME --data FILE.csv [--chains 4] [--warmup 500] [--draws 1000] [--seed S] [--observe partial|full] [--method ours|baseline] [--planner full|partial] [--linearize data|mean|ilqg] [--temperature fit|task|τ] [--infer name,...] [--fix name=value,...] [--prior name=normal(mu,sd),...] [--metric dense|diag] [--init optimize|dispersed|fit.jsonl] [--adjust curvature|none] [--shard k/N] [--resume] [--force] [--plots=false] [--truth name=value,...] [--truth-file truth.csv] [--ppc N] [--ppc-draws 10] --out DIR", stderr)
	var tf taskFlags
	tf.register(fs, true)
	var sf subjectFlags
	sf.register(fs, "sample", "output directory: draws.csv, summary.csv, summary.json")
	chains := fs.Int("chains", 4, "chains per subject")
	warmup := fs.Int("warmup", 500, "warm-up iterations per chain (step size and metric adaptation; not kept); 0 for none")
	draws := fs.Int("draws", 1000, "draws per chain after warm-up")
	seed := fs.Uint64("seed", 1, "seed of the chains (with each subject's ID)")
	prior := fs.String("prior", "", "priors name=normal(mu,sd),... in each parameter's fitting scale (log10 or linear), truncated to its search box; default uniform on the box in the fitting scale")
	initPath := fs.String("init", string(ioc.StartOptimized), "where chains start: optimize (where short likelihood climbs from random points of the box end), dispersed (random points of the box, as Stan), or a results `file` of nioc-gpu fit (fit.jsonl) of the same task (around each subject's estimate)")
	adjust := fs.String("adjust", ioc.AdjustCurvature, "the likelihood sampled: curvature (widened around each subject's maximum-likelihood estimate where the trials' scores vary more than its curvature says, to the robust (sandwich) covariance of fit; needs 10 trials per sampled parameter) or none (as it is: too narrow where the likelihood approximates the agent)")
	force := fs.Bool("force", false, "replace the outputs in --out")
	together := fs.Int("together", 0, "subjects sampled together, their chains in lockstep, written when all are done (default: as many as one graph run of --max-batch holds)")
	maxDepth := fs.Int("max-depth", 10, "maximum tree depth of NUTS (at most 2^depth - 1 leapfrog steps a draw)")
	metric := fs.String("metric", "dense", "the sampler's metric (mass matrix), adapted in warm-up: dense (the draws' covariance, for correlated parameters) or diag (their variances, Stan's default)")
	targetAccept := fs.Float64("target-accept", 0.8, "target acceptance statistic of the step-size adaptation, in (0, 1); raise it (e.g. 0.95) against divergences")
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
	switch {
	case isSet(fs, "together") && *together < 1:
		return usagef("--together must be >= 1, got %d", *together)
	case *maxDepth < 1:
		return usagef("--max-depth must be >= 1, got %d", *maxDepth)
	case !(*targetAccept > 0 && *targetAccept < 1):
		return usagef("--target-accept must be in (0, 1), got %g", *targetAccept)
	case *metric != "dense" && *metric != "diag":
		return usagef("unknown --metric %q: want dense or diag", *metric)
	case sf.resume && *force:
		return usagef("--resume continues the run in --out and --force replaces it: give one")
	}
	k, n, fixed, err := sf.parse()
	if err != nil {
		return err
	}
	priors, err := ioc.ParsePriors(*prior)
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
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	start, fromFit := ioc.Start(*initPath), false
	if _, err := ioc.ParseStart(*initPath); err != nil {
		if *initPath == "" {
			return usagef("--init needs optimize, dispersed or a results file of nioc-gpu fit")
		}
		start, fromFit = ioc.StartDispersed, true
	}
	sampler, err := ioc.New(e, ioc.Options{Chains: *chains, Warmup: *warmup, Draws: *draws, Seed: *seed, Start: start, DenseMetric: *metric == "dense",
		MaxDepth: *maxDepth, TargetAccept: *targetAccept, Infer: parseNames(sf.infer), Fix: fixed, Priors: priors,
		MaxBatch: sf.maxBatch, Together: *together, Adjust: *adjust})
	if err != nil {
		return usageError{err}
	}
	outputs := ioc.Files(sf.out)
	if !sf.resume && !*force {
		if err := refuseExisting("use --resume to continue that run, --force to replace it, or choose another --out", outputs...); err != nil {
			return err
		}
	}
	for _, p := range outputs {
		if sameFile(p, sf.data) {
			return usagef("the output %s would overwrite the data file; choose another --out", p)
		}
	}
	spec := e.Spec()
	set, err := readData(sf.data, spec)
	if err != nil {
		return err
	}
	if err := noteLengths(stderr, set, spec, sf.data); err != nil {
		return err
	}
	var subjects []fit.Subject
	for i, s := range set.Subjects {
		if i%n == k-1 {
			subjects = append(subjects, fit.Subject{ID: s.ID, Trials: trialsOf(s)})
		}
	}
	names := sampler.Selection().Names()
	if fromFit {
		ids := make([]string, len(subjects))
		for i, s := range subjects {
			ids[i] = s.ID
		}
		init, absent, err := ioc.ReadInit(*initPath, spec, ids, names)
		if err != nil {
			return err
		}
		if len(absent) > 0 {
			fmt.Fprintf(stderr, "--init: %s holds no estimate of %s: those chains start over-dispersed\n", *initPath, strings.Join(absent, ", "))
		}
		fitted := map[string]string{}
		for id, est := range init {
			fitted[id] = est.DataDigest
		}
		noteStartData(stderr, "--init", *initPath, fitted, set)
		o := sampler.Options()
		o.Init = init
		if sampler, err = ioc.New(e, o); err != nil {
			return err
		}
	}
	figs, err := ff.parse(spec, m, sampler, sf.out, *seed, subjects, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sf.out, 0o755); err != nil {
		return err
	}
	if err := checkWritable(filepath.Join(sf.out, ioc.SummaryJSONFile)); err != nil {
		return err
	}
	run := sampler.Run(*initPath)
	run.Version = versionString()
	var w *ioc.Output
	if sf.resume {
		w, err = ioc.Resume(sf.out, run, sampler.Params())
	} else {
		w, err = ioc.Create(sf.out, run, sampler.Params())
	}
	if err != nil {
		return err
	}
	defer w.Close()
	digests := map[string]string{}
	for _, s := range set.Subjects {
		digests[s.ID] = s.Digest()
	}
	if diff := w.DataDifferences(digests); len(diff) > 0 {
		return fmt.Errorf("%s holds subjects sampled with other data; resume it with its data, or use --force or another --out:\n  %s", sf.out, strings.Join(diff, "\n  "))
	}
	done := w.Done()
	subjects = slices.DeleteFunc(subjects, func(s fit.Subject) bool { return slices.Contains(done, s.ID) })
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return sampleSubjects(ctx, sampler, run, subjects, w, figs, sf.out, len(done), sf.quiet, stderr)
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
		frac := (float64(p.SubjectsDone) + float64(p.Transitions)/float64(max(1, p.Total))) / float64(max(1, p.Subjects))
		phase := ""
		if p.Climbing {
			phase = "finding starting points  "
		}
		bar.show(frac, fmt.Sprintf("%s%d/%d subjects  %.0f evals/s  %s", phase, p.SubjectsDone, p.Subjects,
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
