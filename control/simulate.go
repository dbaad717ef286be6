package control

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Observe says what the agent perceives.
type Observe string

const (
	// ObservePartial: the agent sees y = h(x, w) and acts on its EKF belief mean.
	ObservePartial Observe = "partial"
	// ObserveFull: the agent sees the state.
	ObserveFull Observe = "full"
)

// SimOptions configure Simulate.
type SimOptions struct {
	Observe     Observe // ObservePartial (default) or ObserveFull
	Trials      int     // trajectories per problem
	Seed        uint64
	Temperature float64 // maximum-causal-entropy policy noise: covariance Temperature·H̃⁻¹; 0 for none
	// Delay is a sensorimotor delay in steps, 0 or 1: with 1 the agent at step t observes
	// x_{t−1} instead of x_t (its observation y_t = h(x_{t−1}, w_t), or, observing the state,
	// its control law is applied to x_{t−1}; x_{−1} = x_0). The likelihood does not model it;
	// it is there to test robustness to agents that differ from the model.
	Delay int
	// NoFeedForward: the agent's controls leave out the feed-forward term l of the policy's
	// final backward pass, u = ū + L·(x − x̄): the noise-free optimum's controls with
	// feedback. Where motor noise depends on the control, l is the step from the noise-free
	// optimum towards the optimum of the expected cost, which the planner's line search (on
	// the noise-free cost) never takes; the JAX reference's agents shrink it to nothing
	// (docs/intervals.md, "The reference's agent"). Like Delay, it is there to simulate an
	// agent that differs from the likelihood's.
	NoFeedForward bool
	Form          string // "unrolled", "looped", or "" for looped on backends that compile slowly
	// TrialIDs, if set, are the numbers of the Trials trials (their noise streams, see
	// Simulate); nil means 0, 1, …, Trials−1.
	TrialIDs []int
	// Starts, if set, are the Trials trials' initial states (each of the task's state
	// dimension; the same for every problem): trial r starts at x_0 = Starts[r] and the
	// agent's belief at that point, as the likelihood's tracking starts at each trial's
	// observed x_0. nil means the task's x0 for every trial. The policy is planned as it was
	// (Solve's x0); only where each trial starts changes.
	Starts [][]float64
	// StartSD, if set, spreads the trials' initial states (when Starts is nil): trial r starts
	// at x_0 = x0 + StartSD ⊙ z_r, z_r standard normal from a stream of its own seeded with
	// Seed and the trial's number (DrawStarts), so the spread does not change the trial's
	// noises. One value per state of the task, natural units, 0 for a state that does not
	// spread. Like Starts, it moves only where each trial starts: the agent plans from x0
	// unless Replan (SimulateLengths, SimulateSubjects).
	StartSD []float64
	// Replan: the agent plans each trial from that trial's own initial state (one iLQG
	// solution per trial, as a subject who sees where its arm is before it moves), instead of
	// once from the task's x0. Only SimulateLengths and SimulateSubjects read it.
	Replan bool
	// PerProblem, if set, gives each problem p of a one-trial simulation (Trials 1) a trial
	// of its own: its noise stream and start are PerProblem[p]'s (ProblemTrial). A replanning
	// agent's plans, a trial each, simulate so; and so do the problems of several horizons'
	// trials in one simulation (likelihood's agents on the Go backend).
	PerProblem []ProblemTrial
	// firstProblem numbers the problems in messages from it on (a call of
	// simulateProblemsInCalls).
	firstProblem int
}

// ProblemTrial is the trial a problem of a one-trial simulation simulates (SimOptions'
// PerProblem): trial Trial of problem Problem of a simulation seeded with Seed, whose noises
// it has, starting at X0 (the task's state dimension).
type ProblemTrial struct {
	Seed           uint64
	Problem, Trial int
	X0             []float64
}

// startsSalt separates the stream of a trial's initial state (DrawStarts) from that of its
// noises, which share Seed and the trial's number.
const startsSalt = 0x5fa7_57a2_75ee_d001

// DrawStarts returns the initial states of the trials numbered ids of an agent seeded with
// seed: x0 + sd ⊙ z_r ([len(ids)][n], natural units), z_r standard normal from a PCG stream of
// seed and trial r's number alone. With sd nil every trial starts at x0. It panics if sd is
// set and its length is not that of x0.
func DrawStarts(x0, sd []float64, seed uint64, ids []int) [][]float64 {
	if sd != nil && len(sd) != len(x0) {
		panic(fmt.Sprintf("control: %d start spreads for %d states", len(sd), len(x0)))
	}
	out := make([][]float64, len(ids))
	for j, id := range ids {
		x := slices.Clone(x0)
		if sd != nil {
			rng := rand.New(rand.NewPCG(seed^startsSalt, uint64(id)))
			for i := range x {
				x[i] += sd[i] * rng.NormFloat64()
			}
		}
		out[j] = x
	}
	return out
}

