package control

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Policy is the agent's locally optimal control law for a batch of P problems (one per
// parameter vector), as plain arrays whose last axis is the problem:
// u_t = Ubar_t + Offset_t + Gain_t·(x − Xbar_t), x the state or the belief mean.
type Policy struct {
	Problems, Steps  int // P and T
	States, Controls int
	Xbar             []float64 // [T+1][n][P]
	Ubar             []float64 // [T][k][P]
	Gain             []float64 // L: [T][k][n][P]
	Offset           []float64 // l: [T][k][P]
	Hessian          []float64 // H̃: [T][k][k][P]
	// Cost is the cost of the noise-free nominal trajectory [P]; for the partially observable
	// planner, plus the expected spread that noise and estimation errors add (see
	// Moments.ExpectedCostSpread), the objective its line search decreases.
	Cost       []float64
	CostTrace  [][]float64 // cost of the nominal after each iteration, [iteration][P]
	Iterations int
	Converged  []bool // [P]
}

// Repeat returns the solution of a single problem (Problems 1) repeated for n problems, as
// Solve would return it for n copies of the problem. It panics if p.Problems != 1.
func (p *Policy) Repeat(n int) *Policy {
	if p.Problems != 1 {
		panic(fmt.Sprintf("control: Repeat of a solution of %d problems", p.Problems))
	}
	rep := func(a []float64) []float64 {
		out := make([]float64, 0, len(a)*n)
		for _, v := range a {
			for range n {
				out = append(out, v)
			}
		}
		return out
	}
	q := *p
	q.Problems = n
	q.Xbar, q.Ubar, q.Gain, q.Offset, q.Hessian, q.Cost = rep(p.Xbar), rep(p.Ubar), rep(p.Gain), rep(p.Offset), rep(p.Hessian), rep(p.Cost)
	q.CostTrace = make([][]float64, len(p.CostTrace))
	for i, c := range p.CostTrace {
		q.CostTrace[i] = rep(c)
	}
	q.Converged = make([]bool, n)
	for i := range q.Converged {
		q.Converged[i] = p.Converged[0]
	}
	return &q
}

// Problem returns the solution of problem i alone (Problems 1): its control law and costs as
// Solve would return them for that problem alone, Iterations and the length of CostTrace the
// batch's; the policy itself when it has a single problem.
func (p *Policy) Problem(i int) *Policy {
	if i < 0 || i >= p.Problems {
		panic(fmt.Sprintf("control: problem %d of a solution of %d problems", i, p.Problems))
	}
	if p.Problems == 1 {
		return p
	}
	return p.Subset([]int{i})
}

// SolverOptions configure SolveILQG.
type SolverOptions struct {
	Planner    models.Planner // models.PlannerFull (default) or models.PlannerPartial
	MaxIter    int            // iterations; 0 means 100
	Tol        float64        // stop when the relative cost decrease is below Tol; 0 means 1e-7
	LineSearch int            // candidate step sizes 1, ½, ¼, …; 0 means 12
	Eps        float64        // regularization of H; 0 means RegularizationEps
	// Form of the backward pass's recursions: "unrolled", "looped", or "" for looped on
	// backends that compile slowly (XLA) and unrolled otherwise (see graph.Flow).
	Form string
}

func (o SolverOptions) withDefaults() SolverOptions {
	if o.Planner == "" {
		o.Planner = models.PlannerFull
	}
	if o.MaxIter == 0 {
		o.MaxIter = 100
	}
	if o.Tol == 0 {
		o.Tol = 1e-7
	}
	if o.LineSearch == 0 {
		o.LineSearch = 12
	}
	if o.Eps == 0 {
		o.Eps = RegularizationEps
	}
	return o
}

