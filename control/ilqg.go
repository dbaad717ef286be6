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

// SolverOptions configure SolveILQG.
type SolverOptions struct {
	Planner    models.Planner // models.PlannerFull (default) or models.PlannerPartial
	MaxIter    int            // iterations; 0 means 100
	Tol        float64        // stop when the relative cost decrease is below Tol; 0 means 1e-7
	LineSearch int            // candidate step sizes 1, ½, ¼, …; 0 means 12
	Eps        float64        // regularization of H; 0 means RegularizationEps
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

func (sv *Solver) programs() {
	sv.once.Do(func() {
		sv.rollout = graph.NewProgram(sv.backend, "ilqg_rollout", sv.buildRollout)
		sv.linearized = graph.NewProgram(sv.backend, "ilqg_backward", sv.buildBackward)
	})
}

// Solve runs iLQG for the parameter vectors theta ([P][p], natural units), starting at the
// states x0 ([P][n]; nil means the task's x0 for every problem), from a zero-control nominal
// trajectory, iterating linearization, backward pass and a batched line search on the
// feed-forward term until the relative cost decrease falls below Tol. The expected cost never
// increases between iterations.
func (sv *Solver) Solve(theta, x0 [][]float64) (*Policy, error) {
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
	pol := &Policy{Problems: P, Steps: T, States: n, Controls: k,
		Xbar: make([]float64, (T+1)*n*P), Ubar: make([]float64, T*k*P),
		Gain: make([]float64, T*k*n*P), Offset: make([]float64, T*k*P), Hessian: make([]float64, T*k*k*P),
		Converged: make([]bool, P)}

	// Initial nominal: the zero-control rollout.
	X, U, J, err := sv.runRollout(thetaT, initial, pol, []float64{0})
	if err != nil {
		return nil, err
	}
	pol.Xbar, pol.Ubar, pol.Cost = X, U, J
	pol.CostTrace = append(pol.CostTrace, slices.Clone(J))
	alphas := make([]float64, sv.opts.LineSearch)
	for i := range alphas {
		alphas[i] = math.Pow(0.5, float64(i))
	}
	done := make([]bool, P)
	for iter := 0; iter < sv.opts.MaxIter && slices.Contains(done, false); iter++ {
		pol.Iterations = iter + 1
		if err := sv.runBackward(thetaT, pol); err != nil {
			return nil, err
		}
		Xc, Uc, Jc, err := sv.runRollout(thetaT, initial, pol, alphas)
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
	if err := sv.runBackward(thetaT, pol); err != nil {
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
// X [T+1][n][P][K], U [T][k][P][K] and the costs J [P][K].
func (sv *Solver) runRollout(thetaT *tensors.Tensor, x0 []float64, pol *Policy, alphas []float64) (X, U, J []float64, err error) {
	P, T, n, k := pol.Problems, pol.Steps, pol.States, pol.Controls
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

func (sv *Solver) buildRollout(g *G.Graph, in []*G.Node) []*G.Node {
	theta := graph.Unstack(in[0], 1)
	x := graph.Vec(graph.Unstack(in[1], 1))
	T, n, k := sv.steps, len(sv.sym.Spec.States), len(sv.sym.Spec.Controls)
	xbar := graph.Series(graph.Unstack(in[2], 2), T+1, n)
	ubar := graph.Series(graph.Unstack(in[3], 2), T, k)
	L := graph.MatSeries(graph.Unstack(in[4], 3), T, k, n)
	l := graph.Series(graph.Unstack(in[5], 2), T, k)
	alpha := graph.N(in[6])
	P, K := in[1].Shape().Dimensions[1], in[6].Shape().Dimensions[1]
	X, U := []graph.Vec{x}, make([]graph.Vec, T)
	cost := graph.C(0)
	for t := range T {
		u := graph.VecAdd(graph.VecAdd(ubar[t], graph.VecScale(alpha, l[t])), graph.MatVec(L[t], graph.VecSub(x, xbar[t])))
		pt := At(sv.sym, theta, x, u)
		cost = graph.Add(cost, pt.Cost())
		x = pt.F0()
		X, U[t] = append(X, x), u
	}
	tr := Linearize(sv.sym, theta, X, U)
	cost = graph.Add(cost, tr.Final.FinalCost())
	if sv.opts.Planner == models.PlannerPartial {
		// The partially observable agent weighs the spread that estimation errors and noise
		// add to the cost: compare candidates by their expected cost.
		mo := ClosedLoopMoments(tr, L, graph.ConstMat(sv.sym.Spec.InitialBeliefCov()))
		cost = graph.Add(cost, mo.ExpectedCostSpread(tr, L))
	}
	var xs, us []graph.S
	for _, v := range X {
		xs = append(xs, v...)
	}
	for _, v := range U {
		us = append(us, v...)
	}
	batch := []int{P, K}
	return []*G.Node{
		graph.Stack(g, xs, []int{T + 1, n}, batch),
		graph.Stack(g, us, []int{T, k}, batch),
		graph.Materialize(g, cost, batch...),
	}
}

// runBackward linearizes around the policy's nominal trajectory and replaces its gains.
func (sv *Solver) runBackward(thetaT *tensors.Tensor, pol *Policy) error {
	P, T, n, k := pol.Problems, pol.Steps, pol.States, pol.Controls
	out, err := sv.linearized.Run(thetaT,
		graph.NewTensor(pol.Xbar, T+1, n, P, 1), graph.NewTensor(pol.Ubar, T, k, P, 1),
		graph.NewTensor(pol.Gain, T, k, n, P, 1))
	if err != nil {
		return err
	}
	pol.Gain, pol.Offset, pol.Hessian = out[0].Data, out[1].Data, out[2].Data
	return nil
}

func (sv *Solver) buildBackward(g *G.Graph, in []*G.Node) []*G.Node {
	theta := graph.Unstack(in[0], 1)
	T, n, k := sv.steps, len(sv.sym.Spec.States), len(sv.sym.Spec.Controls)
	X := graph.Series(graph.Unstack(in[1], 2), T+1, n)
	U := graph.Series(graph.Unstack(in[2], 2), T, k)
	P := in[1].Shape().Dimensions[2]
	tr := Linearize(sv.sym, theta, X, U)
	var gains Gains
	if sv.opts.Planner == models.PlannerPartial {
		Lprev := graph.MatSeries(graph.Unstack(in[3], 3), T, k, n)
		K := FilterGainsPartial(tr, Lprev, graph.ConstMat(sv.sym.Spec.InitialBeliefCov()))
		gains = BackwardPassPartial(tr, K, sv.opts.Eps)
	} else {
		gains = BackwardPass(tr, sv.opts.Eps)
	}
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