// checkStartSD returns an error unless opts.StartSD is nil or a finite spread >= 0 for each
// state of spec.
func (opts SimOptions) checkStartSD(spec models.Spec) error {
	if opts.StartSD == nil {
		return nil
	}
	if len(opts.StartSD) != len(spec.States) {
		return fmt.Errorf("%d start spreads, task %s has %d states", len(opts.StartSD), spec.Name, len(spec.States))
	}
	for i, sd := range opts.StartSD {
		if !(sd >= 0) || math.IsInf(sd, 0) {
			return fmt.Errorf("start spread of %s is %g: it must be finite and >= 0", spec.States[i], sd)
		}
	}
	return nil
}

// trialIDs returns the numbers of opts' trials: opts.TrialIDs, or 0, 1, …, Trials−1.
func (opts SimOptions) trialIDs() []int {
	if opts.TrialIDs != nil {
		return opts.TrialIDs
	}
	ids := make([]int, opts.Trials)
	for r := range ids {
		ids[r] = r
	}
	return ids
}

// Simulate runs an agent that follows pol (one control law per problem) in the stochastic
// system, Trials times per problem, and returns the states [P][trials][T+1][n]. With partial
// observability the agent observes y_t = h(x_t, w_t) and updates its belief with the extended
// Kalman filter b_{t+1} = f(b_t, u_t, 0) + K_t·(y_t − h(b_t, 0)),
// K_t = A P Fᵀ (F P Fᵀ + W Wᵀ)⁻¹, P ← V Vᵀ + (A − K F) P Aᵀ, linearized at the belief
// (paper Sec. 2.4), starting from the task's initial belief covariance at the trial's initial
// state; its control is the policy applied to b_t. Under the task's timing models.SeeThenAct it sees x_{t+1} after each step
// and updates before it acts (FilterUpdateStep: b_{t+1} = b⁻ + K·(y − h(b⁻, 0)),
// b⁻ = f(b_t, u_t, 0), linearized at b_t and b⁻). The trajectories start at opts.Starts (by default the task's x0). Noises come from a PCG generator
// seeded with Seed and the problem and trial numbers, so a trial's trajectory does not depend
// on how many others are simulated with it. If some problems diverge, it returns every
// trajectory and a *DivergedError naming them.
func Simulate(m models.Model, pol *Policy, theta [][]float64, b backends.Backend, opts SimOptions) ([][][][]float64, error) {
	s, err := models.Derive(m)
	if err != nil {
		return nil, err
	}
	if opts.Observe == "" {
		opts.Observe = ObservePartial
	}
	if opts.Observe != ObservePartial && opts.Observe != ObserveFull {
		return nil, fmt.Errorf("unknown observation mode %q: use %q or %q", opts.Observe, ObservePartial, ObserveFull)
	}
	if opts.Trials < 1 {
		return nil, fmt.Errorf("trials must be >= 1, got %d", opts.Trials)
	}
	if opts.Temperature < 0 {
		return nil, fmt.Errorf("temperature must be >= 0, got %g", opts.Temperature)
	}
	if opts.Delay != 0 && opts.Delay != 1 {
		return nil, fmt.Errorf("delay must be 0 or 1 steps, got %d", opts.Delay)
	}
	if opts.PerProblem != nil && (len(opts.PerProblem) != pol.Problems || opts.Trials != 1) {
		return nil, fmt.Errorf("simulate: %d problems' trials for a policy of %d problems and %d trials each", len(opts.PerProblem), pol.Problems, opts.Trials)
	}
	for p, pt := range opts.PerProblem {
		if len(pt.X0) != len(s.Spec.States) {
			return nil, fmt.Errorf("simulate: problem %d's initial state has %d values, task %s has %d states", p, len(pt.X0), s.Spec.Name, len(s.Spec.States))
		}
	}
	if opts.TrialIDs != nil && len(opts.TrialIDs) != opts.Trials {
		return nil, fmt.Errorf("%d trial numbers for %d trials", len(opts.TrialIDs), opts.Trials)
	}
	if opts.StartSD != nil {
		if err := opts.checkStartSD(s.Spec); err != nil {
			return nil, err
		}
		if opts.Starts == nil {
			opts.Starts = DrawStarts(s.Spec.X0, opts.StartSD, opts.Seed, opts.trialIDs())
		}
	}
	if opts.Starts != nil {
		if len(opts.Starts) != opts.Trials {
			return nil, fmt.Errorf("%d initial states for %d trials", len(opts.Starts), opts.Trials)
		}
		for r, x := range opts.Starts {
			if len(x) != len(s.Spec.States) {
				return nil, fmt.Errorf("trial %d's initial state has %d values, task %s has %d states", r, len(x), s.Spec.Name, len(s.Spec.States))
			}
			for i, v := range x {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("trial %d's initial state %s is %g", r, s.Spec.States[i], v)
				}
			}
		}
	}
	if opts.PerProblem != nil && len(opts.PerProblem) > simulationChunk && !graph.CompilesSlowly(b) {
		return simulateProblemsInCalls(m, pol, theta, b, opts)
	}
	if opts.NoFeedForward {
		q := *pol
		q.Offset = make([]float64, len(pol.Offset))
		pol = &q
	}
	spec := s.Spec
	P, M, T := pol.Problems, opts.Trials, pol.Steps
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	if len(theta) != P {
		return nil, fmt.Errorf("simulate: %d parameter vectors for a policy of %d problems", len(theta), P)
	}
	v := make([]float64, T*nv*P*M)
	w := make([]float64, T*nw*P*M)
	xi := make([]float64, T*k*P*M)
	for p := range P {
		for r := range M {
			id := r
			if opts.TrialIDs != nil {
				id = opts.TrialIDs[r]
			}
			seed, stream := opts.Seed, uint64(p)<<32|uint64(id)
			if opts.PerProblem != nil {
				pt := opts.PerProblem[p]
				seed, stream = pt.Seed, uint64(pt.Problem)<<32|uint64(pt.Trial)
			}
			rng := rand.New(rand.NewPCG(seed, stream))
			for t := range T {
				for i := range nv {
					v[((t*nv+i)*P+p)*M+r] = rng.NormFloat64()
				}
				for i := range nw {
					w[((t*nw+i)*P+p)*M+r] = rng.NormFloat64()
				}
				for i := range k {
					xi[((t*k+i)*P+p)*M+r] = rng.NormFloat64()
				}
			}
		}
	}
	if opts.Temperature == 0 {
		// One simulation program serves agents with policy noise and without: a noise-free
		// agent runs the temperature-1 program with ξ = 0 and H̃ = I, whose noise term is then
		// exactly zero (u + 1·0 = u), so that a fit's bootstrap, which simulates both kinds,
		// compiles one program instead of two (seconds each on XLA). ξ was drawn all the same:
		// the state and observation noises stay those of the same seed.
		clear(xi)
		pol = withIdentityHessians(pol)
		opts.Temperature = 1
	}
	x0 := make([]float64, n*P*M) // [n][P][M]
	for i := range n {
		for p := range P {
			for r := range M {
				x := spec.X0
				if opts.Starts != nil {
					x = opts.Starts[r]
				}
				if opts.PerProblem != nil {
					x = opts.PerProblem[p].X0
				}
				x0[(i*P+p)*M+r] = x[i]
			}
		}
	}
	var X []float64 // [T+1][n][P][M]
	if opts.Form == "looped" || (opts.Form != "unrolled" && graph.CompilesSlowly(b)) {
		switch {
		case graph.CompilesSlowly(b) && opts.PerProblem != nil:
			X, err = simulateProblemChunks(SimChunk(b, P), b, s, theta, pol, x0, v, w, xi, opts)
		case graph.CompilesSlowly(b):
			X, err = simulateInChunks(SimChunk(b, M), b, s, theta, pol, x0, v, w, xi, M, opts)
		default:
			X, err = simulateLooped(b, s, theta, pol, x0, v, w, xi, M, opts)
		}
		if err != nil {
			return nil, err
		}
	} else {
		out, err := simProgram(b, s, T, opts).Run(
			graph.NewTensor(transpose(theta), len(spec.Params), P, 1),
			graph.NewTensor(pol.Xbar, T+1, n, P, 1), graph.NewTensor(pol.Ubar, T, k, P, 1),
			graph.NewTensor(pol.Gain, T, k, n, P, 1), graph.NewTensor(pol.Offset, T, k, P, 1),
			graph.NewTensor(pol.Hessian, T, k, k, P, 1),
			graph.NewTensor(v, T, nv, P, M), graph.NewTensor(w, T, nw, P, M), graph.NewTensor(xi, T, k, P, M),
			graph.NewTensor(x0, n, P, M))
		if err != nil {
			return nil, err
		}
		X = out[0].Data
	}
	res := make([][][][]float64, P)
	for p := range P {
		res[p] = make([][][]float64, M)
		for r := range M {
			res[p][r] = make([][]float64, T+1)
			for t := range T + 1 {
				res[p][r][t] = make([]float64, n)
				for i := range n {
					res[p][r][t][i] = X[((t*n+i)*P+p)*M+r]
				}
			}
		}
	}
	var div *DivergedError
	for p := range P {
	trials:
		for r := range M {
			for t := range T + 1 {
				for i := range n {
					if x := res[p][r][t][i]; math.IsNaN(x) || math.IsInf(x, 0) {
						if div == nil {
							div = &DivergedError{First: fmt.Sprintf("problem %d trial %d diverged at t = %d (state %s is %g)", opts.firstProblem+p, r, t, spec.States[i], x)}
						}
						div.Problems = append(div.Problems, p)
						break trials
					}
				}
			}
		}
	}
	if div != nil {
		return res, div
	}
	return res, nil
}

