// Package likelihood computes the inverse-optimal-control log-likelihood of observed state
// trajectories given an agent's parameters θ, and its exact gradient, on computation graphs
// (paper Sec. 3 and App. B–H).
//
// Three likelihoods are available: belief tracking for a partially observable agent (ours,
// Sec. 3), the special case of an agent that sees the state (App. E), and the
// maximum-causal-entropy IRL baseline (App. B). The agent's controller comes from one
// backward pass of the linearized problem, either around the data with estimated controls
// (Sec. 3.3, App. G) or around the iLQG solution for the current θ (App. H, the gradient
// flowing through the last iteration). One graph evaluates many parameter vectors at once, each
// against its own set of trials, and returns every log-likelihood with its gradient with
// respect to the parameters in their fitting scale (log10 or linear).
package likelihood

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

var log2Pi = math.Log(2 * math.Pi)

// Method selects the likelihood.
type Method string

const (
	// Ours is the belief-tracking likelihood of the paper (or App. E when the agent observes
	// the state).
	Ours Method = "ours"
	// MCEBaseline is the maximum-causal-entropy IRL baseline with estimated controls (App. B).
	MCEBaseline Method = "baseline"
)

// Linearization selects the trajectory around which the agent's problem is linearized.
type Linearization string

const (
	// LinearizeData linearizes around each observed trajectory with estimated controls
	// (paper Sec. 3.3): one backward pass per evaluation.
	LinearizeData Linearization = "data"
	// LinearizeILQG linearizes around the iLQG solution for the current θ (App. H); needed
	// when the policy depends on the belief covariance (light-dark).
	LinearizeILQG Linearization = "ilqg"
	// LinearizeMean linearizes around the mean of a row's observed trajectories (all of the
	// same length, from about the same initial state), with controls estimated from it: one
	// backward pass per row instead of per trial. The agent plans around its noise-free
	// nominal trajectory, which the mean approximates; a single noisy trial is a poor stand-in
	// when the motor noise is large (reaching with σ_m ≳ 0.3), where LinearizeData biases the
	// control cost and motor noise upward.
	LinearizeMean Linearization = "mean"
)

// Linearizations lists the valid Linearization values.
var Linearizations = []Linearization{LinearizeData, LinearizeMean, LinearizeILQG}

// DefaultJitter is added to covariances before they are factorized, as in the reference.
const DefaultJitter = 1e-6

// TaskJitter returns the jitter the likelihood uses for a task unless Options.Jitter says
// otherwise: the task's own (models.Spec.Jitter), or DefaultJitter.
func TaskJitter(spec models.Spec) float64 {
	if spec.Jitter > 0 {
		return spec.Jitter
	}
	return DefaultJitter
}

// TaskLinearization returns the linearization the likelihood uses for a task unless
// Options.Linearize says otherwise: the task's own (models.Spec.Linearize), or LinearizeData.
func TaskLinearization(spec models.Spec) Linearization {
	if spec.Linearize != "" {
		return Linearization(spec.Linearize)
	}
	return LinearizeData
}

