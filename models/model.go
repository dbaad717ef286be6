// Package models defines the agent's control problem, a partially observable stochastic
// system (paper Sec. 2.1), and the tasks of the paper (App. I).
//
// A task is one short file: a type that implements Model by saying its dimensions, parameters,
// dynamics x' = f(x, u, v; θ), observation y = h(x, w; θ), running cost c(x, u; θ) and final
// cost c_T(x; θ), written with the symbolic expressions of package sym, and an init function
// that registers it. The noises v and w are standard normal; signal-dependent noise is written
// into f and h (for example σ·u·v). Everything else (Jacobians, Hessians, the iLQG solver, the
// belief-tracking likelihood) is derived from these few lines. To add a task, copy one of the
// task files, change the formulas, and register it under a new name.
package models

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// ParamScale is the scale in which a parameter is searched and its errors reported.
type ParamScale int

const (
	// Log10Scale parameters are fitted as log10(value) and must be positive there.
	Log10Scale ParamScale = iota
	// LinearScale parameters are fitted as they are.
	LinearScale
)

func (s ParamScale) String() string {
	if s == LinearScale {
		return "linear"
	}
	return "log10"
}

// Param describes a model parameter θ_i.
type Param struct {
	Name    string
	Default float64 // value used by `simulate` unless given
	Lo, Hi  float64 // the search box for fitting, in natural units
	Scale   ParamScale
	// Signed parameters may be negative; all others (costs, noise magnitudes) must be ≥ 0.
	Signed bool
	Doc    string
}

// ToScale converts a natural value to the parameter's fitting scale.
func (p Param) ToScale(v float64) float64 {
	if p.Scale == Log10Scale {
		return math.Log10(v)
	}
	return v
}

// FromScale converts a value in the fitting scale to natural units.
func (p Param) FromScale(s float64) float64 {
	if p.Scale == Log10Scale {
		return math.Pow(10, s)
	}
	return s
}

// Validate reports whether v is a valid value of the parameter for simulation (any value in
// the model's domain, also outside the search box).
func (p Param) Validate(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("parameter %s = %g is not finite", p.Name, v)
	case !p.Signed && v < 0:
		return fmt.Errorf("parameter %s = %g is negative; it must be >= 0", p.Name, v)
	}
	return nil
}

// Planner is the agent's control algorithm.
type Planner string

const (
	// PlannerFull is fully observable iLQG (Todorov & Li 2005) acting on the EKF belief mean.
	PlannerFull Planner = "full"
	// PlannerPartial is partially observable iLQG (Li & Todorov 2007), whose controller
	// accounts for the estimation error.
	PlannerPartial Planner = "partial"
)

// Horizon says over how many steps the agent plans in a trial whose length differs from the
// task's Steps.
type Horizon string

const (
	// HorizonTrial: every trial is a plan of its own length, its final cost paid at the
	// trial's last state; Steps is only the default length of simulated trials. The paper's
	// tasks are of this kind: their goals (reach a target, swing up, balance) are final costs
	// at the last step, so where a trial ends is where the agent's plan ends.
	HorizonTrial Horizon = "trial"
	// HorizonTask: the agent always plans over Steps, and a trial records the first steps of
	// such a plan (a recording cut short); no trial may be longer than Steps.
	HorizonTask Horizon = "task"
)

// Timing says which observations the agent's action at step t uses.
type Timing string

const (
	// ActThenSee is the paper's agent (Sec. 2.4): its action at t uses the observations of
	// x_0..x_{t−1}; it sees y_t = h(x_t, w_t) after acting and updates its belief with the
	// extended Kalman filter in predictor form, b_{t+1} = f(b_t, u_t, 0) + K_t·(y_t − h(b_t, 0)).
	ActThenSee Timing = "act-then-see"
	// SeeThenAct is the agent of continuous psychophysics (Straub & Rothkopf 2022, the lab's
	// lqg package): after each step it sees y_{t+1} = h(x_{t+1}, w) and updates its belief
	// before it acts at t+1, b_{t+1} = b⁻ + K·(y_{t+1} − h(b⁻, 0)), b⁻ = f(b_t, u_t, 0) (the
	// filter form); at t = 0 it acts on its initial belief.
	SeeThenAct Timing = "see-then-act"
)