// Solver runs iLQG for one task and horizon on a backend. Its compiled graphs are reused
// across calls with the same number of problems. It is safe for concurrent use.
type Solver struct {
	sym     *models.Symbolic
	backend backends.Backend
	steps   int
	opts    SolverOptions

	once                sync.Once
	rollout, linearized *graph.Program
	engine              *graph.Engine // the looped backward pass, on backends that compile slowly
}

// NewSolver returns an iLQG solver for model m with horizon steps on backend b.
func NewSolver(m models.Model, steps int, b backends.Backend, opts SolverOptions) (*Solver, error) {
	s, err := models.Derive(m)
	if err != nil {
		return nil, err
	}
	if steps < 1 {
		return nil, fmt.Errorf("iLQG needs at least 1 step, got %d", steps)
	}
	opts = opts.withDefaults()
	if opts.Planner != models.PlannerFull && opts.Planner != models.PlannerPartial {
		return nil, fmt.Errorf("unknown planner %q: use %q or %q", opts.Planner, models.PlannerFull, models.PlannerPartial)
	}
	return &Solver{sym: s, backend: b, steps: steps, opts: opts}, nil
}

// Symbolic returns the solver's symbolic model.
func (sv *Solver) Symbolic() *models.Symbolic { return sv.sym }

// zeroPolicy returns a policy of P problems, T steps, n states and k controls whose nominal,
// gains and Hessians are all zero.
func zeroPolicy(P, T, n, k int) *Policy {
	return &Policy{Problems: P, Steps: T, States: n, Controls: k,
		Xbar: make([]float64, (T+1)*n*P), Ubar: make([]float64, T*k*P),
		Gain: make([]float64, T*k*n*P), Offset: make([]float64, T*k*P), Hessian: make([]float64, T*k*k*P)}
}

// solverPrograms holds the programs of the solvers of each backend, task (its symbolic form),
// horizon and options, which every Solver made for them shares: a fit's bootstrap and check
// make a solver per simulation, and on XLA each would otherwise compile the same programs
// again (seconds each on a CPU).
var solverPrograms sync.Map

type sharedPrograms struct {
	once                sync.Once
	rollout, linearized *graph.Program
	engine              *graph.Engine
}

func (sv *Solver) programs() {
	sv.once.Do(func() {
		key := fmt.Sprintf("%p|%p|%d|%+v", sv.backend, sv.sym, sv.steps, sv.opts)
		v, _ := solverPrograms.LoadOrStore(key, &sharedPrograms{})
		p := v.(*sharedPrograms)
		p.once.Do(func() {
			p.rollout = graph.NewProgram(sv.backend, "ilqg_rollout", sv.buildRollout)
			p.linearized = graph.NewProgram(sv.backend, "ilqg_backward", sv.buildBackward)
			p.engine = graph.NewEngine(sv.backend)
			p.engine.SetWhileLoops(true) // on XLA each rollout and backward pass is one call
		})
		sv.rollout, sv.linearized, sv.engine = p.rollout, p.linearized, p.engine
	})
}

// Builds returns the number of programs built so far for the solver's task, horizon and
// options (shared by every Solver made for them): rollouts, backward passes and their
// looped steps, one per shape.
func (sv *Solver) Builds() int {
	sv.programs()
	return sv.rollout.Stats().Builds + sv.linearized.Stats().Builds + sv.engine.Stats().Builds
}

// Solve runs iLQG for the parameter vectors theta ([P][p], natural units), starting at the
// states x0 ([P][n]; nil means the task's x0 for every problem), from a zero-control nominal
// trajectory, iterating linearization, backward pass and a batched line search on the
// feed-forward term until the relative cost decrease falls below Tol. The expected cost never
// increases between iterations.
func (sv *Solver) Solve(theta, x0 [][]float64) (*Policy, error) {
	return sv.SolveIterations(theta, x0, sv.opts.MaxIter)
}