// simulationChunk is the most problems of one trial each (SimOptions.PerProblem) that
// Simulate runs in one graph on a backend that compiles quickly: a population's 50,000 trials
// at once would hold each one's noises, plan and states several times over (1,000 reaching
// subjects of 21 lengths: 2.9 GB, 1.6 GB in calls of this many). XLA runs such problems in
// chunks of its own (simulateProblemChunks). A variable so that tests can make it small.
var simulationChunk = 4096

// simulateProblemsInCalls is Simulate of a simulation of one trial per problem (PerProblem)
// in calls of at most simulationChunk problems, their trajectories in order and a
// *DivergedError naming every call's diverging problems; every trajectory is the one a call
// of all problems gives, to the bit on the Go backend.
func simulateProblemsInCalls(m models.Model, pol *Policy, theta [][]float64, b backends.Backend, opts SimOptions) ([][][][]float64, error) {
	var (
		xs  [][][][]float64
		div *DivergedError
	)
	for lo := 0; lo < pol.Problems; lo += simulationChunk {
		hi := min(lo+simulationChunk, pol.Problems)
		idx := make([]int, hi-lo)
		for q := range idx {
			idx[q] = lo + q
		}
		o := opts
		o.PerProblem, o.firstProblem = opts.PerProblem[lo:hi], lo
		part, err := Simulate(m, pol.Subset(idx), theta[lo:hi], b, o)
		var d *DivergedError
		if errors.As(err, &d) {
			if div == nil {
				div = &DivergedError{First: d.First}
			}
			for _, q := range d.Problems {
				div.Problems = append(div.Problems, lo+q)
			}
		} else if err != nil {
			return nil, err
		}
		xs = append(xs, part...)
	}
	if div != nil {
		return xs, div
	}
	return xs, nil
}

