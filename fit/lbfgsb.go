// L-BFGS-B: limited-memory quasi-Newton minimization subject to box constraints.
//
// This file implements the algorithm of
//
//	[BLNZ] R. H. Byrd, P. Lu, J. Nocedal and C. Zhu, "A limited memory algorithm
//	       for bound constrained optimization", SIAM J. Sci. Comput. 16(5),
//	       pp. 1190–1208, 1995,
//
// with the subspace-minimization refinement of
//
//	[MN]   J. L. Morales and J. Nocedal, "Remark on Algorithm 778: L-BFGS-B",
//	       ACM Trans. Math. Softw. 38(1), 2011,
//
// i.e. version 3.0 of the reference Fortran code, which is what scipy's
// minimize(method="L-BFGS-B") runs. The line search is the one of
//
//	[MT]   J. J. Moré and D. J. Thuente, "Line search algorithms with guaranteed
//	       sufficient decrease", ACM Trans. Math. Softw. 20(3), pp. 286–307, 1994
//
// (MINPACK-2 routines dcsrch and dcstep), safeguarded so that every trial point
// lies in the box.
//
// The problem sizes this package deals with are small (a handful to a few tens
// of parameters), so the code favours plain slices and clarity over the
// workspace juggling of the reference implementation. Everything is local to
// one call of LBFGSB: there is no package-level mutable state, so any number
// of minimizations may run concurrently.
//
// With finite objective values and no limits reached, the iterates follow the
// reference code: on the problems in the tests the iteration and evaluation
// counts equal scipy's. The deliberate differences are:
//
//   - a correction pair is skipped when s'y <= ε y'y, the test stated in
//     [BLNZ] (the Fortran code tests s'y <= ε (−g's) instead);
//   - non-finite objective values are backtracked from (see lineSearch);
//   - a line search that ends with a Moré–Thuente warning at a point that
//     does not lower f does not accept that point;
//   - the reduced Hessian of the subspace problem is formed and
//     Cholesky-factored instead of applying the Sherman–Morrison–Woodbury
//     formula (same result up to rounding);
//   - trial points are clamped into the box to guard against rounding;
//   - MaxEval is a hard cap on the number of objective evaluations.

package fit

import (
	"fmt"
	"math"
	"slices"
)

// Objective returns f(x) and its gradient at x. A non-nil error aborts the
// minimization (used for cancellation); the error is returned in
// LBFGSBResult.Err.
//
// f may be +Inf or NaN (e.g. a likelihood that is not finite there): LBFGSB
// treats any non-finite f (±Inf or NaN), or a gradient with a non-finite
// component, as a failed trial point and backtracks, never as a crash. When f is not finite the
// gradient is ignored and may be nil; otherwise it must have len(x) elements.
//
// LBFGSB passes a fresh copy of x to every call and copies the returned
// gradient, so an objective may retain x and may reuse its gradient buffer.
type Objective func(x []float64) (f float64, grad []float64, err error)

// LBFGSBSettings controls LBFGSB. The zero value selects scipy's defaults;
// a zero or negative field means "use the default".
type LBFGSBSettings struct {
	Memory  int     // correction pairs m; 0 means 10
	MaxIter int     // iterations; 0 means 15000 (scipy's default)
	MaxEval int     // objective evaluations; 0 means 15000
	PGTol   float64 // stop when max_i |proj grad_i| <= PGTol; 0 means 1e-5 (scipy's gtol)
	FTol    float64 // stop when (f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= FTol; 0 means 2.220446049250313e-09 (scipy's ftol)
	// Curvature, if set, is an estimate of the objective's Hessian near the starting point
	// (n×n, symmetric, finite; e.g. that of a minimization of a similar objective that ended
	// nearby). The memory then starts from it instead of from the identity: its eigenvectors
	// of positive curvature (eigenvalue above 1e-10 of the largest) become the first
	// correction pairs, s = v, y = λv, so that B equals Curvature on them (they are mutually
	// conjugate, and BFGS keeps every earlier pair's secant equation for conjugate pairs) and
	// the largest such λ elsewhere, and the first step is a projected Newton step. Real pairs
	// replace them as the memory fills (lbfgsMemory.seed). Where the FTol test would stop the
	// run while seeded pairs remain, they are dropped and the run goes on: a wrong estimate
	// can make steps short, and the stop is then the steps' own curvature's to call. It
	// panics if Curvature is not n×n or not finite.
	Curvature [][]float64
	// OnIteration, if set, is called with the minimization's state at every iteration
	// boundary: after the evaluation of the starting point and after every iteration (and
	// after the memory was discarded). LBFGSBFrom continues from such a state exactly as the
	// run that produced it goes on. The state is the callee's to keep.
	OnIteration func(LBFGSBState)
}