// SolveIterations is Solve stopped after at most maxIter iterations (≥ 1) instead of the
// solver's MaxIter: an agent that has not finished planning (Policy.Converged says whether
// it had). The compiled graphs are the solver's own.
func (sv *Solver) SolveIterations(theta, x0 [][]float64, maxIter int) (*Policy, error) {
	return sv.solve(theta, x0, maxIter, nil)
}

// solve is SolveIterations, with problem p planning over horizons[p] ≤ the solver's steps
// when horizons is not nil (SolveHorizons).
func (sv *Solver) solve(theta, x0 [][]float64, maxIter int, horizons []int) (*Policy, error) {
	if maxIter < 1 {
		return nil, fmt.Errorf("iLQG needs at least 1 iteration, got %d", maxIter)
	}
	sv.programs()
	spec := sv.sym.Spec
	P, T := len(theta), sv.steps
	n, k := len(spec.States), len(spec.Controls)
	for i, th := range theta {
		if len(th) != len(spec.Params) {
			return nil, fmt.Errorf("problem %d has %d parameters, task %s has %d", i, len(th), spec.Name, len(spec.Params))
		}
	}
	if x0 != nil && len(x0) != P {
		return nil, fmt.Errorf("%d initial states for %d problems", len(x0), P)
	}
	var m *horizonMasks
	if horizons != nil {
		var err error
		if m, err = sv.masks(horizons, P); err != nil {
			return nil, err
		}
	}
	initial := make([]float64, n*P)
	for p := range P {
		init := spec.X0
		if x0 != nil {
			init = x0[p]
		}
		for i := range n {
			initial[i*P+p] = init[i]
		}
	}
	thetaT := graph.NewTensor(transpose(theta), len(spec.Params), P, 1)
	pol := zeroPolicy(P, T, n, k)
	pol.Converged = make([]bool, P)

	// Initial nominal: the zero-control rollout. Where programs compile (XLA) it runs in the
	// line search's shape, K candidates all of α = 0 (the same rollout K times), so that one
	// compiled rollout serves both.
	zero := []float64{0}
	if sv.looped() && graph.CompilesSlowly(sv.backend) {
		zero = make([]float64, sv.opts.LineSearch)
	}
	X, U, J, err := sv.runRollout(thetaT, initial, pol, zero, m)
	if err != nil {
		return nil, err
	}
	if K := len(zero); K > 1 {
		X, U, J = firstCandidate(X, (T+1)*n, P, K), firstCandidate(U, T*k, P, K), firstCandidate(J, 1, P, K)
	}
	pol.Xbar, pol.Ubar, pol.Cost = X, U, J
	pol.CostTrace = append(pol.CostTrace, slices.Clone(J))
	alphas := make([]float64, sv.opts.LineSearch)
	for i := range alphas {
		alphas[i] = math.Pow(0.5, float64(i))
	}
	done := make([]bool, P)
	for iter := 0; iter < maxIter && slices.Contains(done, false); iter++ {
		pol.Iterations = iter + 1
		if err := sv.runBackward(thetaT, pol, m); err != nil {
			return nil, err
		}
		Xc, Uc, Jc, err := sv.runRollout(thetaT, initial, pol, alphas, m)
		if err != nil {
			return nil, err
		}
		K := len(alphas)
		for p := range P {
			if done[p] {
				continue
			}
			best := -1
			for i := range K {
				if Jc[p*K+i] <= pol.Cost[p] && !math.IsNaN(Jc[p*K+i]) {
					best = i
					break
				}
			}
			if best < 0 {
				done[p], pol.Converged[p] = true, true // no step decreases the cost: a local minimum
				continue
			}
			old := pol.Cost[p]
			pol.Cost[p] = Jc[p*K+best]
			copyCandidate(pol.Xbar, Xc, (T+1)*n, P, K, p, best)
			copyCandidate(pol.Ubar, Uc, T*k, P, K, p, best)
			if old-pol.Cost[p] <= sv.opts.Tol*math.Max(math.Abs(old), 1e-12) {
				done[p], pol.Converged[p] = true, true
			}
		}
		pol.CostTrace = append(pol.CostTrace, slices.Clone(pol.Cost))
	}
	// The final control law at the final nominal trajectory.
	if err := sv.runBackward(thetaT, pol, m); err != nil {
		return nil, err
	}
	return pol, nil
}

