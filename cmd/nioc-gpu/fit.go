package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "fit", summary: "fit the agent's parameters to every subject of a data file (batched restarts, resumable)", run: runFit})
	register(command{name: "merge", summary: "combine the results files of shards into one", run: runMerge})
}

// errInterrupted is returned when a signal stopped a fit; the exit status is 130.
var errInterrupted = errors.New("interrupted")

// parseShard parses "k/N" (1 ≤ k ≤ N).
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 1, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || k > n {
		return 0, 0, usagef("--shard %q: need k/N with 1 <= k <= N, e.g. 2/8", s)
	}
	return k, n, nil
}

// parseNames parses a comma-separated list of parameter names.
func parseNames(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(n))
	}
	return out
}

// fitMaxIter is fit's default --max-iter, the L-BFGS-B iterations of a restart.
const fitMaxIter = 200

// fitFlags are fit's flags of the fit itself.
type fitFlags struct {
	restarts, maxIter, bootDraws, bootRestarts, checkDraws, queue int
	seed                                                          uint64
	start, uncertainty, bootAgents                                string
	every                                                         time.Duration
	maxMemory                                                     memoryFlag
}

func (ff *fitFlags) register(fs *flag.FlagSet) {
	ff.maxMemory.register(fs)
	fs.IntVar(&ff.restarts, "restarts", 50, "random restarts per subject (initial points uniform in each parameter's scale within its bounds)")
	fs.Uint64Var(&ff.seed, "seed", 1, "seed of the restarts' initial points")
	fs.IntVar(&ff.maxIter, "max-iter", fitMaxIter, "L-BFGS-B iterations per restart")
	fs.StringVar(&ff.start, "start", "", "a results `file` of nioc-gpu fit of the same task: each subject's first restart begins at its estimate there (one with another --linearize, say), the other restarts at random points")
	fs.StringVar(&ff.uncertainty, "uncertainty", fit.UncertaintyBootstrap, "standard errors and intervals: bootstrap (robust, widened and re-centred by a bias-corrected parametric bootstrap: --bootstrap-draws data sets simulated at the estimate by the --bootstrap-agents and refitted, and widened to the likelihood's other peaks within the bootstrap's likelihood-ratio region; the intervals that hold on other agents' data, docs/intervals.md), robust (sandwich of the Hessian and the spread of the trials' scores, about half the time; needs 10 trials per fitted parameter, else the Hessian is used) or hessian (inverse Hessian: exact only where the likelihood is)")
	fs.IntVar(&ff.bootDraws, "bootstrap-draws", fit.DefaultBootstrapDraws, "with --uncertainty bootstrap: data sets simulated at each subject's estimate and refitted")
	fs.IntVar(&ff.bootRestarts, "bootstrap-restarts", fit.DefaultBootstrapRestarts, "with --uncertainty bootstrap: restarts of each refit, the first from the estimate, the others random")
	fs.StringVar(&ff.bootAgents, "bootstrap-agents", fit.DefaultBootstrapAgentNames, "with --uncertainty bootstrap: the agents whose data the bootstrap simulates at the estimate, its draws split evenly: ours (the likelihood's), ours-nonoise (no policy noise), iterN (planner stopped after N iterations), delay1 (sensing one step late), nofeedforward (the noise-free optimum's controls, as the JAX reference's agents), or departures joined with + into one agent (ours-nonoise+iter10+nofeedforward: one like the JAX reference's)")
	fs.IntVar(&ff.checkDraws, "check-draws", fit.DefaultCheckDraws, "data sets the goodness-of-fit check simulates from the fitted agent per subject (the record's \"check\"; a warning when its p-value is below 0.05: the intervals are then too narrow); 0 turns the check off")
	fs.IntVar(&ff.queue, "queue", 0, "restarts in flight across subjects (`N`): subjects start in order as others finish, so that a fit of many subjects evaluates batches of about N from start to end (results are those of each subject fitted alone); 0 picks by backend (four chunks of --max-batch per core; on XLA on a GPU two chunks); -1 starts every subject at once")
	fs.DurationVar(&ff.every, "checkpoint-every", time.Minute, "save every restart's optimizer state to OUT.ckpt this often (and on Ctrl-C), for --resume after a crash or kill; 0 disables")
}

