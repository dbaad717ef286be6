package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
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
)

func init() {
	register(command{name: "eval", summary: "the paper's evaluation: draw parameter sets, simulate, fit with each method, summarize and plot", run: runEval})
	register(command{name: "plot", summary: "redraw the estimates, summary and figures of a finished `eval` directory", run: runPlot})
}

// evalConfig is DIR/config.json: what an evaluation directory holds.
type evalConfig struct {
	Task      string             `json:"task"`
	TaskFile  string             `json:"task_file,omitempty"` // absolute path, for --task-file
	Observe   string             `json:"observe"`
	Sets      int                `json:"sets"`
	Trials    int                `json:"trials"`
	Steps     int                `json:"steps"`
	Seed      uint64             `json:"seed"`
	Truth     map[string]float64 `json:"truth,omitempty"` // fixed true values; others drawn
	Restarts  int                `json:"restarts"`
	Methods   []string           `json:"methods"`
	Linearize string             `json:"linearize_ours"`
	// Excluded are the sets whose simulated agent diverged (states became infinite): they
	// have no data and are not fitted.
	Excluded []string `json:"excluded_sets,omitempty"`
	// TaskDigest identifies the task's definition (models.Digest) and Version the nioc-gpu
	// that simulated the data; absent in directories of earlier versions.
	TaskDigest string `json:"task_digest,omitempty"`
	Version    string `json:"version,omitempty"`
}

