package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/models/taskfile"
)

// taskFlags are the flags that say which agent and likelihood to use.
type taskFlags struct {
	task, taskFile                                        string
	observe, planner, method, linearize, backend, form    string
	timing                                                string
	temperature                                           temperatureFlag
	firstOrderNoise, ignoreGaps, nominalFilter, rawAngles bool
	beliefPrior                                           beliefPriorFlag
	jitter                                                float64
	stepsPerCall                                          string
}

// register adds the flags of the agent (--task, --task-file, --observe, --planner) and
// --backend, and with withMethod those of the likelihood (--method, --linearize,
// --temperature, --form, --steps-per-call, --first-order-noise, --ignore-gaps, --nominal-filter, --belief-prior,
// --jitter). A command registers only the flags it uses, so
// that its help lists no others: one that uses a part registers it with registerTask,
// registerObserve or registerBackend.
func (tf *taskFlags) register(fs *flag.FlagSet, withMethod bool) {
	tf.registerTask(fs)
	tf.registerObserve(fs)
	fs.StringVar(&tf.planner, "planner", "", "the agent's planner, `full|partial`: full (fully observable iLQG on its belief) or partial (partially observable iLQG); default: the task's")
	fs.StringVar(&tf.timing, "timing", "", "which observations the agent's action at t uses, `act-then-see|see-then-act`: act-then-see (those of x_0..x_{t-1}, the paper's agent) or see-then-act (it sees x_t, updates its belief, then acts: lqg's agent); default: the task's")
	tf.registerBackend(fs)
	if withMethod {
		fs.StringVar(&tf.method, "method", "ours", "likelihood, `ours|baseline`: ours (belief tracking) or baseline (maximum-causal-entropy IRL)")
		fs.StringVar(&tf.linearize, "linearize", "", "where the likelihood linearizes, `data|mean|ilqg`: around each observed trajectory (data), around the mean of a subject's trajectories (mean), or around the iLQG solution for each θ (ilqg); default: the task's (data unless the task says otherwise: see nioc-gpu tasks)")
		fs.Var(&tf.temperature, "temperature", "maximum-causal-entropy policy-noise temperature `fit|task|τ` of the agent the likelihood assumes: fit (a nuisance parameter named temperature, fitted with the others), task (the task's, paper Table 1) or a number (0: no policy noise); default: fit for --method ours, task for the baseline")
		fs.StringVar(&tf.form, "form", "auto", "how recursions over time run, `unrolled|looped|auto`: unrolled into one graph, looped over one compiled step, or auto (looped on xla, unrolled on go)")
		fs.StringVar(&tf.stepsPerCall, "steps-per-call", "0", "time steps each compiled program of the looped form runs (`N|all`): fewer program calls per evaluation; N > 1 steps make programs N times larger to compile; all runs each recursion in one call (on xla a while loop over one step's program); 0 picks by backend: all on xla, 1 elsewhere (docs/backends.md \"While loops\")")
		fs.BoolVar(&tf.firstOrderNoise, "first-order-noise", false, "linearize in all noises jointly as the paper and its reference code do (drops the variance of products of noises; see docs/method.md)")
		fs.BoolVar(&tf.ignoreGaps, "ignore-gaps", false, "linearize at data as if they were a rollout of the model, as the paper and its reference code do (biases the estimates; see docs/method.md)")
		fs.BoolVar(&tf.nominalFilter, "nominal-filter", false, "give the agent the Kalman gains along the linearization, as the paper and its reference code do, instead of tracking its own EKF through the forward pass (biases the estimates on partially observable tasks; see docs/method.md)")
		fs.BoolVar(&tf.rawAngles, "raw-angles", false, "take the agent's innovation h(x) − h(b) as it is, as the paper and its reference code do, instead of taking the differences of the observation's atan2 terms (navigation's bearing of the target) modulo 2π (the likelihood then jumps where the belief and the state lie on either side of an atan2's branch cut; see docs/method.md)")
		fs.Float64Var(&tf.jitter, "jitter", 0, "`variance` added to each step's state covariance before it is factorized, a floor under the noise the likelihood represents; default: the task's (1e-6, the reference's, unless the task sets one)")
		fs.Var(&tf.beliefPrior, "belief-prior", "`variance` of the agent's initial belief mean around the first observed state, in every state coordinate, or its covariance matrix by rows (\"a,b;c,d\"): 0 (default) starts it there, as simulate's and the reference's agents do; the reference's likelihood uses 1")
	}
}

