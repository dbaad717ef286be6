// Package taskfile reads a task from a TOML file, so that a task can be defined without Go:
// its dimensions and names, time step and horizon, initial state and belief, parameters with
// their search boxes and scales, planner, and its dynamics, observation, running cost and
// final cost as expressions. The expressions are Go expression syntax, parsed by go/parser,
// and become expressions of package sym, so the derivatives are exact, as for the built-in
// tasks; the file is parsed by github.com/pelletier/go-toml/v2. Every problem is reported as
// an *Error naming the file, line and column. The format is described in docs/tasks.md ("Tasks
// from a file"); examples/tasks holds the paper's tasks written as files.
package taskfile

import (
	"fmt"
	"go/constant"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"gonum.org/v1/gonum/mat"
)

// schema is the file's content as the TOML library decodes it.
type schema struct {
	Name              string            `toml:"name"`
	Description       string            `toml:"description"`
	States            []string          `toml:"states"`
	Controls          []string          `toml:"controls"`
	Observations      int               `toml:"observations"`
	MotorNoises       int               `toml:"motor_noises"`
	ObservationNoises int               `toml:"observation_noises"`
	Dt                float64           `toml:"dt"`
	Horizon           int               `toml:"horizon"`
	Planner           string            `toml:"planner"`
	Temperature       float64           `toml:"temperature"`
	StateBound        float64           `toml:"state_bound"`
	Jitter            float64           `toml:"jitter"`
	Linearize         string            `toml:"linearize"`
	PlanOver          string            `toml:"plan_over"`
	Timing            string            `toml:"timing"`
	X0                []any             `toml:"x0"`
	BeliefCov         [][]any           `toml:"belief_cov"`
	Constants         map[string]any    `toml:"constants"`
	Define            map[string]string `toml:"define"`
	Params            []paramSchema     `toml:"param"`
	Model             modelSchema       `toml:"model"`
}

// modelSchema is the [model] table: the expressions of the agent's problem.
type modelSchema struct {
	Dynamics    []string `toml:"dynamics"`
	Observation []string `toml:"observation"`
	Cost        string   `toml:"cost"`
	FinalCost   string   `toml:"final_cost"`
}

type paramSchema struct {
	Name    string    `toml:"name"`
	Default float64   `toml:"default"`
	Bounds  []float64 `toml:"bounds"`
	Scale   string    `toml:"scale"`
	Signed  bool      `toml:"signed"`
	Doc     string    `toml:"doc"`
}

// DefaultTemperature is the policy noise's temperature of a file that gives none.
const DefaultTemperature = 1e-3

// Task is a task read from a file. It implements models.Model.
type Task struct {
	path        string
	digest      string // see Digest
	spec        models.Spec
	c           *compiler
	dynamics    []*source
	observation []*source
	cost, final *source
}

// Load reads the task file at path. Problems are *Error values naming the file, line and
// column.
func Load(path string) (*Task, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, text)
}

// Parse reads a task from text; file names it in errors.
func Parse(file string, text []byte) (*Task, error) {
	d, err := newDocument(file, text)
	if err != nil {
		return nil, err
	}
	var s schema
	if err := d.decode(&s); err != nil {
		return nil, err
	}
	for _, key := range []string{"name", "states", "controls", "observations", "motor_noises", "observation_noises",
		"dt", "horizon", "x0", "model.dynamics", "model.observation", "model.cost", "model.final_cost"} {
		if !d.has(key) {
			return nil, d.errorf(key, "missing key %s (see the docs/tasks.md, \"Tasks from a file\")", key)
		}
	}
	t := &Task{path: file}
	if t.digest, err = canonicalDigest(text); err != nil {
		return nil, err
	}
	t.c = &compiler{doc: d, fset: token.NewFileSet(), kinds: map[string]string{}, consts: map[string]constant.Value{},
		csrc: map[string]*source{}, defs: map[string]*source{}, nv: s.MotorNoises, nw: s.ObservationNoises}
	if err := t.declare(d, &s); err != nil {
		return nil, err
	}
	if err := t.buildSpec(d, &s); err != nil {
		return nil, err
	}
	if err := t.parseExpressions(d, &s); err != nil {
		return nil, err
	}
	return t, nil
}

// Path returns the file the task was read from.
func (t *Task) Path() string { return t.path }

var reserved = regexp.MustCompile(`^([vw][0-9]+|pi|dt|_)$`)