// Options configure an Evaluator. The zero value means: partial observability, our method,
// the task's planner, temperature, linearization (TaskLinearization) and jitter.
type Options struct {
	Observe   control.Observe
	Method    Method
	Planner   models.Planner
	Linearize Linearization
	// Temperature of the maximum-causal-entropy policy noise; 0 means the task's (paper
	// Table 1). Set NoPolicyNoise for none.
	Temperature   float64
	NoPolicyNoise bool
	Jitter        float64 // 0 means the task's (models.Spec.Jitter), or DefaultJitter
	// Prior is the covariance of the agent's initial belief mean around the first observed
	// state x_0; nil means 0: the belief starts at x_0, as the agents of `simulate` and of the
	// reference's simulator do. The reference's likelihood uses the identity (ReferencePrior);
	// with it, data from those agents bias the estimates (docs/method.md, "Deliberate differences").
	Prior [][]float64
	// IgnoreGaps linearizes at data (LinearizeData, LinearizeMean) as if they were a rollout of
	// the model, as the paper and the reference implementation do: the backward pass then
	// ignores the gaps f(x_t, u_t, 0) − x_{t+1} (control.Linearized.Gaps), which biases the
	// estimates (docs/method.md, "Deliberate differences"). Off by default.
	IgnoreGaps bool
	// NominalFilter gives the partially observing agent the Kalman gains of the system
	// linearized along the linearization trajectory, computed before the forward pass, as the
	// paper (Sec. 2.4) and the reference implementation's likelihood do. By default the agent's
	// filter is tracked instead: its covariance is carried through the forward pass and each
	// step's gain is the EKF's at the tracked mean of the agent's belief and the control its
	// policy gives there (TrackedFilter), which is what the extended Kalman filter of an
	// agent simulated by `simulate` or by the reference's simulator computes. With
	// signal-dependent noise or a non-linear observation the nominal gains bias the estimates
	// (docs/method.md, "Deliberate differences").
	NominalFilter bool
	// GaussNewtonIters for control estimation of models not affine in u; 0 means default.
	GaussNewtonIters int
	Solver           control.SolverOptions // for LinearizeILQG
	// FirstOrderNoise linearizes in all noises jointly, as the paper and the reference
	// implementation do, dropping the variance of products of control-dependent noise with
	// the random part of the control (see BeliefTracking). Off by default.
	FirstOrderNoise bool
	// RawAngles takes the agent's innovation h(x) − h(b) as it is, as the paper and the
	// reference implementation do, instead of taking the differences of the observation's
	// atan2 terms modulo 2π (models.Atan2Term): the likelihood then jumps where the tracked
	// belief and the observed state lie on either side of an atan2's branch cut
	// (docs/method.md, "Angles in the observation"). Off by default.
	RawAngles bool
	// FitTemperature makes the policy noise's temperature τ a nuisance parameter: the
	// evaluator's Spec gains a last parameter "temperature" (TemperatureParam), fitted with the
	// others, so that agents with and without policy noise are both described (docs/results.md,
	// "Robust to how the agent was computed"). Temperature is then its default value.
	FitTemperature bool
	// ValueOnly skips the gradient (Eval returns nil gradients): about half the work.
	ValueOnly bool
	// Form runs the recursions unrolled or looped; FormAuto picks by backend.
	Form Form
	// ForwardGradient computes the looped form's gradient in forward mode: every step carries
	// the tangents of its values along the p parameters (graph.Engine.NewForwardTape), one
	// program call per stage and step and no stored carries, instead of reverse mode over the
	// recorded calls. Slower on the backends measured (docs/backends.md, "Backends"); kept to measure.
	ForwardGradient bool
	// StepsPerCall runs StepsPerCall steps of each recursion of the looped form in one program
	// call (graph.Engine.SetStepsPerCall): fewer calls, larger programs to compile. 0 picks by
	// backend (DefaultStepsPerCall). WholeRecursion runs each recursion in one call: on XLA a
	// while loop over the program of one step (graph.Engine.SetWhileLoops), which compiles
	// like one step; elsewhere a block of all its steps.
	StepsPerCall int
}