// DivergedError reports problems whose simulated states became infinite or NaN (an agent
// that loses control, e.g. a cart-pole with large motor noise and a small control cost).
// Simulate returns it together with all trajectories; those of other problems are valid.
type DivergedError struct {
	Problems []int  // the problems (indices into theta) with a diverging trial, ascending
	First    string // where the first one diverged
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("simulation diverged for %d problem(s); first: %s", len(e.Problems), e.First)
}

// simulationFlow runs the agent of Simulate from the initial states x0 (one per trial): per
// step, the control law (xbar, ubar, gains as flat L, l, H̃) and the standard normal noises v
// (state), w (observation) and xi (policy); it returns x_1, …, x_T.
func simulationFlow(f graph.Flow, s *models.Symbolic, theta, x0 *graph.Value, xbar, ubar, gains, v, w, xi []*graph.Value, opts SimOptions) []*graph.Value {
	spec := s.Spec
	n := len(spec.States)
	partial := opts.Observe == ObservePartial
	seeFirst := spec.ObservationTiming() == models.SeeThenAct
	start := f.Map("simulate_init", func(in [][]graph.S) [][]graph.S {
		x0 := in[0]
		init := x0
		if partial { // the belief mean and its covariance
			init = graph.Flatten(init, x0, graph.ConstMat(spec.InitialBeliefCov()))
		}
		if opts.Delay == 1 { // the state the agent senses: the previous one (act-then-see)
			init = graph.Flatten(init, x0)
		}
		return [][]graph.S{init}
	}, x0)[0]
	_, xs := f.Scan("simulate", func(carry []graph.S, in, ps [][]graph.S) (next, y []graph.S) {
		c := graph.NewUnflattener(carry)
		x := c.Vec(n)
		acting := x
		var belief graph.Vec
		var cov graph.Mat
		if partial {
			belief, cov = c.Vec(n), c.Mat(n, n)
			acting = belief
		}
		sensed := x
		if opts.Delay == 1 {
			sensed = c.Vec(n)
			if !partial {
				acting = sensed
			}
		}
		L, l, H := StepGains(s, in[2])
		u := graph.VecAdd(graph.VecAdd(in[1], l), graph.MatVec(L, graph.VecSub(acting, in[0])))
		if opts.Temperature > 0 {
			// Noise with covariance temperature·H̃⁻¹: √temperature·Lh⁻ᵀξ with H̃ = Lh·Lhᵀ.
			noise := graph.SolveLowerT(graph.Chol(H), graph.Col(in[5])).ColVec(0)
			u = graph.VecAdd(u, graph.VecScale(graph.C(math.Sqrt(opts.Temperature)), noise))
		}
		theta := ps[0]
		if partial && !seeFirst {
			y := At(s, theta, sensed, nil).Observation(in[4])
			pb := At(s, theta, belief, u)
			var K graph.Mat
			K, cov = kalmanStep(pb.A(), pb.F(), graph.Gram(pb.W()), graph.Gram(pb.V()), cov)
			belief = graph.VecAdd(pb.F0(), graph.MatVec(K, graph.VecSub(y, pb.H0())))
		}
		prev := x
		x = At(s, theta, x, u).Dynamics(in[3])
		if partial && seeFirst { // it sees x_{t+1} (x_t with a delay) before it acts again
			if opts.Delay == 0 {
				sensed = x
			}
			y := At(s, theta, sensed, nil).Observation(in[4])
			pb := At(s, theta, belief, u)
			pred := pb.F0()
			pn := At(s, theta, pred, u)
			var K graph.Mat
			K, cov = FilterUpdateStep(pb, pn, cov, nil)
			belief = graph.VecAdd(pred, graph.MatVec(K, graph.VecSub(y, pn.H0())))
		}
		next = graph.Flatten(x)
		if partial {
			next = graph.Flatten(x, belief, cov)
		}
		if opts.Delay == 1 {
			next = graph.Flatten(next, prev)
		}
		return next, x
	}, start, [][]*graph.Value{xbar[:len(ubar)], ubar, gains, v, w, xi}, []*graph.Value{theta}, false)
	return xs
}

