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

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "eval", summary: "the paper's evaluation: draw parameter sets, simulate, fit with each method, summarize and plot", run: runEval})
	register(command{name: "plot", summary: "redraw the estimates, summary and figures of a finished `eval` directory", run: runPlot})
}

// evalSummary is DIR/summary.json of an eval directory.
type evalSummary = study.Summary

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", "--task NAME [--observe partial|full] [--sets 100] [--trials 50] [--restarts 50] [--seed S] [--methods ours,baseline] [--truth name=value,...] [--shard k/N] --out DIR", stderr)
	var tf taskFlags // the agents are the task's (its planner), so no --planner
	tf.registerTask(fs)
	tf.registerObserve(fs)
	tf.registerBackend(fs)
	sets := fs.Int("sets", 100, "parameter sets, drawn uniformly in each parameter's scale within its bounds (paper Sec. 4, App. J.3)")
	trials := fs.Int("trials", 50, "trials simulated per set")
	steps := fs.Int("steps", 0, "time steps; default: the task's")
	restarts := fs.Int("restarts", 50, "restarts per fit")
	maxIter := fs.Int("max-iter", 200, "L-BFGS-B iterations per restart")
	seed := fs.Uint64("seed", 1, "seed of the parameter draws, the simulations and the restarts")
	methods := fs.String("methods", "ours,baseline", "methods to compare: ours, baseline")
	truth := fs.String("truth", "", "fix true values instead of drawing them, `name=value,...` (e.g. the paper's light-dark agent: light_cost=0,sigma=0.2)")
	linearize := fs.String("linearize", "", "linearization of our method, `data|mean|ilqg`; default: the task's (see nioc-gpu tasks)")
	shard := fs.String("shard", "", "fit only shard k/N of the sets (run `nioc-gpu plot DIR` after all shards)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	out := fs.String("out", "", "output directory (created; an existing one is resumed)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	if err := required(fs, "out"); err != nil {
		return err
	}
	if err := refuseNonDir("out", *out); err != nil {
		return err
	}
	spec := m.Spec()
	observe, err := tf.observeMode()
	if err != nil {
		return err
	}
	r := evalRun{dir: *out, m: m, observe: observe, quiet: *quiet, stderr: stderr, fit: fit.Options{Restarts: *restarts, Seed: *seed, MaxIter: *maxIter, CheckpointEvery: time.Minute}}
	if r.k, r.n, err = parseShard(*shard); err != nil {
		return err
	}
	switch {
	case *sets < 1:
		return usagef("--sets must be >= 1")
	case *trials < 1:
		return usagef("--trials must be >= 1")
	case *restarts < 1:
		return usagef("--restarts must be >= 1")
	case isSet(fs, "steps") && *steps < 1:
		return usagef("--steps must be >= 1, got %d", *steps)
	}
	methodList, err := parseMethods(*methods)
	if err != nil {
		return err
	}
	fixed, err := parseEvalTruth(spec, *truth, stderr)
	if err != nil {
		return err
	}
	if r.linearize, err = parseLinearize(*linearize); err != nil {
		return err
	}
	if r.linearize == "" {
		r.linearize = likelihood.TaskLinearization(spec)
	}
	T := spec.Steps
	if isSet(fs, "steps") {
		T = *steps
	}
	cfg := study.Config{Task: spec.Name, Observe: string(observe), Sets: *sets, Trials: *trials, Steps: T, Seed: *seed,
		Truth: fixed, Restarts: *restarts, Methods: methodList, Linearize: string(r.linearize), TaskDigest: models.Digest(m), Version: versionString()}
	if tf.taskFile != "" {
		if cfg.TaskFile, err = filepath.Abs(tf.taskFile); err != nil {
			return err
		}
	}
	return r.run(cfg, &tf, stdout)
}

// parseMethods parses --methods: ours, baseline or both, comma-separated, in the order given.
func parseMethods(s string) ([]string, error) {
	var methods []string
	for _, mm := range parseNames(s) {
		if mm != string(likelihood.Ours) && mm != string(likelihood.MCEBaseline) {
			return nil, usagef("unknown method %q in --methods: use ours, baseline", mm)
		}
		if slices.Contains(methods, mm) {
			return nil, usagef("method %s given twice", mm)
		}
		methods = append(methods, mm)
	}
	if len(methods) == 0 {
		return nil, usagef("--methods is empty")
	}
	return methods, nil
}