func (o Options) withDefaults(spec models.Spec) (Options, error) {
	if o.Observe == "" {
		o.Observe = control.ObservePartial
	}
	if o.Method == "" {
		o.Method = Ours
	}
	if o.Planner == "" {
		o.Planner = spec.Planner
	}
	if o.Linearize == "" {
		o.Linearize = TaskLinearization(spec)
	}
	if o.Temperature == 0 && !o.NoPolicyNoise {
		o.Temperature = spec.Temperature
	}
	if o.NoPolicyNoise {
		o.Temperature = 0
	}
	if o.FitTemperature && o.NoPolicyNoise {
		return o, fmt.Errorf("the temperature cannot be both fitted and 0 (no policy noise)")
	}
	if o.Form == "auto" {
		o.Form = FormAuto
	}
	if o.Jitter == 0 {
		o.Jitter = TaskJitter(spec)
	}
	if o.GaussNewtonIters == 0 {
		o.GaussNewtonIters = DefaultGaussNewtonIters
	}
	o.Solver.Planner = o.Planner
	if o.Form != FormAuto && o.Form != "auto" {
		o.Solver.Form = string(o.Form)
	}
	if o.Solver.Eps == 0 {
		o.Solver.Eps = control.RegularizationEps
	}
	switch {
	case o.Observe != control.ObservePartial && o.Observe != control.ObserveFull:
		return o, fmt.Errorf("unknown observation mode %q: use partial or full", o.Observe)
	case o.Method != Ours && o.Method != MCEBaseline:
		return o, fmt.Errorf("unknown method %q: use ours or baseline", o.Method)
	case o.Planner != models.PlannerFull && o.Planner != models.PlannerPartial:
		return o, fmt.Errorf("unknown planner %q: use full or partial", o.Planner)
	case !slices.Contains(Linearizations, o.Linearize):
		return o, fmt.Errorf("unknown linearization %q: use one of %v", o.Linearize, Linearizations)
	case o.Temperature < 0 || math.IsNaN(o.Temperature):
		return o, fmt.Errorf("temperature must be >= 0, got %g", o.Temperature)
	case o.Method == MCEBaseline && o.Temperature == 0:
		return o, fmt.Errorf("the MCE baseline needs a temperature > 0")
	case o.Form != FormAuto && o.Form != "auto" && o.Form != FormUnrolled && o.Form != FormLooped:
		return o, fmt.Errorf("unknown form %q: use auto, unrolled or looped", o.Form)
	case o.StepsPerCall < 0 && o.StepsPerCall != WholeRecursion:
		return o, fmt.Errorf("steps per call must be >= 0 (0: by backend) or %d (the whole recursion), got %d", WholeRecursion, o.StepsPerCall)
	case o.Prior != nil && len(o.Prior) != len(spec.States):
		return o, fmt.Errorf("prior covariance must be %d×%d", len(spec.States), len(spec.States))
	}
	return o, nil
}

// Evaluator computes log-likelihoods and gradients for one task and options. Graphs are
// compiled once per data shape and reused. It is safe for concurrent use.
type Evaluator struct {
	sym     *models.Symbolic
	task    string      // models.Digest of the task
	spec    models.Spec // the task's, with TemperatureParam last when it is fitted
	opts    Options
	backend backends.Backend
	agent   backends.Backend // where the simulated agents plan and act (graph.AgentBackend)
	prog    *graph.Program   // the unrolled form
	engine  *graph.Engine    // the looped form

	mu      sync.Mutex
	solvers map[int]*control.Solver // iLQG solvers by horizon, for LinearizeILQG
	plans   planCache               // the simulated agents' recent solutions (agentPlans)
	chunks  chunkPlanner            // EvalRows' chunk sizes on the Go backend
	kept    dataCache               // EvalRows' kept chunks (Batching.Keep)
	flat    flatGraphs              // TrialScores' graphs declared for flat chunks (FlatChunks)
	shapes  []loopedShape           // the looped form's compiled shapes (TrialScores reuses them)
	reused  scoreReuse              // TrialScores' choice between those shapes and their own
}

// New returns an Evaluator for model m on backend b.
func New(m models.Model, b backends.Backend, opts Options) (*Evaluator, error) {
	s, err := models.Derive(m)
	if err != nil {
		return nil, err
	}
	opts, err = opts.withDefaults(s.Spec)
	if err != nil {
		return nil, err
	}
	agent, err := graph.AgentBackend(b)
	if err != nil {
		return nil, err
	}
	e := &Evaluator{sym: s, task: models.Digest(m), spec: s.Spec, opts: opts, backend: b, agent: agent, solvers: map[int]*control.Solver{}}
	if opts.FitTemperature {
		e.spec.Params = append(slices.Clone(s.Spec.Params), TemperatureParam(opts.Temperature))
	}
	e.prog = graph.NewProgram(b, "loglik_"+s.Spec.Name, e.buildUnrolled)
	e.engine = graph.NewEngine(b)
	k := opts.StepsPerCall
	if k == 0 {
		k = DefaultStepsPerCall(b)
	}
	if k == WholeRecursion {
		// Forward mode has no while loops: its recursions run a step a call.
		e.engine.SetWhileLoops(!opts.ForwardGradient)
		k = math.MaxInt32
		if opts.ForwardGradient && graph.BuildsStableHLO(b) {
			k = 1
		}
	}
	e.engine.SetStepsPerCall(k)
	return e, nil
}