// sameData reports whether the evaluation of c simulated the data that o would: the same
// task, definition, sets, trials and truths (the restarts and methods may differ; so may the
// version, and a directory of an earlier version has no task digest to compare).
func (c evalConfig) sameData(o evalConfig) bool {
	a, b := c, o
	a.Restarts, b.Restarts, a.Methods, b.Methods, a.Excluded, b.Excluded = 0, 0, nil, nil, nil, nil
	a.Version, b.Version = "", ""
	if a.TaskDigest == "" || b.TaskDigest == "" {
		a.TaskDigest, b.TaskDigest = "", ""
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func setID(i int) string { return fmt.Sprintf("set%03d", i+1) }

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
	linearize := fs.String("linearize", "data", "linearization of our method, `data|mean|ilqg`")
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
	k, n, err := parseShard(*shard)
	if err != nil {
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
	var methodList []string
	for _, mm := range parseNames(*methods) {
		if mm != string(likelihood.Ours) && mm != string(likelihood.MCEBaseline) {
			return usagef("unknown method %q in --methods: use ours, baseline", mm)
		}
		if slices.Contains(methodList, mm) {
			return usagef("method %s given twice", mm)
		}
		methodList = append(methodList, mm)
	}
	if len(methodList) == 0 {
		return usagef("--methods is empty")
	}
	fixed := map[string]float64{}
	names, vals, err := parseAssignments(*truth, "truth")
	if err != nil {
		return err
	}
	for i, name := range names {
		idx := paramIndex(spec, name)
		if idx < 0 {
			return usagef("--truth: task %s has no parameter %q; its parameters are %s", spec.Name, name, strings.Join(spec.ParamNames(), ", "))
		}
		if err := spec.Params[idx].Validate(vals[i]); err != nil {
			return usagef("--truth: %v", err)
		}
		fixed[name] = vals[i]
	}
	warnOutsideBox(stderr, spec, "truth", names, vals)
	linearization, err := parseLinearize(*linearize)
	if err != nil {
		return err
	}
	lin := string(linearization)
	T := spec.Steps
	if isSet(fs, "steps") {
		T = *steps
	}
	cfg := evalConfig{Task: spec.Name, Observe: string(observe), Sets: *sets, Trials: *trials, Steps: T, Seed: *seed,
		Truth: fixed, Restarts: *restarts, Methods: methodList, Linearize: lin, TaskDigest: models.Digest(m), Version: versionString()}
	if tf.taskFile != "" {
		if cfg.TaskFile, err = filepath.Abs(tf.taskFile); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	b, err := tf.backendOrErr()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// 1. Truths and data: drawn and simulated once; a resumed run checks they match.
	cfgPath := filepath.Join(*out, "config.json")
	dataPath := filepath.Join(*out, "data.csv")
	var set *data.Set
	if raw, err := os.ReadFile(cfgPath); err == nil {
		var old evalConfig
		if err := json.Unmarshal(raw, &old); err != nil {
			return fmt.Errorf("%s: %v", cfgPath, err)
		}
		if !old.sameData(cfg) {
			return usagef("%s holds an evaluation with other settings (%s); use another --out", *out, raw)
		}
		if set, err = readData(dataPath, spec); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "resuming %s: %d sets already simulated\n", *out, len(set.Subjects))
	} else {
		t0 := time.Now()
		thetas := drawSets(spec, cfg)
		if set, cfg.Excluded, err = simulateSets(m, b, cfg, thetas); err != nil {
			return err
		}
		if len(cfg.Excluded) > 0 {
			fmt.Fprintf(stderr, "excluded %d set(s) whose simulated agent diverged: %s\n", len(cfg.Excluded), strings.Join(cfg.Excluded, ", "))
		}
		if err := writeTruth(filepath.Join(*out, "truth.csv"), spec, thetas); err != nil {
			return err
		}
		if err := data.Write(dataPath, set); err != nil {
			return err
		}
		raw, _ := json.MarshalIndent(cfg, "", "  ")
		if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "simulated %d sets × %d trials of %s in %.1f s\n", *sets, *trials, spec.Name, time.Since(t0).Seconds())
	}

	// 2. Fits, one results file per method (and shard), resumable.
	for _, method := range methodList {
		opts := likelihood.Options{Observe: observe, Method: likelihood.Method(method)}
		if method == string(likelihood.Ours) {
			opts.Linearize = linearization
		}
		e, err := likelihood.New(m, b, opts)
		if err != nil {
			return err
		}
		// A rerun in the same directory resumes, from the checkpoint of a fit cut short too.
		fitter, err := fit.New(e, fit.Options{Restarts: *restarts, Seed: *seed, MaxIter: *maxIter, CheckpointEvery: time.Minute})
		if err != nil {
			return err
		}
		path := filepath.Join(*out, "fit-"+method+".jsonl")
		if n > 1 {
			path = filepath.Join(*out, fmt.Sprintf("fit-%s.shard-%d-of-%d.jsonl", method, k, n))
		}
		t0 := time.Now()
		if opts.Linearize == likelihood.LinearizeILQG {
			// From random points ilqg fits often fail in line searches (docs/posterior.md, "What
			// remains"): each set's first restart starts at the estimate of a data fit.
			from := filepath.Join(*out, strings.Replace(filepath.Base(path), "fit-", "start-", 1))
			starts, err := evalStarts(ctx, m, b, opts, fit.Options{Restarts: *restarts, Seed: *seed, MaxIter: *maxIter, CheckpointEvery: time.Minute},
				set, k, n, from, *quiet, stderr)
			if err != nil {
				return err
			}
			fitter.SetStarts(filepath.Base(from), starts)
		}
		if err := fitFile(ctx, fitter, spec, e.Options(), set, k, n, path, *quiet, stderr); err != nil {
			return err
		}
		if err := addWallTime(*out, method, time.Since(t0).Seconds()); err != nil {
			return err
		}
	}
	if n > 1 {
		fmt.Fprintf(stderr, "shard %d/%d done; when every shard is, run `nioc-gpu plot --out %s`\n", k, n, *out)
		return nil
	}
	return summarize(*out, m, b, stdout, stderr)
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
		if fs.NArg() == 0 {
			return usagef("--errors needs eval directories")
		}
		if err := refuseDir("errors", *errorsPNG); err != nil {
			return err
		}
		if !*force {
			if err := refuseExisting("use --force to replace it, or choose another --errors file", *errorsPNG); err != nil {
				return err
			}
		}
		groups, methods, err := aggregateErrors(fs.Args())
		if err != nil {
			return err
		}
		if err := plots.ErrorSummary(*errorsPNG, "absolute relative errors by task and method", groups, methods); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *errorsPNG)
		return nil
	}
	if *out == "" && fs.NArg() == 1 {
		*out = fs.Arg(0)
	}
	if *out == "" {
		return usagef("--out DIR is required")
	}
	raw, err := os.ReadFile(filepath.Join(*out, "config.json"))
	if err != nil {
		return fmt.Errorf("%s is not an eval directory: %w", *out, err)
	}
	var cfg evalConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
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

// drawSets returns the true parameters (natural units) of each set: uniform in each
// parameter's fitting scale within its bounds, unless fixed by --truth.
func drawSets(spec models.Spec, cfg evalConfig) [][]float64 {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5e75))
	out := make([][]float64, cfg.Sets)
	for s := range out {
		out[s] = make([]float64, len(spec.Params))
		for i, p := range spec.Params {
			lo, hi := p.ToScale(p.Lo), p.ToScale(p.Hi)
			out[s][i] = p.FromScale(lo + rng.Float64()*(hi-lo))
			if v, ok := cfg.Truth[p.Name]; ok {
				out[s][i] = v
			}
		}
	}
	return out
}