// Spec is the static description of a task.
type Spec struct {
	Name        string
	Description string
	States      []string // state names, in order; also the CSV columns
	Controls    []string // control names, in order
	StateNoise  int      // dimension of v
	Obs         int      // dimension of y
	ObsNoise    int      // dimension of w
	Steps       int      // default horizon T (the trajectory has T+1 states)
	Params      []Param
	X0          []float64   // initial state
	BeliefCov   [][]float64 // the agent's initial belief covariance; nil means the identity
	// Temperature of the maximum-causal-entropy policy noise (paper Table 1).
	Temperature float64
	// StateBound is the largest magnitude a state value of the task's data may plausibly
	// have, in the states' units: a data file with a value beyond it (finite but absurd,
	// such as 1e300 from a unit or export error) is refused. 0 means DefaultStateBound.
	StateBound float64
	// Jitter is the variance, in squared state units, that the likelihood adds to the
	// covariance of each observed step before it factorizes it: a floor under the state noise
	// it can represent, so a noise whose variance per step comes near it is estimated too
	// small. 0 means the likelihood's default, 1e-6 (the reference's).
	Jitter float64
	// Linearize is where the likelihood linearizes the agent's problem for this task unless
	// told otherwise: "data", "mean" or "ilqg" (likelihood.Linearization); "" means "data".
	// A task sets "mean" where single noisy trials are poor stand-ins for the agent's plan
	// (reaching: docs/results.md, "Reaching's defaults").
	Linearize string
	// Planner is the agent of the paper for this task under partial observability.
	Planner Planner
	// Horizon is what the agent plans over in trials of another length than Steps; ""
	// means HorizonTrial.
	Horizon Horizon
	// Timing is which observations the agent's actions use; "" means ActThenSee.
	Timing Timing
}

// ObservationTiming returns the task's Timing, ActThenSee when it is not set.
func (s Spec) ObservationTiming() Timing {
	if s.Timing == "" {
		return ActThenSee
	}
	return s.Timing
}

// PlanningHorizon returns the task's Horizon, HorizonTrial when it is not set.
func (s Spec) PlanningHorizon() Horizon {
	if s.Horizon == "" {
		return HorizonTrial
	}
	return s.Horizon
}

// DefaultStateBound is the plausible range of state values, |x| <= 1e6, of a task that sets
// no StateBound.
const DefaultStateBound = 1e6

// MaxState returns the task's StateBound, DefaultStateBound when it is not set.
func (s Spec) MaxState() float64 {
	if s.StateBound == 0 {
		return DefaultStateBound
	}
	return s.StateBound
}

// Param returns the parameter named name.
func (s Spec) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParamNames returns the parameter names in order.
func (s Spec) ParamNames() []string {
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return names
}

// Defaults returns the default parameter values in order.
func (s Spec) Defaults() []float64 {
	v := make([]float64, len(s.Params))
	for i, p := range s.Params {
		v[i] = p.Default
	}
	return v
}

// ScalableDefaults returns the parameters' defaults in natural units and in their fitting
// scales, a log10-scale default that has no logarithm (light-dark's light_cost 0) replaced by
// the geometric mean of its search box: a point where the likelihood and its gradient in the
// fitting scale are defined.
func (s Spec) ScalableDefaults() (natural, scaled []float64) {
	for _, p := range s.Params {
		v := p.Default
		if p.Scale == Log10Scale && v <= 0 {
			v = math.Sqrt(p.Lo * p.Hi)
		}
		natural = append(natural, v)
		scaled = append(scaled, p.ToScale(v))
	}
	return natural, scaled
}

// InitialBeliefCov returns the agent's initial belief covariance (the identity unless the task
// says otherwise).
func (s Spec) InitialBeliefCov() [][]float64 {
	if s.BeliefCov != nil {
		return s.BeliefCov
	}
	return Identity(len(s.States))
}