// Options returns the options in effect (defaults filled in).
func (e *Evaluator) Options() Options { return e.opts }

// TaskDigest returns models.Digest of the evaluator's task: what results record of it.
func (e *Evaluator) TaskDigest() string { return e.task }

// Spec returns the task's spec; with Options.FitTemperature its parameters end with the
// temperature (TemperatureParam), which θ then carries too.
func (e *Evaluator) Spec() models.Spec { return e.spec }

// TemperatureParam is the policy noise's temperature τ as a fitted (nuisance) parameter,
// with default def: log10 scale over [1e-9, 1], whose lower end is an agent without policy
// noise for every task (the noise covariance τ·H̃⁻¹ is then far below the motor noise).
func TemperatureParam(def float64) models.Param {
	return models.Param{Name: "temperature", Default: def, Lo: 1e-9, Hi: 1, Scale: models.Log10Scale,
		Doc: "τ, temperature of the maximum-causal-entropy policy noise (covariance τ·H̃⁻¹), a nuisance parameter"}
}

// Identifiable reports, for each parameter, whether the likelihood depends on it at all: the
// observation model's parameters do not matter for an agent that sees the state and plans as
// if it did, nor for the MCE baseline, which has no observation model.
func (e *Evaluator) Identifiable() []bool {
	withObs := e.opts.Method == Ours && (e.opts.Observe == control.ObservePartial || e.opts.Planner == models.PlannerPartial)
	out := make([]bool, len(e.spec.Params))
	for i := range e.sym.Spec.Params {
		out[i] = e.sym.Uses(i, withObs)
	}
	if e.opts.FitTemperature {
		out[len(out)-1] = true
	}
	return out
}

// Backend returns the evaluator's backend.
func (e *Evaluator) Backend() backends.Backend { return e.backend }

// Looped reports whether the evaluator runs its recursions looped (Options.Form).
func (e *Evaluator) Looped() bool { return e.looped() }

// Stats returns the build statistics of the form in use: for the looped form, Builds counts
// the stage and step programs and Nodes is the largest one's size.
func (e *Evaluator) Stats() graph.ProgramStats {
	if e.looped() {
		return e.engine.Stats()
	}
	return e.prog.Stats()
}

// Calls returns the number of program runs of the looped form so far.
func (e *Evaluator) Calls() int { return e.engine.Calls() }

// LinkError returns why the looped form's replays could not be linked into one program
// (graph.Engine.SetReplayPrograms; NIOC_REPLAY=program), nil if none failed.
func (e *Evaluator) LinkError() error { return e.engine.LinkError() }

// Eval returns, for each row p of d, the log-likelihood of its trials at parameters theta[p]
// (in each parameter's fitting scale: log10 or linear) summed over trials and time steps, and
// its gradient with respect to theta[p]. A log-likelihood that is not finite (for example a
// covariance that is not positive definite at that θ) is reported as −Inf, with a NaN
// gradient.
func (e *Evaluator) Eval(d *Data, theta [][]float64) (loglik []float64, grad [][]float64, err error) {
	var nominal *control.Policy
	if e.opts.Linearize == LinearizeILQG {
		if nominal, err = e.Nominal(d, theta); err != nil {
			return nil, nil, err
		}
	}
	return e.EvalAt(d, theta, nominal)
}