// registerObserve adds --observe.
func (tf *taskFlags) registerObserve(fs *flag.FlagSet) {
	fs.StringVar(&tf.observe, "observe", "partial", "what the agent perceives, `partial|full`: partial (noisy observations, EKF belief) or full (the state)")
}

// registerBackend adds --backend.
func (tf *taskFlags) registerBackend(fs *flag.FlagSet) {
	fs.StringVar(&tf.backend, "backend", "", "computation backend, `go|xla`: go (pure Go) or xla (XLA through a PJRT plugin); default $NIOC_BACKEND, else go")
}

// registerTask adds --task and --task-file, the two ways of naming the task.
func (tf *taskFlags) registerTask(fs *flag.FlagSet) {
	fs.StringVar(&tf.task, "task", "", "task name (see `nioc-gpu tasks`)")
	fs.StringVar(&tf.taskFile, "task-file", "", "read the task from a TOML `file` instead of --task (docs/tasks.md, \"Tasks from a file\")")
}

// model returns the task of --task or --task-file, with --timing's observation timing.
func (tf *taskFlags) model() (models.Model, error) {
	m, err := tf.namedModel()
	if err != nil || tf.timing == "" {
		return m, err
	}
	switch t := models.Timing(tf.timing); t {
	case models.ActThenSee, models.SeeThenAct:
		return models.WithTiming(m, t), nil
	}
	return nil, usagef("unknown --timing %q: use act-then-see or see-then-act", tf.timing)
}

// namedModel returns the task of --task or --task-file.
func (tf *taskFlags) namedModel() (models.Model, error) {
	switch {
	case tf.task != "" && tf.taskFile != "":
		return nil, usagef("--task and --task-file are mutually exclusive: give one")
	case tf.taskFile != "":
		return taskfile.Load(tf.taskFile)
	case tf.task == "":
		return nil, usagef("--task is required (or --task-file FILE); known tasks: %s", strings.Join(models.Names(), ", "))
	}
	m, err := models.Get(tf.task)
	if err != nil {
		return nil, usageError{err}
	}
	return m, nil
}

// noteXLACompiled says on stderr, after a run on b that ended without error (err nil) and not
// quiet, that XLA compiled programs in it and where they are kept for the next run
// (xlaCompiledNote), since a first XLA run spends seconds compiling without a word.
func noteXLACompiled(b backends.Backend, err error, quiet bool, stderr io.Writer) {
	if err != nil || quiet {
		return
	}
	st, ok := graph.XLACacheStats(b)
	dir, _ := graph.XLACacheDir()
	if note := xlaCompiledNote(st, ok, dir); note != "" {
		fmt.Fprintln(stderr, note)
	}
}

// xlaCompiledNote says how many programs XLA compiled in a process whose compiled-program
// cache in dir did st (graph.XLACacheStats; ok false: no cache), and that they are kept
// there: "" where none was compiled (all loaded from the cache) or there is no cache (the Go
// backend, NIOC_XLA_CACHE=off).
func xlaCompiledNote(st graph.CacheStats, ok bool, dir string) string {
	switch {
	case !ok || st.Misses == 0:
		return ""
	case st.Stored == 0:
		return fmt.Sprintf("xla: compiled %d programs; none could be kept in %s (%s)", st.Misses, dir, st.LastErr)
	case st.Stored < st.Misses:
		return fmt.Sprintf("xla: compiled %d programs and kept %d in %s (the others: %s): later runs of this task and batch size load those instead", st.Misses, st.Stored, dir, st.LastErr)
	}
	return fmt.Sprintf("xla: compiled %d programs and kept them in %s: later runs of this task and batch size load them instead", st.Stored, dir)
}

func (tf *taskFlags) backendOrErr() (backends.Backend, error) {
	name := tf.backend
	if name != "" && name != graph.BackendGo && name != graph.BackendXLA {
		return nil, usagef("unknown backend %q: use go or xla", name)
	}
	return graph.NewBackend(name)
}

// backendFor returns the flags' backend for likelihoods of task m with options opts: where
// one's trials are not lanes (likelihood.TrialsAsLanes), it first asks the CPU plugin for code
// whose bits for a row do not depend on its place in its chunk (graph.ExactRowsOnCPU), so that
// a subject's numbers do not depend on the others fitted beside it.
func (tf *taskFlags) backendFor(m models.Model, opts ...likelihood.Options) (backends.Backend, error) {
	for _, o := range opts {
		if !likelihood.TrialsAsLanes(m.Spec(), o) {
			graph.ExactRowsOnCPU()
		}
	}
	return tf.backendOrErr()
}

