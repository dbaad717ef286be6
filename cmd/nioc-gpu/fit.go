package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
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

func runFit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fit", "--task NAME --data FILE.csv [--observe partial|full] [--method ours|baseline] [--planner full|partial] [--linearize data|mean|ilqg] [--temperature fit|task|τ] [--first-order-noise] [--restarts 50] [--seed S] [--start fit.jsonl] [--max-iter N] [--uncertainty robust|hessian|bootstrap] [--check-draws 20] [--infer name,...] [--fix name=value,...] [--shard k/N] [--resume] [--checkpoint-every 60s] [--backend go|xla] --out results.jsonl", stderr)
	var tf taskFlags
	tf.register(fs, true)
	var sf subjectFlags
	sf.register(fs, "fit", "results file (JSON Lines, one subject per line); a .csv table is written beside it")
	restarts := fs.Int("restarts", 50, "random restarts per subject (initial points uniform in each parameter's scale within its bounds)")
	seed := fs.Uint64("seed", 1, "seed of the restarts' initial points")
	maxIter := fs.Int("max-iter", 200, "L-BFGS-B iterations per restart")
	start := fs.String("start", "", "a results `file` of nioc-gpu fit of the same task: each subject's first restart begins at its estimate there (one with another --linearize, say), the other restarts at random points")
	uncertainty := fs.String("uncertainty", fit.UncertaintyRobust, "standard errors and intervals: robust (sandwich of the Hessian and the spread of the trials' scores; needs 10 trials per fitted parameter, else the Hessian is used), hessian (inverse Hessian: exact only where the likelihood is) or bootstrap (robust, widened and re-centred by a bias-corrected parametric bootstrap: --bootstrap-draws refits per subject; docs/intervals.md)")
	bootDraws := fs.Int("bootstrap-draws", fit.DefaultBootstrapDraws, "with --uncertainty bootstrap: data sets simulated at each subject's estimate and refitted")
	bootRestarts := fs.Int("bootstrap-restarts", fit.DefaultBootstrapRestarts, "with --uncertainty bootstrap: random restarts of each refit")
	checkDraws := fs.Int("check-draws", fit.DefaultCheckDraws, "data sets the goodness-of-fit check simulates from the fitted agent per subject (the record's \"check\"; a warning when its p-value is below 0.05: the intervals are then too narrow); 0 turns the check off")
	every := fs.Duration("checkpoint-every", time.Minute, "save every restart's optimizer state to OUT.ckpt this often (and on Ctrl-C), for --resume after a crash or kill; 0 disables")
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
	if *restarts < 1 {
		return usagef("--restarts must be >= 1, got %d", *restarts)
	}
	if *maxIter < 1 {
		return usagef("--max-iter must be >= 1, got %d", *maxIter)
	}
	if *uncertainty != fit.UncertaintyRobust && *uncertainty != fit.UncertaintyHessian && *uncertainty != fit.UncertaintyBootstrap {
		return usagef("--uncertainty must be %s, %s or %s, got %q", fit.UncertaintyRobust, fit.UncertaintyHessian, fit.UncertaintyBootstrap, *uncertainty)
	}
	if *bootDraws < 3 || *bootRestarts < 1 {
		return usagef("--bootstrap-draws must be >= 3 and --bootstrap-restarts >= 1, got %d and %d", *bootDraws, *bootRestarts)
	}
	if *checkDraws < 0 || *checkDraws == 1 || *checkDraws == 2 {
		return usagef("--check-draws must be 0 (no check) or at least 3, got %d", *checkDraws)
	}
	if *every < 0 {
		return usagef("--checkpoint-every must be >= 0 (0 disables checkpoints), got %s", *every)
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
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	fitter, err := fit.New(e, fit.Options{Restarts: *restarts, Seed: *seed, MaxIter: *maxIter,
		Infer: parseNames(sf.infer), Fix: fixed, MaxBatch: sf.maxBatch, CheckpointEvery: *every,
		Uncertainty: *uncertainty, CheckDraws: *checkDraws, Bootstrap: *bootDraws, BootstrapRestarts: *bootRestarts})
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
	set, err := readData(sf.data, spec)
	if err != nil {
		return err
	}
	if err := noteLengths(stderr, set, spec, sf.data); err != nil {
		return err
	}
	if *start != "" {
		starts, err := readStarts(*start, e.Spec(), set, k, n, stderr)
		if err != nil {
			return err
		}
		fitter.SetStarts(*start, starts)
	} else if opts.Linearize == likelihood.LinearizeILQG && !sf.quiet {
		fmt.Fprintln(stderr, "note: from random points, --linearize ilqg fits often end in failed line searches; --start a --linearize data fit's results to begin one restart there (docs/posterior.md, \"What remains\")")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return fitFile(ctx, fitter, e.Spec(), e.Options(), set, k, n, sf.out, sf.quiet, stderr)
}

// readStarts returns the estimates that the results file path holds for the subjects of set in
// shard k of n, in the fitting scales of spec's parameters (fit.Options.Starts).
func readStarts(path string, spec models.Spec, set *data.Set, k, n int, stderr io.Writer) (map[string]map[string]float64, error) {
	var ids []string
	for i, s := range set.Subjects {
		if i%n == k-1 {
			ids = append(ids, s.ID)
		}
	}
	recs, err := fit.EstimatesOf(path, spec.Name, ids)
	if err != nil {
		return nil, fmt.Errorf("--start: %w", err)
	}
	fitted := map[string]string{}
	for id, r := range recs {
		fitted[id] = r.DataDigest
	}
	noteStartData(stderr, "--start", path, fitted, set)
	return startsOf(slices.Collect(maps.Values(recs)), spec), nil
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

// startsOf returns the estimates of the successful records, by subject, in the fitting scales
// of spec's parameters (fit.Options.Starts).
func startsOf(recs []fit.Record, spec models.Spec) map[string]map[string]float64 {
	starts := map[string]map[string]float64{}
	for _, r := range recs {
		if r.Params != nil {
			starts[r.Subject] = r.Scaled(spec)
		}
	}
	return starts
}

// fitRun returns what the records of fitter's fits with opts record about the run.
func fitRun(fitter *fit.Fitter, spec models.Spec, opts likelihood.Options) fit.Run {
	fo := fitter.Options()
	run := fit.Run{Task: spec.Name, Method: string(opts.Method), Observe: string(opts.Observe), Planner: string(opts.Planner),
		Linearize: string(opts.Linearize), Likelihood: likelihoodConventions(spec, opts), Seed: &fo.Seed, MaxIter: fo.MaxIter,
		Start: fo.StartsFrom, CheckDraws: &fo.CheckDraws, TaskDigest: fitter.TaskDigest(), Version: versionString()}
	switch fo.Uncertainty {
	case fit.UncertaintyHessian:
		run.StdErrs = fo.Uncertainty
	case fit.UncertaintyBootstrap:
		run.StdErrs = fmt.Sprintf("%s %dx%d", fo.Uncertainty, fo.Bootstrap, fo.BootstrapRestarts)
	}
	return run
}

// likelihoodConventions returns the flags that set opts' conventions apart from the defaults
// for the task of spec (fit.Run.Likelihood), comma-separated.
func likelihoodConventions(spec models.Spec, opts likelihood.Options) string {
	var out []string
	if opts.FirstOrderNoise {
		out = append(out, "first-order-noise")
	}
	if opts.IgnoreGaps {
		out = append(out, "ignore-gaps")
	}
	if opts.NominalFilter {
		out = append(out, "nominal-filter")
	}
	if opts.Jitter != likelihood.TaskJitter(spec) {
		out = append(out, "jitter="+strconv.FormatFloat(opts.Jitter, 'g', -1, 64))
	}
	if opts.Prior != nil {
		out = append(out, "belief-prior="+strconv.FormatFloat(opts.Prior[0][0], 'g', -1, 64))
	}
	return strings.Join(out, ",")
}

// fitFile fits the subjects of set in shard k of n with fitter and appends their results to
// out, skipping subjects already there; it then rewrites the CSV table beside it. Results in
// out from a run with other settings are an error listing the differences, and so is a run in
// which no subject could be fitted. With the fitter's Options.CheckpointEvery, the restarts'
// state is saved beside out (fit.CheckpointPath) that often and when ctx is cancelled; a
// checkpoint found there is continued, and removed once the fit is done.
func fitFile(ctx context.Context, fitter *fit.Fitter, spec models.Spec, opts likelihood.Options, set *data.Set, k, n int, out string, quiet bool, stderr io.Writer) error {
	var done []fit.Record
	var valid int64
	run := fitRun(fitter, spec, opts)
	digests := map[string]string{}
	for _, s := range set.Subjects {
		digests[s.ID] = s.Digest()
	}
	if _, statErr := os.Stat(out); statErr == nil {
		var err error
		if done, valid, err = fit.ReadRecords(out); err != nil {
			return err
		}
		if err := resumable(out, done, fitter, run, digests, stderr); err != nil {
			return err
		}
	} else if err := checkWritable(out); err != nil {
		return err
	}
	ckptPath := fit.CheckpointPath(out)
	from, err := readCheckpoint(ckptPath, fitter, run)
	if err != nil {
		return err
	}
	skip := map[string]bool{}
	for _, r := range done {
		skip[r.Subject] = true
	}
	var subjects []fit.Subject
	for i, s := range set.Subjects {
		if i%n != k-1 || skip[s.ID] {
			continue
		}
		subjects = append(subjects, fit.Subject{ID: s.ID, Trials: trialsOf(s)})
	}
	w, err := fit.OpenWriter(out, valid)
	if err != nil {
		return err
	}
	defer w.Close()
	scale := map[string]string{}
	for _, p := range spec.Params {
		scale[p.Name] = p.Scale.String()
	}
	for _, name := range fitter.Ignored() {
		fmt.Fprintf(stderr, "not fitted: %s, held at %g: the likelihood (method %s, observe %s, planner %s) does not depend on it\n",
			name, spec.Params[paramIndex(spec, name)].Default, opts.Method, opts.Observe, opts.Planner)
	}
	fmt.Fprintf(stderr, "fitting %s (%s, %s observability) to %d subject(s) with %d restarts each; fitted: %s\n",
		spec.Name, opts.Method, opts.Observe, len(subjects), fitter.Restarts(), strings.Join(fitter.Fitted(), ", "))
	if len(done) > 0 {
		fmt.Fprintf(stderr, "resuming: %d subject(s) already in %s\n", len(done), out)
	}
	if from != nil {
		finished, running, evals := checkpointCounts(from, subjects)
		fmt.Fprintf(stderr, "resuming from %s: %d restart(s) finished and %d under way (%d evaluations kept)\n",
			ckptPath, finished, running, evals)
	}
	if every := fitter.Options().CheckpointEvery; every > 0 {
		fitter.SetCheckpoint(every, func(c *fit.Checkpoint) error {
			c.Run = run
			return fit.WriteCheckpoint(ckptPath, c)
		})
	}
	bar := newProgressBar(stderr, quiet)
	fitter.SetProgress(bar.update)
	failed := 0
	err = fitter.FitFrom(ctx, subjects, from, func(r fit.Result) error {
		if r.Err != "" {
			failed++
			bar.println(fmt.Sprintf("subject %s: %s", r.Subject, r.Err))
		}
		if r.BootstrapErr != "" {
			bar.println(fmt.Sprintf("warning: subject %s: %s; its intervals are the robust ones", r.Subject, r.BootstrapErr))
		}
		for _, w := range r.Warnings {
			bar.println(fmt.Sprintf("warning: subject %s: %s", r.Subject, w))
		}
		if r.Check.Warns() {
			bar.println(fmt.Sprintf("warning: subject %s: the data do not look like the fitted agent's (goodness-of-fit z %.1f, p %.2g): its intervals are too narrow (docs/intervals.md)", r.Subject, r.Check.Z, r.Check.P))
		}
		rec := fit.NewRecord(r, run, scale)
		done = append(done, rec)
		return w.Write(rec)
	})
	bar.finish()
	order := map[string]int{}
	for i, s := range set.Subjects {
		order[s.ID] = i
	}
	sort.SliceStable(done, func(a, b int) bool { return order[done[a].Subject] < order[done[b].Subject] })
	if csvErr := fit.WriteCSV(fit.CSVPath(out), done, fit.ParamNames(done, spec.ParamNames())); csvErr != nil && err == nil {
		err = csvErr
	}
	if ctx.Err() != nil {
		saved := ""
		if _, statErr := os.Stat(ckptPath); statErr == nil {
			saved = fmt.Sprintf(", the other subjects' restarts in %s", ckptPath)
		}
		if err != nil && err != ctx.Err() { // e.g. the last checkpoint could not be saved
			fmt.Fprintf(stderr, "%v\n", err)
		}
		fmt.Fprintf(stderr, "interrupted: %d subject(s) are in %s%s; rerun with --resume to continue\n", len(done), out, saved)
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if err := os.Remove(ckptPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if failed > 0 && failed == len(subjects) {
		return fmt.Errorf("no subject could be fitted: all %d failed (see above and the error field of %s)", failed, out)
	}
	fmt.Fprintf(stderr, "done: %d subject(s) in %s and %s", len(done), out, fit.CSVPath(out))
	if failed > 0 {
		fmt.Fprintf(stderr, " (%d could not be fitted)", failed)
	}
	fmt.Fprintln(stderr)
	return nil
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

// resumable returns an error listing how the records done, read from out, differ from what
// fitter would fit now with run on the data of digests (fit.RecordDifferences), for the
// first few records that differ; records of earlier versions without digests are accepted
// with a notice on stderr.
func resumable(out string, done []fit.Record, fitter *fit.Fitter, run fit.Run, digests map[string]string, stderr io.Writer) error {
	var lines []string
	differ, unchecked := 0, 0
	for _, r := range done {
		if fit.Unchecked(r) {
			unchecked++
		}
		diff := fitter.RecordDifferences(r, run, digests)
		if len(diff) == 0 {
			continue
		}
		if differ++; differ <= 3 {
			lines = append(lines, fmt.Sprintf("subject %s:", r.Subject))
			for _, d := range diff {
				lines = append(lines, "  "+d)
			}
		}
	}
	if differ > 0 {
		if differ > 3 {
			lines = append(lines, fmt.Sprintf("(and %d more subject(s))", differ-3))
		}
		return fmt.Errorf("%s holds results of a run with other settings or data for %d subject(s); resume it with its data and settings, or choose another --out:\n  %s",
			out, differ, strings.Join(lines, "\n  "))
	}
	if unchecked > 0 {
		fmt.Fprintf(stderr, "note: %d record(s) in %s were written before results recorded their data and task: those cannot be checked against --data\n", unchecked, out)
	}
	return nil
}

// readCheckpoint returns the checkpoint at path, nil if there is none. A checkpoint of a run
// with other settings than run and fitter's is an error listing the differences. Temporary
// files of a checkpoint write that was cut short are removed.
func readCheckpoint(path string, fitter *fit.Fitter, run fit.Run) (*fit.Checkpoint, error) {
	if tmps, err := filepath.Glob(path + ".tmp*"); err == nil {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	c, err := fit.ReadCheckpoint(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if diff := fitter.CheckpointDifferences(c, run); len(diff) > 0 {
		return nil, fmt.Errorf("%s holds the state of a run with other settings; resume it with its settings, or remove it to start its subjects over:\n  %s",
			path, strings.Join(diff, "\n  "))
	}
	return c, nil
}

// checkpointCounts returns how many restarts of subjects c holds finished and under way,
// and their evaluations.
func checkpointCounts(c *fit.Checkpoint, subjects []fit.Subject) (finished, running, evals int) {
	ids := map[string]bool{}
	for _, s := range subjects {
		ids[s.ID] = true
	}
	for _, s := range c.Subjects {
		if !ids[s.Subject] {
			continue
		}
		for _, r := range s.Restarts {
			switch {
			case r == nil:
				continue
			case r.Status != "":
				finished++
			default:
				running++
			}
			evals += r.State.Evaluations
		}
	}
	return finished, running, evals
}