// Identity returns the n×n identity matrix.
func Identity(n int) [][]float64 {
	c := make([][]float64, n)
	for i := range c {
		c[i] = make([]float64, n)
		c[i][i] = 1
	}
	return c
}

// Params maps parameter names to their symbolic values (natural units).
type Params map[string]sym.Expr

// Model is a task: the agent's POMDP (paper Sec. 2.1).
type Model interface {
	Spec() Spec
	// Dynamics returns x_{t+1} = f(x, u, v; θ) with v ~ N(0, I).
	Dynamics(x, u, v sym.Vec, p Params) sym.Vec
	// Observation returns y = h(x, w; θ) with w ~ N(0, I).
	Observation(x, w sym.Vec, p Params) sym.Vec
	// Cost returns the running cost c(x, u; θ) of one time step.
	Cost(x, u sym.Vec, p Params) sym.Expr
	// FinalCost returns the final cost c_T(x; θ).
	FinalCost(x sym.Vec, p Params) sym.Expr
}

var registry = struct {
	sync.Mutex
	models map[string]Model
}{models: map[string]Model{}}

// Register makes a task available by its Spec().Name. It panics if the name is taken or the
// spec is inconsistent.
func Register(m Model) {
	s := m.Spec()
	if err := checkSpec(s); err != nil {
		panic(err)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.models[s.Name]; ok {
		panic(fmt.Sprintf("models: task %q registered twice", s.Name))
	}
	registry.models[s.Name] = m
}

// Get returns the task named name, or an error listing the known tasks.
func Get(name string) (Model, error) {
	registry.Lock()
	defer registry.Unlock()
	if m, ok := registry.models[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("unknown task %q; known tasks: %s", name, strings.Join(namesLocked(), ", "))
}

// Names returns the registered task names, sorted.
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry.models))
	for n := range registry.models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func checkSpec(s Spec) error {
	switch {
	case s.Name == "":
		return fmt.Errorf("models: task without a name")
	case len(s.States) == 0 || len(s.Controls) == 0:
		return fmt.Errorf("models: task %q needs states and controls", s.Name)
	case len(s.X0) != len(s.States):
		return fmt.Errorf("models: task %q has %d states but x0 has %d values", s.Name, len(s.States), len(s.X0))
	case s.Steps < 1:
		return fmt.Errorf("models: task %q needs Steps >= 1", s.Name)
	case s.Planner != PlannerFull && s.Planner != PlannerPartial:
		return fmt.Errorf("models: task %q has unknown planner %q", s.Name, s.Planner)
	case !(s.StateBound >= 0) || math.IsInf(s.StateBound, 0):
		return fmt.Errorf("models: task %q has StateBound %g: it must be a finite number > 0 (0 for the default, %g)", s.Name, s.StateBound, DefaultStateBound)
	case s.Horizon != "" && s.Horizon != HorizonTrial && s.Horizon != HorizonTask:
		return fmt.Errorf("models: task %q has unknown horizon %q: use %q or %q", s.Name, s.Horizon, HorizonTrial, HorizonTask)
	case s.Timing != "" && s.Timing != ActThenSee && s.Timing != SeeThenAct:
		return fmt.Errorf("models: task %q has unknown timing %q: use %q or %q", s.Name, s.Timing, ActThenSee, SeeThenAct)
	}
	seen := map[string]bool{}
	for _, p := range s.Params {
		if seen[p.Name] || p.Name == "" {
			return fmt.Errorf("models: task %q has an empty or repeated parameter name %q", s.Name, p.Name)
		}
		seen[p.Name] = true
		if !(p.Lo < p.Hi) || (p.Scale == Log10Scale && p.Lo <= 0) {
			return fmt.Errorf("models: task %q parameter %s has an invalid search box [%g, %g] for scale %s", s.Name, p.Name, p.Lo, p.Hi, p.Scale)
		}
	}
	if s.BeliefCov != nil && (len(s.BeliefCov) != len(s.States) || slices.ContainsFunc(s.BeliefCov, func(r []float64) bool { return len(r) != len(s.States) })) {
		return fmt.Errorf("models: task %q has a belief covariance of the wrong size", s.Name)
	}
	return nil
}