// copyCandidate copies candidate c of problem p from src [rows][P][K] to dst [rows][P].
func copyCandidate(dst, src []float64, rows, P, K, p, c int) {
	for r := range rows {
		dst[r*P+p] = src[(r*P+p)*K+c]
	}
}

// firstCandidate returns candidate 0 of every problem of src [rows][P][K], as [rows][P].
func firstCandidate(src []float64, rows, P, K int) []float64 {
	dst := make([]float64, rows*P)
	for p := range P {
		copyCandidate(dst, src, rows, P, K, p, 0)
	}
	return dst
}

func transpose(theta [][]float64) []float64 {
	P := len(theta)
	if P == 0 {
		return nil
	}
	out := make([]float64, len(theta[0])*P)
	for p, th := range theta {
		for i, v := range th {
			out[i*P+p] = v
		}
	}
	return out
}

// runRollout rolls the current policy out with feed-forward scales alphas, returning
// X [T+1][n][P][K], U [T][k][P][K] and the costs J [P][K]; with m, each problem within its
// own horizon (looped form only).
func (sv *Solver) runRollout(thetaT *tensors.Tensor, x0 []float64, pol *Policy, alphas []float64, m *horizonMasks) (X, U, J []float64, err error) {
	P, T, n, k := pol.Problems, pol.Steps, pol.States, pol.Controls
	if sv.looped() {
		return sv.runRolloutLooped(thetaT, x0, pol, alphas, m)
	}
	out, err := sv.rollout.Run(thetaT,
		graph.NewTensor(x0, n, P, 1),
		graph.NewTensor(pol.Xbar, T+1, n, P, 1), graph.NewTensor(pol.Ubar, T, k, P, 1),
		graph.NewTensor(pol.Gain, T, k, n, P, 1), graph.NewTensor(pol.Offset, T, k, P, 1),
		graph.NewTensor(alphas, 1, len(alphas)))
	if err != nil {
		return nil, nil, nil, err
	}
	return out[0].Data, out[1].Data, out[2].Data, nil
}

func (sv *Solver) looped() bool {
	return sv.opts.Form == "looped" || (sv.opts.Form != "unrolled" && graph.CompilesSlowly(sv.backend))
}

