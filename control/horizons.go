package control

import (
	"fmt"
	"math/bits"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Problems of their own horizons in one padded solve.
//
// Trials of their own length (models.HorizonTrial) make an agent that plans over each trial's
// length: one iLQG problem per horizon. Where programs compile (XLA), a solver per horizon
// compiles its rollout and backward pass again (seconds each), and so does a simulation of
// each length. SolveHorizons instead solves problems of different horizons together, padded
// to one number of steps: problem p's rollout holds its state after its horizon T_p (control
// 0, no cost), so that its final cost is paid at x_{T_p}, and its backward pass starts again
// from that final cost at step T_p − 1 (Linearized.Ends). Its steps before T_p are then those
// of a solve over T_p alone, and so are the states a simulation under it reaches by T_p,
// whatever follows (simulations are causal).

// horizonMasks are the per-step inputs of a solve whose problems end at their own horizons:
// running [T][P] is 1 while a problem's horizon lasts (t < T_p), else 0; ends [T][P] is 1 at
// t = T_p − 1 for the problems that end before the last step.
type horizonMasks struct {
	running, ends []float64
}

// masks returns the masks of horizons (one per problem, 1 ≤ T_p ≤ the solver's steps).
func (sv *Solver) masks(horizons []int, P int) (*horizonMasks, error) {
	if len(horizons) != P {
		return nil, fmt.Errorf("%d horizons for %d problems", len(horizons), P)
	}
	if !sv.looped() {
		return nil, fmt.Errorf("problems of their own horizons need the looped form")
	}
	if sv.opts.Planner != models.PlannerFull {
		return nil, fmt.Errorf("problems of their own horizons need the fully observable planner, not %q", sv.opts.Planner)
	}
	T := sv.steps
	m := &horizonMasks{running: make([]float64, T*P), ends: make([]float64, T*P)}
	for p, h := range horizons {
		if h < 1 || h > T {
			return nil, fmt.Errorf("problem %d's horizon is %d steps: it must be 1…%d", p, h, T)
		}
		for t := range h {
			m.running[t*P+p] = 1
		}
		if h < T {
			m.ends[(h-1)*P+p] = 1
		}
	}
	return m, nil
}

// SolveHorizons is SolveIterations for problems that plan over horizons of their own:
// problem p over horizons[p] steps, 1 ≤ horizons[p] ≤ the solver's steps T. Its policy has T
// steps for every problem; those of problem p before horizons[p] are the policy a solver of
// horizons[p] steps gives it (to the last bits that XLA rounds in another shape), and after
// them its nominal state stays at x_{T_p} and the rest is padding, of no meaning. Its Cost is
// the cost over its own horizon. maxIter 0 means the solver's MaxIter (Solve), else it stops
// as SolveIterations does. It needs the looped form (XLA's default) and the fully observable
// planner.
func (sv *Solver) SolveHorizons(theta, x0 [][]float64, horizons []int, maxIter int) (*Policy, error) {
	if horizons == nil {
		return nil, fmt.Errorf("SolveHorizons needs one horizon per problem")
	}
	if maxIter == 0 {
		maxIter = sv.opts.MaxIter
	}
	return sv.solve(theta, x0, maxIter, horizons)
}

// SolvesHorizons reports whether the solver can solve problems of their own horizons
// together (SolveHorizons): in the looped form, with the fully observable planner.
func (sv *Solver) SolvesHorizons() bool {
	return sv.looped() && sv.opts.Planner == models.PlannerFull
}

// SolveEachHorizon solves, for each horizon hs[i] (steps, ascending), the problems
// problems(i) returns (parameters in natural units, and initial states or nil for the task's
// x0) with solvers of m on b, each to convergence (maxIter 0) or stopped after maxIter
// iterations as SolveIterations stops, and returns each horizon's policy. Several horizons
// are solved together in one padded solve (SolveHorizons, in the looped form unless sopts asks
// for the unrolled one): every horizon's policy then has PadHorizon(longest) steps, of which
// its first h are its plan, and that solve's policy (every horizon's problems in order) is
// returned too. On XLA one solver's and one simulation's programs then serve every length of
// trial instead of a set each; on the Go backend, whose padded solve gives each horizon's
// policy to the bit (TestSolveHorizons), its calls serve them all: trials of 20 lengths, a
// default pendulum fit 0.81–0.86 against 1.09–1.14 s, reaching 3.45–3.58 against 4.61–4.78 s
// (2 cores, 2026-11-29, docs/backends.md "The simulated agents on the Go backend"). The
// padded solve takes its problems in chunks of at most horizonChunk, the same bits as one
// solve of them all, so that a population's many trials do not hold every problem's
// iterations in memory at once. For one horizon, or with a planner SolveHorizons does not
// take, each horizon has a solver of its own, and the joint policy is nil.
func SolveEachHorizon(m models.Model, b backends.Backend, sopts SolverOptions, hs []int, problems func(i int) (theta, x0 [][]float64), maxIter int) (map[int]*Policy, *Policy, error) {
	var joint *Solver
	if SolvesTogether(sopts, len(hs)) {
		jo := sopts
		if jo.Form == "" {
			jo.Form = "looped" // XLA's default, and the padded solve's form on the Go backend
		}
		sv, err := NewSolver(m, PadHorizon(hs[len(hs)-1]), b, jo)
		if err != nil {
			return nil, nil, err
		}
		if sv.SolvesHorizons() {
			joint = sv
		}
	}
	pols := map[int]*Policy{}
	if joint == nil {
		for i, h := range hs {
			sv, err := NewSolver(m, h, b, sopts)
			if err != nil {
				return nil, nil, err
			}
			theta, x0 := problems(i)
			if maxIter > 0 {
				pols[h], err = sv.SolveIterations(theta, x0, maxIter)
			} else {
				pols[h], err = sv.Solve(theta, x0)
			}
			if err != nil {
				return nil, nil, err
			}
		}
		return pols, nil, nil
	}
	var theta, x0 [][]float64
	var horizons []int
	idx := make([][]int, len(hs))
	for i, h := range hs {
		th, starts := problems(i)
		if starts != nil && len(starts) != len(th) {
			return nil, nil, fmt.Errorf("horizon %d: %d initial states for %d problems", h, len(starts), len(th))
		}
		for k := range th {
			idx[i] = append(idx[i], len(theta))
			theta, horizons = append(theta, th[k]), append(horizons, h)
			if starts != nil {
				x0 = append(x0, starts[k])
			}
		}
	}
	if x0 != nil && len(x0) != len(theta) {
		return nil, nil, fmt.Errorf("initial states for some horizons' problems and not others")
	}
	pol, err := solveInChunks(joint, theta, x0, horizons, maxIter, horizonChunk(b))
	if err != nil {
		return nil, nil, err
	}
	for i, h := range hs {
		pols[h] = pol.Subset(idx[i])
	}
	return pols, pol, nil
}

// horizonChunk returns the most problems SolveEachHorizon solves in one padded solve on b:
// every problem's iterations keep its padded trajectories, Jacobians and line-search
// candidates (about 0.45 MB a reaching problem of 56 steps), so that a population's trials of
// many lengths solved at once (1,000 subjects of 21 lengths: 21,000 problems) took 9.5 GB and
// twice the time of solves of at most this many. A variable so that tests can make it small.
var horizonChunk = func(b backends.Backend) int {
	if graph.RunsOnHost(b) {
		return 1024
	}
	return 8192
}

// solveInChunks is sv.SolveHorizons of the problems in chunks of at most c, one after another,
// their policies joined in order (joinPolicies).
func solveInChunks(sv *Solver, theta, x0 [][]float64, horizons []int, maxIter, c int) (*Policy, error) {
	if len(theta) <= c {
		return sv.SolveHorizons(theta, x0, horizons, maxIter)
	}
	var parts []*Policy
	for lo := 0; lo < len(theta); lo += c {
		hi := min(lo+c, len(theta))
		var starts [][]float64
		if x0 != nil {
			starts = x0[lo:hi]
		}
		pol, err := sv.SolveHorizons(theta[lo:hi], starts, horizons[lo:hi], maxIter)
		if err != nil {
			return nil, err
		}
		parts = append(parts, pol)
	}
	return joinPolicies(parts), nil
}

// joinPolicies returns the solution of the problems of parts (solutions of as many steps), in
// order: their control laws, costs and convergence; Iterations the most any part took, and
// each part's CostTrace held at its last iteration after it stopped.
func joinPolicies(parts []*Policy) *Policy {
	q := *parts[0]
	q.Problems, q.Iterations = 0, 0
	for _, p := range parts {
		q.Problems += p.Problems
		q.Iterations = max(q.Iterations, p.Iterations)
	}
	join := func(field func(p *Policy) []float64) []float64 {
		rows := len(field(parts[0])) / parts[0].Problems
		out := make([]float64, 0, rows*q.Problems)
		for r := range rows {
			for _, p := range parts {
				out = append(out, field(p)[r*p.Problems:(r+1)*p.Problems]...)
			}
		}
		return out
	}
	q.Xbar = join(func(p *Policy) []float64 { return p.Xbar })
	q.Ubar = join(func(p *Policy) []float64 { return p.Ubar })
	q.Gain = join(func(p *Policy) []float64 { return p.Gain })
	q.Offset = join(func(p *Policy) []float64 { return p.Offset })
	q.Hessian = join(func(p *Policy) []float64 { return p.Hessian })
	q.Cost = join(func(p *Policy) []float64 { return p.Cost })
	traces := 0
	for _, p := range parts {
		traces = max(traces, len(p.CostTrace))
	}
	q.CostTrace = make([][]float64, traces)
	for j := range q.CostTrace {
		for _, p := range parts {
			if len(p.CostTrace) == 0 {
				q.CostTrace[j] = append(q.CostTrace[j], p.Cost...)
				continue
			}
			q.CostTrace[j] = append(q.CostTrace[j], p.CostTrace[min(j, len(p.CostTrace)-1)]...)
		}
	}
	q.Converged = nil
	for _, p := range parts {
		q.Converged = append(q.Converged, p.Converged...)
	}
	return &q
}

// SolvesTogether reports whether SolveEachHorizon, with solver options sopts, solves the
// problems of the given number of distinct horizons together (and returns their joint
// policy): for more than one horizon, unless sopts asks for the unrolled form or the partially
// observable planner.
func SolvesTogether(sopts SolverOptions, horizons int) bool {
	return horizons > 1 && sopts.Form != "unrolled" && (sopts.Planner == "" || sopts.Planner == models.PlannerFull)
}

// PadHorizon returns the number of steps a solve of problems with horizons up to T runs
// (SolveHorizons), so that nearby longest horizons share compiled programs: T rounded up to a
// multiple of a quarter of the largest power of two below it, or of 8 (50 → 56, 100 → 112,
// 200 → 224; from 32 steps on at most a quarter more than T). It panics if T < 1.
func PadHorizon(T int) int {
	if T < 1 {
		panic(fmt.Sprintf("control: horizon %d", T))
	}
	step := 8
	if T > 1 {
		if q := 1 << (bits.Len(uint(T-1)) - 1) / 4; q > step {
			step = q
		}
	}
	return (T + step - 1) / step * step
}

// Subset returns the solution of the problems idx (in that order) alone, as Problem does for
// one: their control laws and costs, Iterations and the length of CostTrace the batch's. It
// panics if an index is out of range.
func (p *Policy) Subset(idx []int) *Policy {
	for _, i := range idx {
		if i < 0 || i >= p.Problems {
			panic(fmt.Sprintf("control: problem %d of a solution of %d problems", i, p.Problems))
		}
	}
	pick := func(a []float64) []float64 {
		rows := len(a) / p.Problems
		out := make([]float64, rows*len(idx))
		for r := range rows {
			for j, i := range idx {
				out[r*len(idx)+j] = a[r*p.Problems+i]
			}
		}
		return out
	}
	q := *p
	q.Problems = len(idx)
	q.Xbar, q.Ubar, q.Gain, q.Offset, q.Hessian, q.Cost = pick(p.Xbar), pick(p.Ubar), pick(p.Gain), pick(p.Offset), pick(p.Hessian), pick(p.Cost)
	q.CostTrace = make([][]float64, len(p.CostTrace))
	for j, c := range p.CostTrace {
		q.CostTrace[j] = pick(c)
	}
	q.Converged = make([]bool, len(idx))
	for j, i := range idx {
		q.Converged[j] = p.Converged[i]
	}
	return &q
}