func buildSimulation(g *G.Graph, s *models.Symbolic, in []*G.Node, T int, opts SimOptions) []*G.Node {
	spec := s.Spec
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	L, l, H := graph.SeriesValues(in[3], 3, k*n), graph.SeriesValues(in[4], 2, k), graph.SeriesValues(in[5], 3, k*k)
	gains := make([]*graph.Value, T)
	for t := range T {
		gains[t] = graph.Values(graph.Flatten(graph.Vec(L[t].Scalars()), graph.Vec(l[t].Scalars()), graph.Vec(H[t].Scalars())))[0]
	}
	x0 := graph.Values(graph.Unstack(in[9], 1))[0]
	xs := simulationFlow(graph.Unrolled{}, s, graph.Values(graph.Unstack(in[0], 1))[0], x0, graph.SeriesValues(in[1], 2, n), graph.SeriesValues(in[2], 2, k),
		gains, graph.SeriesValues(in[6], 2, nv), graph.SeriesValues(in[7], 2, nw), graph.SeriesValues(in[8], 2, k), opts)
	all := slices.Clone(x0.Scalars())
	for _, x := range xs {
		all = append(all, x.Scalars()...)
	}
	return []*G.Node{graph.Stack(g, all, []int{T + 1, n}, in[6].Shape().Dimensions[2:])}
}

// withIdentityHessians returns a copy of pol whose H̃ is the identity at every step and
// problem (its layout [T][k][k][P]); the rest is shared with pol.
func withIdentityHessians(pol *Policy) *Policy {
	q := *pol
	P, k := pol.Problems, pol.Controls
	q.Hessian = make([]float64, len(pol.Hessian))
	for t := range pol.Steps {
		for i := range k {
			for p := range P {
				q.Hessian[((t*k+i)*k+i)*P+p] = 1
			}
		}
	}
	return &q
}