// parseEvalTruth parses eval's --truth, the true values held fixed in every set, and warns
// on stderr of those outside their search box.
func parseEvalTruth(spec models.Spec, s string, stderr io.Writer) (map[string]float64, error) {
	fixed := map[string]float64{}
	names, vals, err := parseAssignments(s, "truth")
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		idx := paramIndex(spec, name)
		if idx < 0 {
			return nil, usagef("--truth: task %s has no parameter %q; its parameters are %s", spec.Name, name, strings.Join(spec.ParamNames(), ", "))
		}
		if err := spec.Params[idx].Validate(vals[i]); err != nil {
			return nil, usagef("--truth: %v", err)
		}
		fixed[name] = vals[i]
	}
	warnOutsideBox(stderr, spec, "truth", names, vals)
	return fixed, nil
}

// evalRun is an evaluation being run by eval: its directory, task, the shard k of n of its
// sets that this process fits, and how.
type evalRun struct {
	dir       string
	m         models.Model
	b         backends.Backend
	k, n      int
	observe   control.Observe
	linearize likelihood.Linearization // of our method
	fit       fit.Options
	quiet     bool
	stderr    io.Writer
}

// run simulates or resumes the evaluation of cfg in r.dir, fits its sets with every method,
// and then, unless it fits a shard, summarizes it.
func (r *evalRun) run(cfg study.Config, tf *taskFlags, stdout io.Writer) error {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	var err error
	ours := likelihood.Options{Observe: r.observe, Linearize: r.linearize}
	baseline := likelihood.Options{Observe: r.observe, Method: likelihood.MCEBaseline}
	if r.b, err = tf.backendFor(r.m, ours, baseline); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	set, err := r.data(&cfg)
	if err != nil {
		return err
	}
	for _, method := range cfg.Methods {
		if err := r.fitMethod(ctx, method, set); err != nil {
			return err
		}
	}
	if r.n > 1 {
		fmt.Fprintf(r.stderr, "shard %d/%d done; when every shard is, run `nioc-gpu plot --out %s`\n", r.k, r.n, r.dir)
		return nil
	}
	return summarize(r.dir, r.m, r.b, stdout, r.stderr)
}

// data returns the evaluation's data: drawn and simulated once, with their truth and cfg
// (cfg.Excluded set) written to the directory; a resumed run checks that they match cfg.
func (r *evalRun) data(cfg *study.Config) (*data.Set, error) {
	spec := r.m.Spec()
	if old, raw, err := study.ReadConfig(r.dir); raw != nil {
		if err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(r.dir, study.ConfigFile), err)
		}
		if !old.SameData(*cfg) {
			return nil, usagef("%s holds an evaluation with other settings (%s); use another --out", r.dir, raw)
		}
		set, err := readData(filepath.Join(r.dir, study.DataFile), spec)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(r.stderr, "resuming %s: %d sets already simulated\n", r.dir, len(set.Subjects))
		return set, nil
	}
	t0 := time.Now()
	set, thetas, err := cfg.Simulate(r.m, r.b)
	if err != nil {
		return nil, err
	}
	if len(cfg.Excluded) > 0 {
		fmt.Fprintf(r.stderr, "excluded %d set(s) whose simulated agent diverged: %s\n", len(cfg.Excluded), strings.Join(cfg.Excluded, ", "))
	}
	if err := cfg.Write(r.dir, spec, thetas, set); err != nil {
		return nil, err
	}
	fmt.Fprintf(r.stderr, "simulated %d sets × %d trials of %s in %.1f s\n", cfg.Sets, cfg.Trials, spec.Name, time.Since(t0).Seconds())
	return set, nil
}