// declare checks every name of the file and records its kind; it reads the constants.
func (t *Task) declare(d *document, s *schema) error {
	c := t.c
	add := func(path, name, kind string) error {
		switch {
		case !token.IsIdentifier(name):
			return d.errorf(path, "%s name %q is not a name: use letters, digits and _, not starting with a digit", kind, name)
		case reserved.MatchString(name):
			return d.errorf(path, "%s name %q is reserved (pi, dt, the noises v1.., w1..)", kind, name)
		case functions[name].args > 0 || slices.Contains(nonSmooth, name):
			return d.errorf(path, "%s name %q is the name of a function", kind, name)
		case kind == "parameter" && name == "temperature":
			// The likelihood's fitted policy-noise temperature has this name.
			return d.errorf(path, "parameter name \"temperature\" is reserved for the policy noise's fitted temperature")
		case c.kinds[name] != "":
			return d.errorf(path, "%s name %q is already the name of a %s", kind, name, c.kinds[name])
		}
		c.kinds[name] = kind
		return nil
	}
	switch {
	case s.MotorNoises < 1:
		return d.errorf("motor_noises", "motor_noises must be >= 1 (the dimension of v), got %d", s.MotorNoises)
	case s.ObservationNoises < 1:
		return d.errorf("observation_noises", "observation_noises must be >= 1 (the dimension of w), got %d", s.ObservationNoises)
	case len(s.States) == 0:
		return d.errorf("states", "states is empty")
	case len(s.Controls) == 0:
		return d.errorf("controls", "controls is empty")
	}
	for i, n := range s.States {
		if err := add(fmt.Sprintf("states[%d]", i), n, "state"); err != nil {
			return err
		}
	}
	for i, n := range s.Controls {
		if err := add(fmt.Sprintf("controls[%d]", i), n, "control"); err != nil {
			return err
		}
	}
	for i := range s.MotorNoises {
		c.kinds[fmt.Sprintf("v%d", i+1)] = "motor noise"
	}
	for i := range s.ObservationNoises {
		c.kinds[fmt.Sprintf("w%d", i+1)] = "observation noise"
	}
	for i, p := range s.Params {
		if err := add(fmt.Sprintf("param[%d].name", i), p.Name, "parameter"); err != nil {
			return err
		}
	}
	c.consts["pi"] = constant.MakeFromLiteral(piLiteral, token.FLOAT, 0)
	c.consts["dt"] = t.number(d, "dt", s.Dt)
	for _, name := range inFileOrder(d, "constants.", s.Constants) {
		path := "constants." + name
		if err := add(path, name, "constant"); err != nil {
			return err
		}
		switch v := s.Constants[name].(type) {
		case string:
			src, err := c.parse(path, v)
			if err != nil {
				return err
			}
			c.csrc[name] = src
		case int64:
			c.consts[name] = t.number(d, path, float64(v))
		case float64:
			c.consts[name] = t.number(d, path, v)
		default:
			return d.errorf(path, "constant %s must be a number or an expression string", name)
		}
	}
	for _, name := range inFileOrder(d, "define.", s.Define) {
		path := "define." + name
		if err := add(path, name, "definition"); err != nil {
			return err
		}
		src, err := c.parse(path, s.Define[name])
		if err != nil {
			return err
		}
		c.defs[name] = src
	}
	for _, name := range inFileOrder(d, "constants.", s.Constants) {
		if c.csrc[name] != nil {
			if _, err := c.constant(name, nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// number returns the number at path exactly as written (so that constant expressions fold as
// the Go compiler folds them), or v where its text is not a plain decimal.
func (t *Task) number(d *document, path string, v float64) constant.Value {
	if lit := d.literal(path); lit != "" {
		return constant.ToFloat(constant.MakeFromLiteral(lit, token.FLOAT, 0))
	}
	return constant.MakeFloat64(v)
}

// buildSpec checks the scalar settings, parameters, x0 and belief covariance.
func (t *Task) buildSpec(d *document, s *schema) error {
	spec := models.Spec{
		Name: s.Name, Description: s.Description, States: s.States, Controls: s.Controls,
		StateNoise: s.MotorNoises, Obs: s.Observations, ObsNoise: s.ObservationNoises, Steps: s.Horizon,
		Temperature: DefaultTemperature, Planner: models.PlannerFull,
	}
	if spec.Description == "" {
		spec.Description = "task file " + filepath.Base(t.path)
	}
	switch {
	case s.Name == "":
		return d.errorf("name", "name is empty")
	case s.Observations < 1:
		return d.errorf("observations", "observations must be >= 1 (the dimension of y), got %d", s.Observations)
	case !(s.Dt > 0) || math.IsInf(s.Dt, 0):
		return d.errorf("dt", "dt must be a positive number, got %g", s.Dt)
	case s.Horizon < 1:
		return d.errorf("horizon", "horizon must be >= 1 time step, got %d", s.Horizon)
	}
	if d.has("planner") {
		spec.Planner = models.Planner(s.Planner)
		if spec.Planner != models.PlannerFull && spec.Planner != models.PlannerPartial {
			return d.errorf("planner", "unknown planner %q: use \"full\" or \"partial\"", s.Planner)
		}
	}
	if d.has("temperature") {
		if !(s.Temperature >= 0) || math.IsInf(s.Temperature, 0) {
			return d.errorf("temperature", "temperature must be a number >= 0, got %g", s.Temperature)
		}
		spec.Temperature = s.Temperature
	}
	if d.has("state_bound") {
		if !(s.StateBound > 0) || math.IsInf(s.StateBound, 0) {
			return d.errorf("state_bound", "state_bound must be a finite number > 0 (the largest plausible |x| of a state value in data), got %g", s.StateBound)
		}
		spec.StateBound = s.StateBound
	}
	if d.has("jitter") {
		if !(s.Jitter > 0) || math.IsInf(s.Jitter, 0) {
			return d.errorf("jitter", "jitter must be a finite variance > 0 (added to each step's state covariance), got %g", s.Jitter)
		}
		spec.Jitter = s.Jitter
	}
	if d.has("linearize") {
		if !slices.Contains(likelihood.Linearizations, likelihood.Linearization(s.Linearize)) {
			return d.errorf("linearize", "unknown linearize %q: use \"data\" (around each observed trial, the default), \"mean\" (around the mean of a subject's trials) or \"ilqg\" (around the agent's plan for each θ)", s.Linearize)
		}
		spec.Linearize = s.Linearize
	}
	if d.has("plan_over") {
		spec.Horizon = models.Horizon(s.PlanOver)
		if spec.Horizon != models.HorizonTrial && spec.Horizon != models.HorizonTask {
			return d.errorf("plan_over", "unknown plan_over %q: use \"trial\" (each trial is a plan of its own length) or \"task\" (plans over horizon steps; trials are their first steps)", s.PlanOver)
		}
	}
	if d.has("timing") {
		spec.Timing = models.Timing(s.Timing)
		if spec.Timing != models.ActThenSee && spec.Timing != models.SeeThenAct {
			return d.errorf("timing", "unknown timing %q: use \"act-then-see\" (the paper's agent: its action at t uses the observations before x_t) or \"see-then-act\" (it sees x_t, updates its belief, then acts: lqg's agent)", s.Timing)
		}
	}
	for i, ps := range s.Params {
		p, err := param(d, fmt.Sprintf("param[%d]", i), ps)
		if err != nil {
			return err
		}
		spec.Params = append(spec.Params, p)
	}
	n := len(s.States)
	if len(s.X0) != n {
		return d.errorf("x0", "x0 has %d values for %d states", len(s.X0), n)
	}
	var err error
	for i, v := range s.X0 {
		x, e := t.constantValue(d, fmt.Sprintf("x0[%d]", i), v)
		if e != nil {
			return e
		}
		spec.X0 = append(spec.X0, x)
	}
	if d.has("belief_cov") {
		if spec.BeliefCov, err = t.beliefCov(d, s.BeliefCov, n); err != nil {
			return err
		}
	}
	t.spec = spec
	return nil
}

// param checks one [[param]] table.
func param(d *document, path string, ps paramSchema) (models.Param, error) {
	p := models.Param{Name: ps.Name, Default: ps.Default, Signed: ps.Signed, Doc: ps.Doc}
	switch {
	case !d.has(path + ".default"):
		return p, d.errorf(path, "parameter %s has no default", ps.Name)
	case !d.has(path + ".bounds"):
		return p, d.errorf(path, "parameter %s has no bounds: give its search box as bounds = [lo, hi]", ps.Name)
	case len(ps.Bounds) != 2:
		return p, d.errorf(path+".bounds", "parameter %s: bounds must be [lo, hi], got %d numbers", ps.Name, len(ps.Bounds))
	case !d.has(path + ".scale"):
		return p, d.errorf(path, "parameter %s has no scale: give scale = \"log10\" or \"linear\"", ps.Name)
	}
	p.Lo, p.Hi = ps.Bounds[0], ps.Bounds[1]
	switch ps.Scale {
	case "log10":
		p.Scale = models.Log10Scale
	case "linear":
		p.Scale = models.LinearScale
	default:
		return p, d.errorf(path+".scale", "parameter %s: unknown scale %q: use \"log10\" or \"linear\"", ps.Name, ps.Scale)
	}
	for _, v := range []float64{p.Default, p.Lo, p.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return p, d.errorf(path, "parameter %s: default and bounds must be finite", ps.Name)
		}
	}
	switch {
	case !(p.Lo < p.Hi):
		return p, d.errorf(path+".bounds", "parameter %s: bounds [%g, %g] are reversed or empty: lo must be < hi", ps.Name, p.Lo, p.Hi)
	case p.Scale == models.Log10Scale && p.Lo <= 0:
		return p, d.errorf(path+".bounds", "parameter %s: scale log10 needs bounds > 0, got [%g, %g]", ps.Name, p.Lo, p.Hi)
	case p.Scale == models.Log10Scale && p.Signed:
		return p, d.errorf(path+".signed", "parameter %s: a log10-scale parameter cannot be signed", ps.Name)
	case !p.Signed && p.Lo < 0:
		return p, d.errorf(path+".bounds", "parameter %s: bounds below 0 need signed = true", ps.Name)
	}
	if err := p.Validate(p.Default); err != nil {
		return p, d.errorf(path+".default", "%v", err)
	}
	return p, nil
}

// constantValue returns a number of the file given as a number or a constant expression.
func (t *Task) constantValue(d *document, path string, v any) (float64, error) {
	switch v := v.(type) {
	case int64:
		return float64(v), nil
	case float64:
		return v, nil
	case string:
		src, err := t.c.parse(path, v)
		if err != nil {
			return 0, err
		}
		val, err := t.c.compile(src, newEnv(inConstant, nil))
		if err != nil {
			return 0, err
		}
		return toFloat(val.c), nil
	}
	return 0, d.errorf(path, "want a number or a constant expression, got %v", v)
}

// beliefCov checks the initial belief covariance: n×n, symmetric, positive definite.
func (t *Task) beliefCov(d *document, rows [][]any, n int) ([][]float64, error) {
	if len(rows) != n {
		return nil, d.errorf("belief_cov", "belief_cov has %d rows for %d states", len(rows), n)
	}
	cov := make([][]float64, n)
	for i, row := range rows {
		if len(row) != n {
			return nil, d.errorf(fmt.Sprintf("belief_cov[%d]", i), "belief_cov row %d has %d values for %d states", i+1, len(row), n)
		}
		for j, v := range row {
			x, err := t.constantValue(d, fmt.Sprintf("belief_cov[%d][%d]", i, j), v)
			if err != nil {
				return nil, err
			}
			cov[i] = append(cov[i], x)
		}
	}
	sym := mat.NewSymDense(n, nil)
	for i := range n {
		for j := range n {
			if cov[i][j] != cov[j][i] {
				return nil, d.errorf(fmt.Sprintf("belief_cov[%d][%d]", i, j), "belief_cov is not symmetric")
			}
			sym.SetSym(i, j, cov[i][j])
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sym) {
		return nil, d.errorf("belief_cov", "belief_cov is not positive definite")
	}
	return cov, nil
}

// parseExpressions parses the dynamics, observation and costs and compiles them once, with
// fresh variables, so that every problem is found here and not when the task is used.
func (t *Task) parseExpressions(d *document, s *schema) error {
	spec, m := t.spec, s.Model
	if len(m.Dynamics) != len(spec.States) {
		return d.errorf("model.dynamics", "%d dynamics expressions for %d states: give the next value of each state, in order", len(m.Dynamics), len(spec.States))
	}
	if len(m.Observation) != spec.Obs {
		return d.errorf("model.observation", "%d observation expressions, but observations = %d", len(m.Observation), spec.Obs)
	}
	parseAll := func(key string, texts []string) ([]*source, error) {
		out := make([]*source, len(texts))
		for i, text := range texts {
			var err error
			if out[i], err = t.c.parse(fmt.Sprintf("%s[%d]", key, i), text); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var err error
	if t.dynamics, err = parseAll("model.dynamics", m.Dynamics); err != nil {
		return err
	}
	if t.observation, err = parseAll("model.observation", m.Observation); err != nil {
		return err
	}
	if t.cost, err = t.c.parse("model.cost", m.Cost); err != nil {
		return err
	}
	if t.final, err = t.c.parse("model.final_cost", m.FinalCost); err != nil {
		return err
	}
	x, u := sym.NewVars("x", len(spec.States)), sym.NewVars("u", len(spec.Controls))
	v, w := sym.NewVars("v", spec.StateNoise), sym.NewVars("w", spec.ObsNoise)
	p := models.Params{}
	for _, q := range spec.Params {
		p[q.Name] = sym.NewVar(q.Name)
	}
	all := t.vars(x, u, v, w, p)
	for _, name := range inFileOrder(d, "define.", t.c.defs) {
		if _, err := t.c.definition(name, newEnv("a definition", all), nil, nil); err != nil {
			return err
		}
	}
	if _, err := t.compileVec(t.dynamics, newEnv("the dynamics", t.vars(x, u, v, nil, p))); err != nil {
		return err
	}
	if _, err := t.compileVec(t.observation, newEnv("the observation", t.vars(x, nil, nil, w, p))); err != nil {
		return err
	}
	if _, err := t.c.compile(t.cost, newEnv("the running cost", t.vars(x, u, nil, nil, p))); err != nil {
		return err
	}
	_, err = t.c.compile(t.final, newEnv("the final cost", t.vars(x, nil, nil, nil, p)))
	return err
}

// vars binds the names of the states, controls, noises and parameters (nil: not available).
func (t *Task) vars(x, u, v, w sym.Vec, p models.Params) map[string]sym.Expr {
	m := map[string]sym.Expr{}
	for i, e := range x {
		m[t.spec.States[i]] = e
	}
	for i, e := range u {
		m[t.spec.Controls[i]] = e
	}
	for i, e := range v {
		m[fmt.Sprintf("v%d", i+1)] = e
	}
	for i, e := range w {
		m[fmt.Sprintf("w%d", i+1)] = e
	}
	for _, q := range t.spec.Params {
		m[q.Name] = p[q.Name]
	}
	return m
}

func (t *Task) compileVec(srcs []*source, en *env) (sym.Vec, error) {
	out := make(sym.Vec, len(srcs))
	for i, s := range srcs {
		v, err := t.c.compile(s, en)
		if err != nil {
			return nil, err
		}
		out[i] = v.sym()
	}
	return out, nil
}

// must compiles what Parse already compiled once; an error is a bug.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("taskfile: %v", err))
	}
	return v
}

// Spec returns the task's description (a copy).
func (t *Task) Spec() models.Spec {
	s := t.spec
	s.States, s.Controls, s.X0 = slices.Clone(s.States), slices.Clone(s.Controls), slices.Clone(s.X0)
	s.Params = slices.Clone(s.Params)
	if s.BeliefCov != nil {
		s.BeliefCov = make([][]float64, len(t.spec.BeliefCov))
		for i, r := range t.spec.BeliefCov {
			s.BeliefCov[i] = slices.Clone(r)
		}
	}
	return s
}

// Dynamics returns the file's dynamics expressions.
func (t *Task) Dynamics(x, u, v sym.Vec, p models.Params) sym.Vec {
	return must(t.compileVec(t.dynamics, newEnv("the dynamics", t.vars(x, u, v, nil, p))))
}

// Observation returns the file's observation expressions.
func (t *Task) Observation(x, w sym.Vec, p models.Params) sym.Vec {
	return must(t.compileVec(t.observation, newEnv("the observation", t.vars(x, nil, nil, w, p))))
}

// Cost returns the file's running cost.
func (t *Task) Cost(x, u sym.Vec, p models.Params) sym.Expr {
	return must(t.c.compile(t.cost, newEnv("the running cost", t.vars(x, u, nil, nil, p)))).sym()
}

// FinalCost returns the file's final cost.
func (t *Task) FinalCost(x sym.Vec, p models.Params) sym.Expr {
	return must(t.c.compile(t.final, newEnv("the final cost", t.vars(x, nil, nil, nil, p)))).sym()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// inFileOrder returns the keys of m, a table of the file under prefix, in the file's order.
func inFileOrder[V any](d *document, prefix string, m map[string]V) []string {
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int { return d.at[prefix+a].offset - d.at[prefix+b].offset })
	return keys
}