// check returns a usage error for a flag's value out of its range.
func (ff *fitFlags) check() error {
	switch u := ff.uncertainty; {
	case ff.restarts < 1:
		return usagef("--restarts must be >= 1, got %d", ff.restarts)
	case ff.maxIter < 1:
		return usagef("--max-iter must be >= 1, got %d", ff.maxIter)
	case u != fit.UncertaintyRobust && u != fit.UncertaintyHessian && u != fit.UncertaintyBootstrap:
		return usagef("--uncertainty must be %s, %s or %s, got %q", fit.UncertaintyRobust, fit.UncertaintyHessian, fit.UncertaintyBootstrap, u)
	case ff.bootDraws < 3 || ff.bootRestarts < 1:
		return usagef("--bootstrap-draws must be >= 3 and --bootstrap-restarts >= 1, got %d and %d", ff.bootDraws, ff.bootRestarts)
	case ff.bootAgents == "":
		return usagef("--bootstrap-agents must name at least one agent (ours, ours-nonoise, iterN, delay1)")
	case ff.checkDraws < 0 || ff.checkDraws == 1 || ff.checkDraws == 2:
		return usagef("--check-draws must be 0 (no check) or at least 3, got %d", ff.checkDraws)
	case ff.every < 0:
		return usagef("--checkpoint-every must be >= 0 (0 disables checkpoints), got %s", ff.every)
	}
	return nil
}