// evaluator returns the likelihood evaluator of m with opts on the flags' backend.
func (tf *taskFlags) evaluator(m models.Model, opts likelihood.Options) (*likelihood.Evaluator, error) {
	b, err := tf.backendFor(m, opts)
	if err != nil {
		return nil, err
	}
	return likelihood.New(m, b, opts)
}

func (tf *taskFlags) observeMode() (control.Observe, error) {
	switch control.Observe(tf.observe) {
	case control.ObservePartial, control.ObserveFull:
		return control.Observe(tf.observe), nil
	}
	return "", usagef("unknown --observe %q: use partial or full", tf.observe)
}

func (tf *taskFlags) plannerFor(spec models.Spec) (models.Planner, error) {
	switch models.Planner(tf.planner) {
	case "":
		return spec.Planner, nil
	case models.PlannerFull, models.PlannerPartial:
		return models.Planner(tf.planner), nil
	}
	return "", usagef("unknown --planner %q: use full or partial", tf.planner)
}

// likelihoodOptions returns the likelihood options of the flags.
func (tf *taskFlags) likelihoodOptions(spec models.Spec) (likelihood.Options, error) {
	o := likelihood.Options{FirstOrderNoise: tf.firstOrderNoise, IgnoreGaps: tf.ignoreGaps, NominalFilter: tf.nominalFilter, RawAngles: tf.rawAngles}
	var err error
	if o.Prior, err = tf.beliefPrior.prior(len(spec.States)); err != nil {
		return o, err
	}
	if j := tf.jitter; j != 0 {
		if !(j > 0) || math.IsInf(j, 0) {
			return o, usagef("--jitter must be a finite variance > 0, got %g", j)
		}
		o.Jitter = j
	}
	if o.Observe, err = tf.observeMode(); err != nil {
		return o, err
	}
	if o.Planner, err = tf.plannerFor(spec); err != nil {
		return o, err
	}
	switch likelihood.Method(tf.method) {
	case likelihood.Ours, likelihood.MCEBaseline:
		o.Method = likelihood.Method(tf.method)
	default:
		return o, usagef("unknown --method %q: use ours or baseline", tf.method)
	}
	if o.Linearize, err = parseLinearize(tf.linearize); err != nil {
		return o, err
	}
	if !slices.Contains(likelihood.Forms, likelihood.Form(tf.form)) {
		return o, usagef("unknown --form %q: use auto, unrolled or looped", tf.form)
	}
	o.Form = likelihood.Form(tf.form)
	if o.StepsPerCall, err = parseStepsPerCall(tf.stepsPerCall); err != nil {
		return o, err
	}
	switch t := tf.temperature; {
	case t.fit, !t.set && o.Method == likelihood.Ours:
		// Fitted by default: an agent's policy noise is not known, and a wrong fixed τ biases
		// the costs (docs/results.md, "Robust to how the agent was computed").
		o.FitTemperature = true
	case !t.set, t.task: // the task's temperature
	case t.value == 0:
		if o.Method == likelihood.MCEBaseline {
			return o, usagef("--method baseline needs --temperature > 0: its likelihood is the density of the policy noise")
		}
		o.NoPolicyNoise = true
	default:
		o.Temperature = t.value
	}
	return o, nil
}

// subjectFlags are the flags of the commands that work subject by subject through a data file
// (fit, sample): the data, the parameters, the output and its resumption, the shard.
type subjectFlags struct {
	data, infer, fix, out, shard string
	resume, quiet                bool
	maxBatch                     int           // 0 where --max-batch was not given: by backend (readPlanned)
	fs                           *flag.FlagSet // the flags registered on (checkMaxBatch)
	verb                         string        // what the command does to a parameter
}

// register adds the flags to fs; verb is what the command does to a parameter ("fit",
// "sample") and outDoc describes --out.
func (sf *subjectFlags) register(fs *flag.FlagSet, verb, outDoc string) {
	sf.verb, sf.fs = verb, fs
	fs.StringVar(&sf.data, "data", "", "trajectory CSV with one or more subjects")
	fs.StringVar(&sf.infer, "infer", "", "parameters to "+verb+", name,name (default: all the likelihood depends on)")
	fs.StringVar(&sf.fix, "fix", "", "parameters held fixed, name=value,... (natural units, inside the search box)")
	fs.StringVar(&sf.out, "out", "", outDoc)
	fs.BoolVar(&sf.resume, "resume", false, "continue an interrupted run: skip subjects already in --out")
	fs.StringVar(&sf.shard, "shard", "", verb+" only shard k of N of the subjects (k/N), e.g. for a Slurm job array; give each shard its own --out")
	fs.BoolVar(&sf.quiet, "quiet", false, "no progress bar")
	fs.IntVar(&sf.maxBatch, "max-batch", 0, maxBatchDoc("parameter vectors (restarts or chains) × trials"))
}