// fitMethod fits the sets of the shard with method into its results file (resumable, from
// the checkpoint of a fit cut short too) and adds the time it took to times.json. With the
// iLQG linearization, each set's first restart starts at the estimate of a data fit.
func (r *evalRun) fitMethod(ctx context.Context, method string, set *data.Set) error {
	opts := likelihood.Options{Observe: r.observe, Method: likelihood.Method(method)}
	if method == string(likelihood.Ours) {
		opts.Linearize = r.linearize
	}
	e, err := likelihood.New(r.m, r.b, opts)
	if err != nil {
		return err
	}
	fitter, err := fit.New(e, r.fit)
	if err != nil {
		return err
	}
	path := study.FitPath(r.dir, method, r.k, r.n)
	t0 := time.Now()
	if opts.Linearize == likelihood.LinearizeILQG {
		// From random points ilqg fits often fail in line searches (docs/posterior.md, "What
		// remains"): each set's first restart starts at the estimate of a data fit.
		from := study.StartPath(path)
		starts, err := r.starts(ctx, opts, set, from)
		if err != nil {
			return err
		}
		fitter.SetStarts(filepath.Base(from), starts)
	}
	if err := fitFile(ctx, fitter, r.m.Spec(), e.Options(), set, r.k, r.n, path, r.quiet, r.stderr); err != nil {
		return err
	}
	return study.AddWallTime(r.dir, method, time.Since(t0).Seconds())
}

// starts fits the sets of the shard with opts but the data linearization into path
// (resumable like any fit) and returns the successful estimates in their fitting scales, the
// starts of the iLQG-linearized fits (fit.Options.Starts).
func (r *evalRun) starts(ctx context.Context, opts likelihood.Options, set *data.Set, path string) (map[string]map[string]float64, error) {
	opts.Linearize = likelihood.LinearizeData
	e, err := likelihood.New(r.m, r.b, opts)
	if err != nil {
		return nil, err
	}
	fitter, err := fit.New(e, r.fit)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.stderr, "first with --linearize data, for the starts of the ilqg fits: %s\n", path)
	if err := fitFile(ctx, fitter, r.m.Spec(), e.Options(), set, r.k, r.n, path, r.quiet, r.stderr); err != nil {
		return nil, err
	}
	recs, _, err := fit.ReadRecords(path)
	if err != nil {
		return nil, err
	}
	return study.Starts(recs, e.Spec()), nil
}

func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plot", "--out DIR | --errors errors.png [--force] DIR [DIR ...]", stderr)
	out := fs.String("out", "", "a directory written by `nioc-gpu eval`")
	errorsPNG := fs.String("errors", "", "draw the absolute relative errors of several finished eval directories in one figure (paper Fig. 3)")
	backend := fs.String("backend", "", "backend for the simulations of the trajectory figures, `go|xla`")
	force := fs.Bool("force", false, "replace the --errors file if it exists")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if *errorsPNG != "" {
		return plotErrors(*errorsPNG, *force, fs.Args(), stderr)
	}
	if *out == "" && fs.NArg() == 1 {
		*out = fs.Arg(0)
	}
	if *out == "" {
		return usagef("--out DIR is required")
	}
	cfg, raw, err := study.ReadConfig(*out)
	if raw == nil {
		return fmt.Errorf("%s is not an eval directory: %w", *out, err)
	}
	if err != nil {
		return err
	}
	tf := taskFlags{task: cfg.Task, taskFile: cfg.TaskFile, backend: *backend}
	if tf.taskFile != "" {
		tf.task = ""
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	b, err := tf.backendOrErr()
	if err != nil {
		return err
	}
	return summarize(*out, m, b, stdout, stderr)
}

// plotErrors draws plot --errors: the errors of the eval directories dirs in one figure.
func plotErrors(path string, force bool, dirs []string, stderr io.Writer) error {
	if len(dirs) == 0 {
		return usagef("--errors needs eval directories")
	}
	if err := refuseDir("errors", path); err != nil {
		return err
	}
	if !force {
		if err := refuseExisting("use --force to replace it, or choose another --errors file", path); err != nil {
			return err
		}
	}
	groups, methods, err := study.AggregateErrors(dirs)
	if err != nil {
		return err
	}
	if err := plots.ErrorSummary(path, "absolute relative errors by task and method", groups, methods); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", path)
	return nil
}