func runFit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fit", "--task NAME --data FILE.csv [--observe partial|full] [--method ours|baseline] [--planner full|partial] [--timing act-then-see|see-then-act] [--linearize data|mean|ilqg] [--temperature fit|task|τ] [--first-order-noise] [--restarts 50] [--seed S] [--start fit.jsonl] [--max-iter N] [--uncertainty bootstrap|robust|hessian] [--bootstrap-agents ours,ours-nonoise,iter10,nofeedforward,ours-nonoise+iter10+nofeedforward] [--check-draws 20] [--infer name,...] [--fix name=value,...] [--shard k/N] [--resume] [--checkpoint-every 60s] [--max-memory auto|SIZE] [--backend go|xla] --out results.jsonl", stderr)
	var tf taskFlags
	tf.register(fs, true)
	var sf subjectFlags
	sf.register(fs, "fit", "results file (JSON Lines, one subject per line); a .csv table is written beside it")
	var ff fitFlags
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
	if err := refuseDir("out", sf.out); err != nil {
		return err
	}
	spec := m.Spec()
	if err := ff.check(); err != nil {
		return err
	}
	k, n, fixed, err := sf.parse()
	if err != nil {
		return err
	}
	opts, err := tf.likelihoodOptions(spec)
	if err != nil {
		return err
	}
	if err := sf.checkTemperature(&tf, spec, opts, fixed); err != nil {
		return err
	}
	set, opts, err := readPlanned(&tf, sf.data, &sf.maxBatch, m, opts, ff.maxMemory, stderr)
	if err != nil {
		return err
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	// XLA's CPU plugin: a P more than the workers, so that Go's runtime leaves the calls'
	// threads alone (graph.KeepSpareP; not for sample, whose short calls it slowed).
	graph.KeepSpareP(e.Backend())
	agents, err := likelihood.ParseAgentVariants(ff.bootAgents)
	if err != nil {
		return usagef("--bootstrap-agents: %v", err)
	}
	fitter, err := fit.New(e, fit.Options{Restarts: ff.restarts, Seed: ff.seed, MaxIter: ff.maxIter, BootstrapAgents: agents,
		Infer: parseNames(sf.infer), Fix: fixed, MaxBatch: sf.maxBatch, CheckpointEvery: ff.every,
		Uncertainty: ff.uncertainty, CheckDraws: ff.checkDraws, Bootstrap: ff.bootDraws, BootstrapRestarts: ff.bootRestarts, Queue: ff.queue})
	if err != nil {
		return usageError{err}
	}
	if !sf.resume {
		if err := refuseExisting("use --resume to continue that run, or choose another --out", sf.out, fit.CheckpointPath(sf.out)); err != nil {
			return err
		}
	}
	if sameFile(fit.CSVPath(sf.out), sf.data) {
		return usagef("the results table %s would overwrite the data file; choose another --out", fit.CSVPath(sf.out))
	}
	if err := noteLengths(stderr, set, spec, sf.data); err != nil {
		return err
	}
	if ff.start != "" {
		starts, err := readStarts(ff.start, e.Spec(), set, k, n, stderr)
		if err != nil {
			return err
		}
		fitter.SetStarts(ff.start, starts)
	} else if opts.Linearize == likelihood.LinearizeILQG && !sf.quiet {
		fmt.Fprintln(stderr, "note: from random points, --linearize ilqg fits often end in failed line searches; --start a --linearize data fit's results to begin one restart there (docs/posterior.md, \"What remains\")")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = fitFile(ctx, fitter, e.Spec(), e.Options(), set, k, n, sf.out, sf.quiet, stderr)
	noteXLACompiled(e.Backend(), err, sf.quiet, stderr)
	return err
}

// readStarts returns the estimates that the results file path holds for the subjects of set in
// shard k of n, in the fitting scales of spec's parameters (study.ReadStarts), and notes on
// stderr those fitted to other data.
func readStarts(path string, spec models.Spec, set *data.Set, k, n int, stderr io.Writer) (map[string]map[string]float64, error) {
	starts, fitted, err := study.ReadStarts(path, spec, set, k, n)
	if err != nil {
		return nil, fmt.Errorf("--start: %w", err)
	}
	noteStartData(stderr, "--start", path, fitted, set)
	return starts, nil
}

// noteStartData says on stderr which subjects of set the estimates in path (flag --start or
// --init; data digests by subject, "" where the record predates them) were fitted to other
// data, and how many cannot be checked: their estimates are only starting points, so the run
// goes on, but a user who gave the wrong file learns it.
func noteStartData(stderr io.Writer, flag, path string, fitted map[string]string, set *data.Set) {
	var other []string
	unknown := 0
	for _, s := range set.Subjects {
		d, ok := fitted[s.ID]
		switch {
		case !ok:
		case d == "":
			unknown++
		case d != s.Digest():
			other = append(other, s.ID)
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(stderr, "warning: %s: %s was fitted to other data than --data for subject(s) %s: their estimates are only where the runs start\n", flag, path, strings.Join(other, ", "))
	}
	if unknown > 0 {
		fmt.Fprintf(stderr, "note: %s: %d record(s) of %s were written before results recorded their data: not checked against --data\n", flag, unknown, path)
	}
}

// fitFile fits the subjects of set in shard k of n with fitter and appends their results to
// out, skipping subjects already there; it then rewrites the CSV table beside it
// (study.ResultsFile), and says on stderr how it goes. Results in out from a run with other
// settings are an error listing the differences, and so is a run in which no subject could be
// fitted. With the fitter's Options.CheckpointEvery, the restarts' state is saved beside out
// (fit.CheckpointPath) that often and when ctx is cancelled; a checkpoint found there is
// continued, and removed once the fit is done.
func fitFile(ctx context.Context, fitter *fit.Fitter, spec models.Spec, opts likelihood.Options, set *data.Set, k, n int, out string, quiet bool, stderr io.Writer) error {
	if _, statErr := os.Stat(out); statErr != nil {
		if err := checkWritable(out); err != nil {
			return err
		}
	}
	rf, err := study.OpenResults(out, fitter, spec, study.RunOf(fitter, spec, opts, versionString()), set, k, n)
	if err != nil {
		return err
	}
	if err := resumable(rf, stderr); err != nil {
		return err
	}
	if err := rf.Start(); err != nil {
		return err
	}
	noteFitStart(rf, fitter, opts, stderr)
	bar := newProgressBar(stderr, quiet)
	fitter.SetProgress(bar.update)
	failed, err := rf.Fit(ctx, func(r fit.Result) { reportFit(bar, r) })
	bar.finish()
	if ctx.Err() != nil {
		saved := ""
		if _, statErr := os.Stat(fit.CheckpointPath(out)); statErr == nil {
			saved = fmt.Sprintf(", the other subjects' restarts in %s", fit.CheckpointPath(out))
		}
		if err != nil && err != ctx.Err() { // e.g. the last checkpoint could not be saved
			fmt.Fprintf(stderr, "%v\n", err)
		}
		fmt.Fprintf(stderr, "interrupted: %d subject(s) are in %s%s; rerun with --resume to continue\n", len(rf.Done), out, saved)
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if failed > 0 && failed == len(rf.Subjects) {
		return fmt.Errorf("no subject could be fitted: all %d failed (see above and the error field of %s)", failed, out)
	}
	fmt.Fprintf(stderr, "done: %d subject(s) in %s and %s", len(rf.Done), out, fit.CSVPath(out))
	if failed > 0 {
		fmt.Fprintf(stderr, " (%d could not be fitted)", failed)
	}
	fmt.Fprintln(stderr)
	return nil
}

// noteFitStart says on stderr what a fit into rf is about to do: the parameters the
// likelihood ignores, the subjects and restarts, and what it resumes.
func noteFitStart(rf *study.ResultsFile, fitter *fit.Fitter, opts likelihood.Options, stderr io.Writer) {
	spec := rf.Spec
	for _, name := range fitter.Ignored() {
		fmt.Fprintf(stderr, "not fitted: %s, held at %g: the likelihood (method %s, observe %s, planner %s) does not depend on it\n",
			name, spec.Params[paramIndex(spec, name)].Default, opts.Method, opts.Observe, opts.Planner)
	}
	fmt.Fprintf(stderr, "fitting %s (%s, %s observability) to %d subject(s) with %d restarts each; fitted: %s\n",
		spec.Name, opts.Method, opts.Observe, len(rf.Subjects), fitter.Restarts(), strings.Join(fitter.Fitted(), ", "))
	if len(rf.Done) > 0 {
		fmt.Fprintf(stderr, "resuming: %d subject(s) already in %s\n", len(rf.Done), rf.Path)
	}
	if rf.Checkpoint != nil {
		finished, running, evals := rf.CheckpointCounts()
		fmt.Fprintf(stderr, "resuming from %s: %d restart(s) finished and %d under way (%d evaluations kept)\n",
			fit.CheckpointPath(rf.Path), finished, running, evals)
	}
}

// reportFit prints, above the progress bar, why a subject could not be fitted and the
// warnings of its fit.
func reportFit(bar *progressBar, r fit.Result) {
	if r.Err != "" {
		bar.println(fmt.Sprintf("subject %s: %s", r.Subject, r.Err))
	}
	if r.RobustErr != "" {
		bar.println(fmt.Sprintf("warning: subject %s: %s; its intervals are the inverse Hessian's, which understate the uncertainty where the likelihood is approximate (docs/intervals.md)", r.Subject, r.RobustErr))
	}
	if r.BootstrapErr != "" {
		kind := "robust ones"
		if r.Uncertainty != fit.UncertaintyRobust {
			kind = "inverse Hessian's"
		}
		bar.println(fmt.Sprintf("warning: subject %s: %s; its intervals are the %s", r.Subject, r.BootstrapErr, kind))
	}
	for _, w := range r.Warnings {
		bar.println(fmt.Sprintf("warning: subject %s: %s", r.Subject, w))
	}
	if r.Check != nil && r.Check.NonFinite > 0 {
		bar.println(fmt.Sprintf("warning: subject %s: %d of the goodness-of-fit check's %d data sets simulated at the estimate have a log-likelihood that is not finite (the likelihood's linearization fails on some trials this agent makes); the check uses the other %d",
			r.Subject, r.Check.NonFinite, r.Check.NonFinite+r.Check.Draws, r.Check.Draws))
	}
	if r.CheckErr != "" {
		bar.println(fmt.Sprintf("warning: subject %s: %s; no check", r.Subject, r.CheckErr))
	}
	if r.Check.Warns() {
		bar.println(fmt.Sprintf("warning: subject %s: the data do not look like the fitted agent's (goodness-of-fit z %.1f, p %.2g): %s (docs/intervals.md)",
			r.Subject, r.Check.Z, r.Check.P, checkConsequence(r.Uncertainty)))
	}
}

// checkConsequence says what a failed goodness-of-fit check means for intervals of the kind
// uncertainty (fit.Result.Uncertainty), from their coverage on flagged subjects
// (docs/intervals.md, "The goodness-of-fit check").
func checkConsequence(uncertainty string) string {
	if uncertainty == fit.UncertaintyBootstrap {
		return "its estimates are those of the nearest such agent, and its intervals allow only for the agents of the bootstrap's family"
	}
	return "its intervals are too narrow"
}

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "--out merged.jsonl shard1.jsonl shard2.jsonl ...", stderr)
	out := fs.String("out", "", "merged results file (a .csv table is written beside it)")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out is required")
	}
	if fs.NArg() == 0 {
		return usagef("give the results files to merge")
	}
	if err := refuseExisting("merge writes new files only", *out, fit.CSVPath(*out)); err != nil {
		return err
	}
	recs, err := fit.Merge(fs.Args())
	if err != nil {
		return err
	}
	unchecked := 0
	for _, r := range recs {
		if fit.Unchecked(r) {
			unchecked++
		}
	}
	if unchecked > 0 {
		fmt.Fprintf(stderr, "note: %d record(s) were written before results recorded their data and task: merge cannot check that they come from one run\n", unchecked)
	}
	if err := checkWritable(*out); err != nil {
		return err
	}
	f, err := fit.OpenWriter(*out, 0)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := f.Write(r); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	var order []string
	if len(recs) > 0 {
		if m, err := models.Get(recs[0].Task); err == nil {
			order = m.Spec().ParamNames()
		}
	}
	if err := fit.WriteCSV(fit.CSVPath(*out), recs, fit.ParamNames(recs, order)); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "merged %d subject(s) from %d file(s) into %s and %s\n", len(recs), fs.NArg(), *out, fit.CSVPath(*out))
	return nil
}

// resumable returns an error listing how the records in rf differ from what its fitter would
// fit now (study.ResultsFile.Differences), for the first few records that differ; records of
// earlier versions without digests are accepted with a notice on stderr.
func resumable(rf *study.ResultsFile, stderr io.Writer) error {
	diffs, unchecked := rf.Differences()
	if len(diffs) > 0 {
		var lines []string
		for _, d := range diffs[:min(3, len(diffs))] {
			lines = append(lines, fmt.Sprintf("subject %s:", d.Subject))
			for _, l := range d.Lines {
				lines = append(lines, "  "+l)
			}
		}
		if len(diffs) > 3 {
			lines = append(lines, fmt.Sprintf("(and %d more subject(s))", len(diffs)-3))
		}
		return fmt.Errorf("%s holds results of a run with other settings or data for %d subject(s); resume it with its data and settings, or choose another --out:\n  %s",
			rf.Path, len(diffs), strings.Join(lines, "\n  "))
	}
	if unchecked > 0 {
		fmt.Fprintf(stderr, "note: %d record(s) in %s were written before results recorded their data and task: those cannot be checked against --data\n", unchecked, rf.Path)
	}
	return nil
}