// parse checks the flags and returns the shard (k of n) and the fixed parameters.
func (sf *subjectFlags) parse() (k, n int, fixed map[string]float64, err error) {
	if err := checkMaxBatch(sf.fs, sf.maxBatch); err != nil {
		return 0, 0, nil, err
	}
	if k, n, err = parseShard(sf.shard); err != nil {
		return 0, 0, nil, err
	}
	names, values, err := parseAssignments(sf.fix, "fix")
	if err != nil {
		return 0, 0, nil, err
	}
	fixed = map[string]float64{}
	for i, name := range names {
		fixed[name] = values[i]
	}
	return k, n, fixed, nil
}

// checkTemperature returns a usage error when --infer or --fix names the policy noise's
// temperature while the likelihood of opts, made from tf, holds it fixed (--temperature task,
// a number, or the baseline's default): the likelihood then has no parameter "temperature",
// and the error says which flag took it away. spec is the task's; fixed is --fix's values.
func (sf *subjectFlags) checkTemperature(tf *taskFlags, spec models.Spec, opts likelihood.Options, fixed map[string]float64) error {
	name := likelihood.TemperatureParam(0).Name
	_, fix := fixed[name]
	if opts.FitTemperature || !(fix || slices.Contains(parseNames(sf.infer), name)) {
		return nil
	}
	var holds string
	switch t := tf.temperature; {
	case opts.NoPolicyNoise:
		holds = "--temperature 0 gives the agent no policy noise"
	case t.task:
		holds = fmt.Sprintf("--temperature task holds the policy noise's temperature at the task's value (%g)", spec.Temperature)
	case t.set:
		holds = fmt.Sprintf("--temperature %g holds the policy noise's temperature at that value", t.value)
	default:
		holds = fmt.Sprintf("--method %s holds the policy noise's temperature at the task's value (%g) unless given --temperature fit", opts.Method, spec.Temperature)
	}
	if fix {
		v := strconv.FormatFloat(fixed[name], 'g', -1, 64)
		return usagef("--fix %s=%s: %s, so it is not a parameter to fix; give --temperature %s in place of --fix %s=%s",
			name, v, holds, v, name, v)
	}
	return usagef("--infer %s: %s, so it is not a parameter to %s; give --temperature fit to %s it, or leave it out of --infer",
		name, holds, sf.verb, sf.verb)
}

// parseAssignments parses "name=value,name=value" into an ordered list.
func parseAssignments(s, flagName string) ([]string, []float64, error) {
	var names []string
	var values []float64
	if strings.TrimSpace(s) == "" {
		return nil, nil, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, nil, usagef("--%s: %q is not name=value", flagName, part)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, nil, usagef("--%s: %s=%q is not a number", flagName, name, val)
		}
		if seen[name] {
			return nil, nil, usagef("--%s: parameter %s given twice", flagName, name)
		}
		seen[name] = true
		names = append(names, name)
		values = append(values, v)
	}
	return names, values, nil
}

// paramValues returns the task's parameters (natural units) with the assignments of s
// applied. Unknown names, non-finite values and values outside the model's domain are errors.
func paramValues(spec models.Spec, s, flagName string) ([]float64, error) {
	values := spec.Defaults()
	names, vals, err := parseAssignments(s, flagName)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		idx := paramIndex(spec, n)
		if idx < 0 {
			return nil, usagef("--%s: task %s has no parameter %q; its parameters are %s", flagName, spec.Name, n, strings.Join(spec.ParamNames(), ", "))
		}
		if err := spec.Params[idx].Validate(vals[i]); err != nil {
			return nil, usagef("--%s: %v", flagName, err)
		}
		values[idx] = vals[i]
	}
	return values, nil
}