// LBFGSBResult is the outcome of LBFGSB. X, F and Grad always describe the same
// point, which lies in the box; it is the best point accepted by the algorithm
// (for the "evaluation limit" status it may also be a better trial point of the
// interrupted line search).
type LBFGSBResult struct {
	X           []float64
	F           float64
	Grad        []float64
	Iterations  int
	Evaluations int
	Converged   bool   // true when a PGTol or FTol criterion stopped it
	Status      string // human readable: "projected gradient below tolerance", "relative reduction of f below tolerance", "iteration limit", "evaluation limit", "line search failed", "initial point not finite", "aborted: ..."
	Err         error  // set only when the objective returned an error
}

// Status strings reported in LBFGSBResult.Status. An aborted run reports
// statusAbortedPrefix followed by the objective's error message.
const (
	statusPGTol          = "projected gradient below tolerance"
	statusFTol           = "relative reduction of f below tolerance"
	statusMaxIter        = "iteration limit"
	statusMaxEval        = "evaluation limit"
	statusLineSearch     = "line search failed"
	statusInitNotFinite  = "initial point not finite"
	statusAbortedPrefix  = "aborted: "
	defaultMemory        = 10
	defaultMaxIter       = 15000
	defaultMaxEval       = 15000
	defaultPGTol         = 1e-5
	defaultFTol          = 2.220446049250313e-09
	machineEpsilon       = 2.220446049250313e-16 // epsmch of the reference code
	lsFTol               = 1e-3                  // sufficient-decrease parameter of the line search (lnsrlb)
	lsGTol               = 0.9                   // curvature parameter of the line search
	lsXTol               = 0.1                   // relative interval-width tolerance of the line search
	lsMaxTrials          = 20                    // finite trial points per line search (scipy's maxls)
	lsMaxNonFinite       = 60                    // halvings after non-finite values per line search (2^-60 ≈ 1e-18)
	lsBigStep            = 1e10                  // step cap when no bound limits the step ("big" in lnsrlb)
	mtExtrapolationLower = 1.1                   // xtrapl of dcsrch
	mtExtrapolationUpper = 4.0                   // xtrapu of dcsrch
)