// rolloutFlow rolls the control law (xbar, ubar, L, l per step) out from x0 with feed-forward
// scales alpha (batch [1, K]): per step the group (u_t, x_t), then x_T, and the cost of each
// candidate (for the partially observable planner, plus its expected spread). With running
// (one entry per step, positive while a problem's horizon lasts), a problem's state stays
// where its horizon ends, its control is 0 and its cost stops there, so that x_T is the state
// at its own end (SolveHorizons).
func (sv *Solver) rolloutFlow(f graph.Flow, theta, x0, alpha *graph.Value, xbar, ubar, L, l, running []*graph.Value) (ux []*graph.Value, xT, cost *graph.Value) {
	s := sv.sym
	n, k := len(s.X), len(s.U)
	init := f.Map("rollout_init", func(in [][]graph.S) [][]graph.S {
		return [][]graph.S{graph.Flatten(graph.Vec(in[0]), graph.C(0))}
	}, x0)[0]
	seqs := [][]*graph.Value{xbar[:len(ubar)], ubar, L, l}
	if running != nil {
		seqs = append(seqs, running)
	}
	final, ux := f.Scan("rollout", func(carry []graph.S, xs, ps [][]graph.S) (next, y []graph.S) {
		x, c := graph.Vec(carry[:n]), carry[n]
		Lt := graph.NewUnflattener(xs[2]).Mat(k, n)
		u := graph.VecAdd(graph.VecAdd(xs[1], graph.VecScale(ps[1][0], xs[3])), graph.MatVec(Lt, graph.VecSub(x, xs[0])))
		if running == nil {
			pt := At(s, ps[0], x, u)
			return graph.Flatten(pt.F0(), graph.Add(c, pt.Cost())), graph.Flatten(u, x)
		}
		on := graph.GreaterThan(xs[4][0], graph.C(0))
		for i := range u {
			u[i] = graph.Select(on, u[i], graph.C(0))
		}
		pt := At(s, ps[0], x, u)
		next = graph.Flatten(pt.F0(), graph.Add(c, pt.Cost()))
		for i, v := range graph.Flatten(x, c) {
			next[i] = graph.Select(on, next[i], v)
		}
		return next, graph.Flatten(u, x)
	}, init, seqs, []*graph.Value{theta, alpha}, false)
	parts := f.Map("rollout_final", func(in [][]graph.S) [][]graph.S {
		x := graph.Vec(in[0][:n])
		return [][]graph.S{x, {graph.Add(in[0][n], At(s, in[1], x, nil).FinalCost())}}
	}, final, theta)
	xT, cost = parts[0], parts[1]
	if sv.opts.Planner != models.PlannerPartial {
		return ux, xT, cost
	}
	// The partially observable agent weighs the spread that estimation errors and noise add
	// to the cost: compare candidates by their expected cost.
	split := f.MapSteps("rollout_split", func(in [][]graph.S) [][]graph.S {
		return [][]graph.S{in[0][k:], in[0][:k]}
	}, [][]*graph.Value{ux})
	X := append(split[0], xT)
	lin := LinearizeFlow(f, s, theta, X, split[1])
	mFinal, mSteps := ClosedLoopMomentsFlow(f, lin, L, MomentsInit(f, s))
	m := len(s.H0)
	moments := func(flat []graph.S, skip int) momentsState {
		u := graph.NewUnflattener(flat[skip:])
		return momentsState{Sb: u.Mat(n, n), Se: u.Mat(n, n), Sbe: u.Mat(n, n)}
	}
	spread := f.MapSteps("spread", func(in [][]graph.S) [][]graph.S {
		return [][]graph.S{{spreadStep(pointFromFlat(s, in[0]), graph.NewUnflattener(in[1]).Mat(k, n), moments(in[2], n*m))}}
	}, [][]*graph.Value{lin.Steps, L, mSteps})[0]
	terms := append([]*graph.Value{cost, lin.Final, mFinal}, spread...)
	cost = f.Map("rollout_cost", func(in [][]graph.S) [][]graph.S {
		total := graph.Add(in[0][0], spreadFinal(finalFromFlat(s, in[1]).FinalQ(), moments(in[2], 0)))
		for _, sp := range in[3:] {
			total = graph.Add(total, sp[0])
		}
		return [][]graph.S{{total}}
	}, terms...)[0]
	return ux, xT, cost
}

func (sv *Solver) buildRollout(g *G.Graph, in []*G.Node) []*G.Node {
	T, n, k := sv.steps, len(sv.sym.Spec.States), len(sv.sym.Spec.Controls)
	P, K := in[1].Shape().Dimensions[1], in[6].Shape().Dimensions[1]
	one := func(x *G.Node, lead int) *graph.Value { return graph.Values(graph.Unstack(x, lead))[0] }
	ux, xT, cost := sv.rolloutFlow(graph.Unrolled{}, one(in[0], 1), one(in[1], 1), graph.Values([]graph.S{graph.N(in[6])})[0],
		graph.SeriesValues(in[2], 2, n), graph.SeriesValues(in[3], 2, k), graph.SeriesValues(in[4], 3, k*n), graph.SeriesValues(in[5], 2, k), nil)
	var xs, us []graph.S
	for _, v := range ux {
		us = append(us, v.Scalars()[:k]...)
		xs = append(xs, v.Scalars()[k:]...)
	}
	xs = append(xs, xT.Scalars()...)
	batch := []int{P, K}
	return []*G.Node{
		graph.Stack(g, xs, []int{T + 1, n}, batch),
		graph.Stack(g, us, []int{T, k}, batch),
		graph.Materialize(g, cost.Scalars()[0], batch...),
	}
}