// EvalAt is Eval with the iLQG solution around which LinearizeILQG linearizes given instead
// of computed (see Nominal); it is ignored for LinearizeData. The gradient treats the nominal
// trajectory as fixed: it flows through the last linearization, filter and backward pass only
// (paper App. H.1), so it is the exact gradient of the likelihood at a fixed nominal.
func (e *Evaluator) EvalAt(d *Data, theta [][]float64, nominal *control.Policy) (loglik []float64, grad [][]float64, err error) {
	spec := e.spec
	p := len(spec.Params)
	rows := d.Rows // the parameter vectors, and the results: one per trial in lanes
	if d.lanes {
		rows = d.Rows * d.Trials
	}
	if len(theta) != rows {
		return nil, nil, fmt.Errorf("%d parameter vectors for %d data rows", len(theta), rows)
	}
	copies := 1 // θ entries per row: one per trial for perTrajectory, the lanes' own in lanes
	if e.perTrajectory() || d.lanes {
		copies = d.Trials
	}
	flat := make([]float64, p*d.Rows*copies)
	for r, th := range theta {
		if len(th) != p {
			return nil, nil, fmt.Errorf("parameter vector %d has %d values, task %s has %d", r, len(th), spec.Name, p)
		}
		for i, v := range th {
			if d.lanes {
				flat[i*rows+r] = v
				continue
			}
			for j := range copies {
				flat[(i*d.Rows+r)*copies+j] = v
			}
		}
	}
	n, k, T, P := len(spec.States), len(spec.Controls), d.Steps, rows
	if e.opts.Linearize == LinearizeILQG {
		if nominal == nil || nominal.Problems != P || nominal.Steps != T {
			return nil, nil, fmt.Errorf("linearize ilqg: need the iLQG solution for %d rows and %d steps", P, T)
		}
	}
	var gradFlat []float64
	if e.looped() {
		if loglik, gradFlat, err = e.evalLooped(d, flat, nominal); err != nil {
			return nil, nil, err
		}
	} else {
		inputs := []*tensors.Tensor{
			graph.NewTensor(flat, p, P, copies),
			graph.NewTensor(d.states, T+1, n, P, d.Trials),
			graph.NewTensor(d.mask, P, d.Trials),
		}
		if e.opts.Linearize == LinearizeILQG {
			inputs = append(inputs,
				graph.NewTensor(nominal.Xbar, T+1, n, P, 1), graph.NewTensor(nominal.Ubar, T, k, P, 1),
				graph.NewTensor(nominal.Gain, T, k, n, P, 1))
		}
		out, err := e.prog.Run(append(inputs, d.unrolledInputs(n)...)...)
		if err != nil {
			return nil, nil, err
		}
		loglik = out[0].Data
		if !e.opts.ValueOnly {
			gradFlat = out[1].Data
		}
		if copies > 1 {
			loglik, gradFlat = d.sumTrials(loglik, gradFlat)
		}
	}
	for r := range P {
		if math.IsNaN(loglik[r]) || math.IsInf(loglik[r], 0) {
			loglik[r] = math.Inf(-1)
		}
	}
	if e.opts.ValueOnly {
		return loglik, nil, nil
	}
	grad = make([][]float64, P)
	for r := range P {
		grad[r] = make([]float64, p)
		for i := range p {
			grad[r][i] = gradFlat[i*P+r]
			if math.IsInf(loglik[r], -1) {
				grad[r][i] = math.NaN()
			}
		}
	}
	return loglik, grad, nil
}

// Nominal solves the agent's problem by iLQG for each row's θ (fitting scale), from the mean
// initial state of the row's trials: the trajectory around which LinearizeILQG linearizes.
func (e *Evaluator) Nominal(d *Data, theta [][]float64) (*control.Policy, error) {
	spec := e.sym.Spec // the model's parameters: a fitted temperature is not the planner's
	natural := make([][]float64, len(theta))
	for r, th := range theta {
		natural[r] = make([]float64, len(spec.Params))
		for i, v := range th[:len(spec.Params)] {
			natural[r][i] = spec.Params[i].FromScale(v)
		}
	}
	solver, err := e.solverFor(d.Steps)
	if err != nil {
		return nil, err
	}
	return solver.Solve(natural, d.initial)
}

// solverFor returns the iLQG solver for horizon T, creating it once.
func (e *Evaluator) solverFor(T int) (*control.Solver, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if sv, ok := e.solvers[T]; ok {
		return sv, nil
	}
	sv, err := control.NewSolver(e.sym.Model, T, e.backend, e.opts.Solver)
	if err != nil {
		return nil, err
	}
	e.solvers[T] = sv
	return sv, nil
}