// LBFGSB minimizes fn over the box lo <= x <= hi (use math.Inf(±1) for an unbounded side).
// x0 is projected onto the box first. It panics if the slices' lengths differ or lo > hi somewhere.
//
// It also panics if fn is nil, if a bound is NaN, if lo[i] = +Inf or
// hi[i] = -Inf (an empty box), or if fn returns a finite f together with a
// gradient whose length is not len(x0); all of these are programming errors.
//
// The objective is only ever evaluated at points inside the box, and a
// variable with lo[i] == hi[i] is held fixed at that value. Non-finite
// objective values make the line search halve its step (up to 60 times per
// line search) and are never accepted; if no acceptable point can be found
// the memory is discarded and a projected-gradient step is tried before the
// run stops with status "line search failed". A non-finite value at the
// (projected) starting point stops the run at once with status
// "initial point not finite".
//
// MaxEval is a hard cap: the objective is never called more than MaxEval
// times (scipy checks its maxfun only between iterations and may overshoot).
// When both a convergence test and the iteration limit are met by the same
// iterate, the convergence status is reported.
func LBFGSB(fn Objective, x0, lo, hi []float64, s LBFGSBSettings) LBFGSBResult {
	if fn == nil {
		panic("fit: LBFGSB: nil objective")
	}
	n := len(x0)
	if len(lo) != n || len(hi) != n {
		panic(fmt.Sprintf("fit: LBFGSB: slice lengths differ: len(x0)=%d, len(lo)=%d, len(hi)=%d", n, len(lo), len(hi)))
	}
	if c := s.Curvature; c != nil {
		if len(c) != n {
			panic(fmt.Sprintf("fit: LBFGSB: curvature of %d rows for %d variables", len(c), n))
		}
		for _, row := range c {
			if len(row) != n || !allFinite(row) {
				panic(fmt.Sprintf("fit: LBFGSB: curvature not a finite %d×%d matrix", n, n))
			}
		}
	}
	sv := &solver{
		box: newBox(lo, hi),
		set: s.withDefaults(),
	}
	sv.mem = newLBFGSMemory(sv.set.Memory)
	sv.ev = evaluator{fn: fn, n: n, max: sv.set.MaxEval}
	return sv.run(x0)
}

// LBFGSBFrom continues the minimization of fn over the box lo <= x <= hi from st, a state
// reported by LBFGSBSettings.OnIteration of a minimization of the same fn, box and settings:
// it evaluates the same points and returns the same result as that minimization, the
// iteration and evaluation counts of st included. It panics if st does not fit the box and
// settings (see LBFGSBState.Check) and otherwise as LBFGSB does.
func LBFGSBFrom(fn Objective, st LBFGSBState, lo, hi []float64, s LBFGSBSettings) LBFGSBResult {
	if fn == nil {
		panic("fit: LBFGSB: nil objective")
	}
	set := s.withDefaults()
	if err := st.Check(len(lo), set.Memory); err != nil {
		panic("fit: LBFGSBFrom: " + err.Error())
	}
	if len(hi) != len(lo) {
		panic(fmt.Sprintf("fit: LBFGSB: slice lengths differ: len(lo)=%d, len(hi)=%d", len(lo), len(hi)))
	}
	sv := &solver{box: newBox(lo, hi), set: set}
	sv.mem = newLBFGSMemory(set.Memory)
	sv.mem.restore(st.S, st.Y, st.Theta)
	sv.mem.seeded = st.Seeded
	sv.ev = evaluator{fn: fn, n: len(lo), max: set.MaxEval, count: st.Evaluations}
	return sv.loop(slices.Clone(st.X), st.F, slices.Clone(st.Grad), st.Iterations)
}

// withDefaults returns a copy of s with every zero or negative field replaced
// by its default value.
func (s LBFGSBSettings) withDefaults() LBFGSBSettings {
	if s.Memory <= 0 {
		s.Memory = defaultMemory
	}
	if s.MaxIter <= 0 {
		s.MaxIter = defaultMaxIter
	}
	if s.MaxEval <= 0 {
		s.MaxEval = defaultMaxEval
	}
	if !(s.PGTol > 0) {
		s.PGTol = defaultPGTol
	}
	if !(s.FTol > 0) {
		s.FTol = defaultFTol
	}
	return s
}

// ---------------------------------------------------------------------------
// The solver.

// solver holds the state of one LBFGSB call.
type solver struct {
	box *box
	set LBFGSBSettings
	mem *lbfgsMemory
	ev  evaluator
}

// run performs the minimization from x0; it is the main loop of the reference
// routine mainlb.
func (sv *solver) run(x0 []float64) LBFGSBResult {
	x := sv.box.project(x0)
	if !allFinite(x) {
		return LBFGSBResult{X: x, F: math.NaN(), Status: statusInitNotFinite}
	}
	f, g, err := sv.ev.eval(x)
	finish := func(status string, converged bool) LBFGSBResult {
		return LBFGSBResult{X: x, F: f, Grad: g, Evaluations: sv.ev.count, Converged: converged, Status: status}
	}
	if err != nil {
		f = math.NaN()
		r := finish(statusAbortedPrefix+err.Error(), false)
		r.Err = err
		return r
	}
	if !finitePoint(f, g) {
		return finish(statusInitNotFinite, false)
	}
	if sv.box.projGradNorm(x, g) <= sv.set.PGTol {
		return finish(statusPGTol, true)
	}
	if sv.set.Curvature != nil {
		sv.mem.seed(sv.set.Curvature)
	}
	return sv.loop(x, f, g, 0)
}