// runRolloutLooped is runRollout in the looped form.
func (sv *Solver) runRolloutLooped(thetaT *tensors.Tensor, x0 []float64, pol *Policy, alphas []float64, m *horizonMasks) (X, U, J []float64, err error) {
	P, T, n, k := pol.Problems, pol.Steps, pol.States, pol.Controls
	K := len(alphas)
	tp := sv.engine.NewTape(false)
	defer tp.Release()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("iLQG rollout: %v", r)
		}
	}()
	thetaFlat := tensors.MustCopyFlatData[float64](thetaT)
	flow := func(tp *graph.Tape) (ux []*graph.Value, xT, cost *graph.Value) {
		theta := tp.Input(thetaFlat, len(sv.sym.Spec.Params), []int{P, 1}, false)
		one := []int{P, 1}
		xbar, ubar := tp.Series(pol.Xbar, T+1, n, one, false), tp.Series(pol.Ubar, T, k, one, false)
		L, l := tp.Series(pol.Gain, T, k*n, one, false), tp.Series(pol.Offset, T, k, one, false)
		var running []*graph.Value
		if m != nil {
			running = tp.Series(m.running, T, 1, one, false)
		}
		return sv.rolloutFlow(tp, theta, tp.Input(x0, n, []int{P, 1}, false), tp.Input(alphas, 1, []int{1, K}, false), xbar, ubar, L, l, running)
	}
	if err := tp.Precompile(fmt.Sprintf("rollout P%d T%d K%d horizons %t", P, T, K, m != nil), func(dry *graph.Tape) { flow(dry) }); err != nil {
		return nil, nil, nil, fmt.Errorf("iLQG rollout: %w", err)
	}
	ux, xT, cost := flow(tp)
	X, U = make([]float64, (T+1)*n*P*K), make([]float64, T*k*P*K)
	for t, v := range ux {
		flat := tp.Fetch(v) // [k + n][P·K]
		copy(U[t*k*P*K:], flat[:k*P*K])
		copy(X[t*n*P*K:], flat[k*P*K:])
	}
	copy(X[T*n*P*K:], tp.Fetch(xT))
	return X, U, tp.Fetch(cost), nil
}

// runBackward linearizes around the policy's nominal trajectory and replaces its gains: one
// unrolled graph where compiling is cheap, else looped over compiled steps (graph.Flow); with
// m, each problem's backward pass starting at its own horizon (looped form only).
func (sv *Solver) runBackward(thetaT *tensors.Tensor, pol *Policy, m *horizonMasks) (err error) {
	P, T, n, k := pol.Problems, pol.Steps, pol.States, pol.Controls
	if sv.looped() {
		return sv.runBackwardLooped(thetaT, pol, m)
	}
	out, err := sv.linearized.Run(thetaT,
		graph.NewTensor(pol.Xbar, T+1, n, P, 1), graph.NewTensor(pol.Ubar, T, k, P, 1),
		graph.NewTensor(pol.Gain, T, k, n, P, 1))
	if err != nil {
		return err
	}
	pol.Gain, pol.Offset, pol.Hessian = out[0].Data, out[1].Data, out[2].Data
	return nil
}