// simulateSets solves the agent for every set at once and simulates its trials.
// A set whose agent diverges in simulation (some trial's states become infinite, or leave the
// task's plausible range, models.Spec.MaxState, which reading the data would refuse) is left
// out of the data and returned in excluded.
func simulateSets(m models.Model, b backends.Backend, cfg evalConfig, thetas [][]float64) (set *data.Set, excluded []string, err error) {
	spec := m.Spec()
	xs, err := simulateAt(m, b, cfg, thetas, cfg.Trials, cfg.Seed)
	var div *control.DivergedError
	if errors.As(err, &div) {
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	set = &data.Set{StateNames: spec.States, Steps: cfg.Steps}
	for s, trials := range xs {
		if div != nil && slices.Contains(div.Problems, s) || beyond(trials, spec.MaxState()) {
			excluded = append(excluded, setID(s))
			continue
		}
		subj := data.Subject{ID: setID(s)}
		for r, tr := range trials {
			subj.Trials = append(subj.Trials, data.Trial{ID: r, States: tr})
		}
		set.Subjects = append(set.Subjects, subj)
	}
	return set, excluded, nil
}

// beyond reports whether a state value of trials exceeds bound in magnitude.
func beyond(trials [][][]float64, bound float64) bool {
	for _, tr := range trials {
		for _, x := range tr {
			for _, v := range x {
				if math.Abs(v) > bound {
					return true
				}
			}
		}
	}
	return false
}

func writeTruth(path string, spec models.Spec, thetas [][]float64) error {
	rows := [][]string{append([]string{"set"}, spec.ParamNames()...)}
	for s, th := range thetas {
		row := []string{setID(s)}
		for _, v := range th {
			row = append(row, fmtFloat(v))
		}
		rows = append(rows, row)
	}
	return writeCSV(path, rows)
}

func readTruth(path string, spec models.Spec) (map[string][]float64, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 1 || !slices.Equal(rows[0][1:], spec.ParamNames()) {
		return nil, nil, fmt.Errorf("%s: header does not match task %s", path, spec.Name)
	}
	out := map[string][]float64{}
	var order []string
	for i, r := range rows[1:] {
		var th []float64
		for j, c := range r[1:] {
			v, err := strconv.ParseFloat(c, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s line %d, column %q: %v", path, i+2, rows[0][j+1], err)
			}
			th = append(th, v)
		}
		out[r[0]] = th
		order = append(order, r[0])
	}
	return out, order, nil
}

// addWallTime accumulates the wall time spent fitting with a method in DIR/times.json.
func addWallTime(dir, method string, seconds float64) error {
	path := filepath.Join(dir, "times.json")
	times := map[string]float64{}
	if raw, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(raw, &times)
	}
	times[method] += seconds
	raw, _ := json.MarshalIndent(times, "", "  ")
	return os.WriteFile(path, raw, 0o644)
}

// estimateError is the error of one estimate: relative for positive parameters, absolute
// for signed ones (a relative error of a position near 0 means nothing) and for a true value
// of 0.
func estimateError(p models.Param, truth, est float64) float64 {
	if p.Signed || truth == 0 {
		return math.Abs(est - truth)
	}
	return math.Abs(est-truth) / math.Abs(truth)
}

// evalStarts fits the sets of shard k of n with opts but the data linearization into path
// (resumable like any fit) and returns the successful estimates in their fitting scales, the
// starts of the iLQG-linearized fits (fit.Options.Starts).
func evalStarts(ctx context.Context, m models.Model, b backends.Backend, opts likelihood.Options, fo fit.Options, set *data.Set, k, n int, path string, quiet bool, stderr io.Writer) (map[string]map[string]float64, error) {
	opts.Linearize = likelihood.LinearizeData
	e, err := likelihood.New(m, b, opts)
	if err != nil {
		return nil, err
	}
	fitter, err := fit.New(e, fo)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "first with --linearize data, for the starts of the ilqg fits: %s\n", path)
	if err := fitFile(ctx, fitter, m.Spec(), e.Options(), set, k, n, path, quiet, stderr); err != nil {
		return nil, err
	}
	recs, _, err := fit.ReadRecords(path)
	if err != nil {
		return nil, err
	}
	return startsOf(recs, e.Spec()), nil
}