// warnOutsideBox prints a warning on w for each value given with --flagName (names, natural
// units; flagName "" for the task's defaults) outside its parameter's search box: data made
// there cannot be fitted back, since every fit stays inside the box.
func warnOutsideBox(w io.Writer, spec models.Spec, flagName string, names []string, vals []float64) {
	what := "the task's default"
	if flagName != "" {
		what = "--" + flagName
	}
	for i, n := range names {
		idx := paramIndex(spec, n)
		if idx < 0 {
			continue
		}
		if p := spec.Params[idx]; vals[i] < p.Lo || vals[i] > p.Hi {
			fmt.Fprintf(w, "warning: %s %s=%g lies outside its search box [%g, %g]: a fit cannot recover it (estimates stay in the box)\n",
				what, n, vals[i], p.Lo, p.Hi)
		}
	}
}

// warnParamsOutsideBox prints warnOutsideBox's warning on w for each of spec's parameters
// whose value in theta, paramValues(spec, s, flagName), lies outside its search box: as given
// in s with --flagName, or as the task's default.
func warnParamsOutsideBox(w io.Writer, spec models.Spec, s, flagName string, theta []float64) {
	given, _, _ := parseAssignments(s, flagName) // valid: paramValues parsed it
	for i, name := range spec.ParamNames() {
		what := ""
		if slices.Contains(given, name) {
			what = flagName
		}
		warnOutsideBox(w, spec, what, []string{name}, []float64{theta[i]})
	}
}

func paramIndex(spec models.Spec, name string) int {
	for i, p := range spec.Params {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// readData reads a trajectory CSV for the task, with errors that name the task. A value
// beyond the task's plausible range (models.Spec.MaxState) is an error naming its line.
func readData(path string, spec models.Spec) (*data.Set, error) {
	set, err := data.ReadBounded(path, spec.States, spec.MaxState())
	if errors.Is(err, data.ErrImplausible) {
		return nil, fmt.Errorf("%w (task %s; a task file may set another range with state_bound)", err, spec.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (task %s)", err, spec.Name)
	}
	return set, nil
}

// sameFile reports whether the two paths name the same existing file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// forceHint is what refuseExisting suggests for a command with --force and --out.
const forceHint = "use --force to replace it, or choose another --out"

// refuseExisting returns a usage error naming the first of paths that exists, followed by
// hint (what to do instead), or nil if none exists: no command replaces a file silently. An
// existing directory is refused as what it is, without hint: no flag would let it be replaced.
func refuseExisting(hint string, paths ...string) error {
	for _, p := range paths {
		switch st, err := os.Stat(p); {
		case err != nil:
		case st.IsDir():
			return usagef("%s is a directory; give a file name", p)
		default:
			return usagef("%s exists; %s", p, hint)
		}
	}
	return nil
}

// refuseDir returns a usage error if path, the file to write that --flagName names, is an
// existing directory: a command refuses it at once, whether or not it may replace the file
// (--force, --resume).
func refuseDir(flagName, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usagef("--%s %s is a directory; give a file name", flagName, path)
	}
	return nil
}

// refuseNonDir returns a usage error if path, the directory to write in that --flagName
// names, exists but is not a directory.
func refuseNonDir(flagName, path string) error {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return usagef("--%s %s is a file, not a directory; give a directory name (it is created if it does not exist)", flagName, path)
	}
	return nil
}

// checkWritable fails early if a file cannot be created at path.
func checkWritable(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	f, err := os.CreateTemp(dir, ".nioc-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// jsonFloat renders a float for JSON output, with non-finite values as strings.
func jsonFloat(v float64) any {
	if math.IsNaN(v) {
		return "NaN"
	}
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	if math.IsInf(v, -1) {
		return "-Inf"
	}
	return v
}

// parseLinearize checks the value of a --linearize flag; "" (not given) means the task's
// (likelihood.TaskLinearization).
func parseLinearize(s string) (likelihood.Linearization, error) {
	l := likelihood.Linearization(s)
	if l == "" {
		return "", nil
	}
	if !slices.Contains(likelihood.Linearizations, l) {
		names := make([]string, len(likelihood.Linearizations))
		for i, v := range likelihood.Linearizations {
			names[i] = string(v)
		}
		return "", usagef("unknown --linearize %q: use %s", s, strings.Join(names, ", "))
	}
	return l, nil
}

// parseStepsPerCall parses --steps-per-call: a number >= 0, or all (likelihood.WholeRecursion).
func parseStepsPerCall(s string) (int, error) {
	if s == "all" {
		return likelihood.WholeRecursion, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 {
		return 0, usagef("--steps-per-call must be a number >= 0 (0: by backend) or all, got %q", s)
	}
	return k, nil
}