// backwardFlow returns the gains (flat L, l, H̃ per step) of the problem linearized around
// (X, U) with parameters theta (natural units); the partially observable planner filters
// with the closed-loop Kalman gains of the previous gains Lprev, in the form of the task's
// timing (predictor form for models.ActThenSee, filter form for models.SeeThenAct: see
// ClosedLoopMomentsFlow and BackwardPassPartialFlow). ends, if set, marks where problems'
// horizons end before the last step (Linearized.Ends; the full planner's only).
func (sv *Solver) backwardFlow(f graph.Flow, theta *graph.Value, X, U, Lprev, ends []*graph.Value) []*graph.Value {
	lin := LinearizeFlow(f, sv.sym, theta, X, U)
	lin.Ends = ends
	if sv.opts.Planner != models.PlannerPartial {
		return BackwardPassFlow(f, lin, sv.opts.Eps)
	}
	_, K := ClosedLoopMomentsFlow(f, lin, Lprev, MomentsInit(f, sv.sym))
	return BackwardPassPartialFlow(f, lin, K, sv.opts.Eps)
}

func (sv *Solver) buildBackward(g *G.Graph, in []*G.Node) []*G.Node {
	T, n, k := sv.steps, len(sv.sym.Spec.States), len(sv.sym.Spec.Controls)
	P := in[1].Shape().Dimensions[2]
	theta := graph.Values(graph.Unstack(in[0], 1))[0]
	gains := GainsOf(sv.sym, sv.backwardFlow(graph.Unrolled{}, theta, graph.SeriesValues(in[1], 2, n), graph.SeriesValues(in[2], 2, k), graph.SeriesValues(in[3], 3, k*n), nil))
	var Ls, ls, Hs []graph.S
	for t := range T {
		for i := range k {
			Ls = append(Ls, gains.L[t][i]...)
			ls = append(ls, gains.l[t][i])
			Hs = append(Hs, gains.H[t][i]...)
		}
	}
	batch := []int{P, 1}
	return []*G.Node{
		graph.Stack(g, Ls, []int{T, k, n}, batch),
		graph.Stack(g, ls, []int{T, k}, batch),
		graph.Stack(g, Hs, []int{T, k, k}, batch),
	}
}

// runBackwardLooped is runBackward in the looped form.
func (sv *Solver) runBackwardLooped(thetaT *tensors.Tensor, pol *Policy, m *horizonMasks) (err error) {
	P, T, n, k := pol.Problems, pol.Steps, pol.States, pol.Controls
	tp := sv.engine.NewTape(false)
	defer tp.Release()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("iLQG backward pass: %v", r)
		}
	}()
	thetaFlat := tensors.MustCopyFlatData[float64](thetaT)
	flow := func(tp *graph.Tape) []*graph.Value {
		theta := tp.Input(thetaFlat, len(sv.sym.Spec.Params), []int{P, 1}, false)
		one := []int{P, 1}
		X, U, Lprev := tp.Series(pol.Xbar, T+1, n, one, false), tp.Series(pol.Ubar, T, k, one, false), tp.Series(pol.Gain, T, k*n, one, false)
		var ends []*graph.Value
		if m != nil {
			ends = tp.Series(m.ends, T, 1, one, false)
		}
		return sv.backwardFlow(tp, theta, X, U, Lprev, ends)
	}
	if err := tp.Precompile(fmt.Sprintf("backward P%d T%d horizons %t", P, T, m != nil), func(dry *graph.Tape) { flow(dry) }); err != nil {
		return fmt.Errorf("iLQG backward pass: %w", err)
	}
	gains := flow(tp)
	Gain, Offset, Hessian := make([]float64, T*k*n*P), make([]float64, T*k*P), make([]float64, T*k*k*P)
	for t, v := range gains {
		flat := tp.Fetch(v) // [k·n + k + k·k][P]
		copy(Gain[t*k*n*P:], flat[:k*n*P])
		copy(Offset[t*k*P:], flat[k*n*P:(k*n+k)*P])
		copy(Hessian[t*k*k*P:], flat[(k*n+k)*P:])
	}
	pol.Gain, pol.Offset, pol.Hessian = Gain, Offset, Hessian
	return nil
}