// loop runs the iterations from the point x with value f and gradient g after iter
// iterations, the memory and evaluation count as they are.
func (sv *solver) loop(x []float64, f float64, g []float64, iter int) LBFGSBResult {
	finish := func(status string, converged bool) LBFGSBResult {
		return LBFGSBResult{
			X:           x,
			F:           f,
			Grad:        g,
			Iterations:  iter,
			Evaluations: sv.ev.count,
			Converged:   converged,
			Status:      status,
		}
	}
	for {
		if sv.set.OnIteration != nil {
			sv.set.OnIteration(sv.state(x, f, g, iter))
		}
		if iter >= sv.set.MaxIter {
			return finish(statusMaxIter, false)
		}
		if sv.ev.exhausted() {
			return finish(statusMaxEval, false)
		}

		// Search target z: the generalized Cauchy point refined by subspace
		// minimization. Without bounds the Cauchy point is only needed
		// while B = θI (as in the reference code); afterwards z is the
		// quasi-Newton point x − B^{-1} g.
		var z []float64
		ok := true
		if !sv.box.constrained && sv.mem.k() > 0 {
			free := make([]bool, sv.box.n)
			for i := range free {
				free[i] = true
			}
			z, ok = sv.subspaceMin(x, g, x, make([]float64, 2*sv.mem.k()), free)
		} else {
			xcp, c, free := sv.cauchyPoint(x, g)
			z = xcp
			if sv.mem.k() > 0 && anyTrue(free) {
				z, ok = sv.subspaceMin(x, g, xcp, c, free)
			}
		}
		if !ok {
			// Reduced Hessian not numerically positive definite.
			sv.mem.reset()
			continue
		}

		ls := sv.lineSearch(x, f, g, z, iter)
		switch ls.outcome {
		case lsAborted:
			r := finish(statusAbortedPrefix+ls.err.Error(), false)
			r.Err = ls.err
			return r
		case lsOutOfEvals:
			if ls.bestG != nil && ls.bestF < f {
				x, f, g = ls.bestX, ls.bestF, ls.bestG
			}
			return finish(statusMaxEval, false)
		case lsFailed:
			if sv.mem.k() == 0 {
				// Even a projected steepest-descent step failed.
				return finish(statusLineSearch, false)
			}
			// Retry from the same point with B = I.
			sv.mem.reset()
			continue
		}

		s := make([]float64, sv.box.n)
		y := make([]float64, sv.box.n)
		for i := range s {
			s[i] = ls.x[i] - x[i]
			y[i] = ls.g[i] - g[i]
		}
		fOld := f
		x, f, g = ls.x, ls.f, ls.g
		iter++

		if sv.box.projGradNorm(x, g) <= sv.set.PGTol {
			return finish(statusPGTol, true)
		}
		if fOld-f <= sv.set.FTol*math.Max(math.Max(math.Abs(fOld), math.Abs(f)), 1) {
			if sv.mem.seeded == 0 {
				return finish(statusFTol, true)
			}
			// A short step may be the seeded curvature's doing (a model of another point's
			// objective that says the minimum is near): go on with the pairs of steps taken
			// alone, so that only those stop the run.
			sv.mem.dropSeeded()
		}

		// Update the memory unless the curvature condition s'y > ε y'y fails
		// (the pair would not keep B positive definite); an ill-conditioned
		// middle matrix resets the memory.
		sy, yy := dot(s, y), dot(y, y)
		if sy > machineEpsilon*yy {
			sv.mem.push(s, y, sy, yy)
		}
	}
}
