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
	"sort"
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
// The feasible box.

// box describes the feasible set lo <= x <= hi.
type box struct {
	n            int
	lo, hi       []float64
	hasLo, hasHi []bool // whether the bound is finite
	fixed        []bool // lo == hi: the variable never moves
	constrained  bool   // at least one finite bound
	boxed        bool   // every variable has two finite bounds
}

// newBox returns the box lo <= x <= hi, copying the bounds. It panics if a
// bound is NaN, if lo[i] > hi[i], or if lo[i] = +Inf or hi[i] = -Inf.
func newBox(lo, hi []float64) *box {
	n := len(lo)
	b := &box{
		n:     n,
		lo:    append([]float64(nil), lo...),
		hi:    append([]float64(nil), hi...),
		hasLo: make([]bool, n),
		hasHi: make([]bool, n),
		fixed: make([]bool, n),
		boxed: true,
	}
	for i := range n {
		l, h := lo[i], hi[i]
		switch {
		case math.IsNaN(l) || math.IsNaN(h):
			panic(fmt.Sprintf("fit: LBFGSB: NaN bound for variable %d", i))
		case l > h:
			panic(fmt.Sprintf("fit: LBFGSB: lo[%d] = %v > hi[%d] = %v", i, l, i, h))
		case math.IsInf(l, 1) || math.IsInf(h, -1):
			panic(fmt.Sprintf("fit: LBFGSB: empty box for variable %d: [%v, %v]", i, l, h))
		}
		b.hasLo[i] = !math.IsInf(l, -1)
		b.hasHi[i] = !math.IsInf(h, 1)
		b.fixed[i] = l == h
		if b.hasLo[i] || b.hasHi[i] {
			b.constrained = true
		}
		if !b.hasLo[i] || !b.hasHi[i] {
			b.boxed = false
		}
	}
	return b
}

// project returns a new slice holding the projection of x onto the box.
// NaN components stay NaN.
func (b *box) project(x []float64) []float64 {
	p := make([]float64, b.n)
	copy(p, x)
	b.clamp(p)
	return p
}

// clamp projects x onto the box in place.
func (b *box) clamp(x []float64) {
	for i := range x {
		if x[i] < b.lo[i] {
			x[i] = b.lo[i]
		}
		if x[i] > b.hi[i] {
			x[i] = b.hi[i]
		}
	}
}

// projGradNorm returns the infinity norm of the projected gradient
// P(x − g, lo, hi) − x, computed as in the reference routine projgr: a
// component whose step is blocked by a bound is truncated to the distance to
// that bound. It is zero exactly at a first-order (KKT) point.
func (b *box) projGradNorm(x, g []float64) float64 {
	norm := 0.0
	for i, gi := range g {
		if gi < 0 {
			if b.hasHi[i] {
				gi = math.Max(x[i]-b.hi[i], gi)
			}
		} else if b.hasLo[i] {
			gi = math.Min(x[i]-b.lo[i], gi)
		}
		norm = math.Max(norm, math.Abs(gi))
	}
	return norm
}

// ---------------------------------------------------------------------------
// Objective evaluation.

// evaluator wraps the objective: it counts calls, passes a private copy of x,
// copies the gradient and validates its length.
type evaluator struct {
	fn    Objective
	n     int
	count int // evaluations so far
	max   int // hard cap on count
}

// exhausted reports whether the evaluation budget is used up.
func (e *evaluator) exhausted() bool { return e.count >= e.max }

// eval returns f(x) and a private copy of its gradient. The gradient is nil
// when f is not finite. It panics if f is finite and the gradient length is
// not n.
func (e *evaluator) eval(x []float64) (float64, []float64, error) {
	e.count++
	f, g, err := e.fn(append([]float64(nil), x...))
	if err != nil {
		return f, nil, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f, nil, nil
	}
	if len(g) != e.n {
		panic(fmt.Sprintf("fit: LBFGSB: objective returned a gradient of length %d, want %d", len(g), e.n))
	}
	return f, append([]float64(nil), g...), nil
}

// finitePoint reports whether f and every component of g are finite. The
// gradient of a finite f always has the full length (see evaluator.eval).
func finitePoint(f float64, g []float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	return allFinite(g)
}

// allFinite reports whether every element of v is finite.
func allFinite(v []float64) bool {
	for _, e := range v {
		if math.IsNaN(e) || math.IsInf(e, 0) {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// The limited-memory BFGS matrix in compact form.

// lbfgsMemory holds the limited-memory BFGS approximation of the Hessian in
// the compact representation of [BLNZ] (3.2)–(3.4):
//
//	B = θI − W M W',   W = [Y  θS],   M = [ −D   L'   ]^{-1}
//	                                      [  L   θS'S ]
//
// where the columns of S and Y are the k <= m most recent corrections
// s_i = x_{i+1} − x_i and y_i = g_{i+1} − g_i (oldest first), D = diag(s_i'y_i)
// and L is the strictly lower triangle of S'Y, L_ij = s_i'y_j for i > j
// ([BLNZ] (3.5)). With k = 0, B = θI.
//
// M is never formed. Products with M use the factorization of the middle
// matrix used by the reference code (routines formt and bmv):
//
//	M^{-1} = [  D^{1/2}       0 ] [ −D^{1/2}   D^{-1/2} L' ]
//	         [ −L D^{-1/2}    J ] [  0         J'          ]
//
// with J J' = T = θS'S + L D^{-1} L', which is positive definite whenever
// every s_i'y_i > 0.
type lbfgsMemory struct {
	m     int
	theta float64
	s, y  [][]float64 // correction pairs, oldest first
	sy    [][]float64 // S'Y: sy[i][j] = s_i'y_j
	ss    [][]float64 // S'S
	j     [][]float64 // lower-triangular Cholesky factor of T
}

// newLBFGSMemory returns an empty memory (B = I) holding at most m pairs.
func newLBFGSMemory(m int) *lbfgsMemory {
	return &lbfgsMemory{m: m, theta: 1}
}

// k returns the number of stored correction pairs.
func (mem *lbfgsMemory) k() int { return len(mem.s) }

// reset discards all correction pairs, so that B = I, as the reference code
// does whenever the limited-memory matrix becomes numerically unusable.
func (mem *lbfgsMemory) reset() {
	mem.s, mem.y, mem.sy, mem.ss, mem.j = nil, nil, nil, nil, nil
	mem.theta = 1
}

// push stores the pair (s, y), dropping the oldest pair when the memory is
// full, and sets θ = y'y / s'y. sy = s'y must be positive. It returns false,
// leaving the memory reset, when T = θS'S + L D^{-1} L' is not numerically
// positive definite.
func (mem *lbfgsMemory) push(s, y []float64, sy, yy float64) bool {
	mem.s = append(mem.s, append([]float64(nil), s...))
	mem.y = append(mem.y, append([]float64(nil), y...))
	if len(mem.s) > mem.m {
		mem.s = mem.s[1:]
		mem.y = mem.y[1:]
	}
	mem.theta = yy / sy
	return mem.factor()
}

// restore sets the memory to the pairs (s, y), oldest first, and θ, as push left them.
func (mem *lbfgsMemory) restore(s, y [][]float64, theta float64) {
	if len(s) == 0 {
		mem.reset()
		return
	}
	mem.s, mem.y, mem.theta = make([][]float64, len(s)), make([][]float64, len(y)), theta
	for i := range s {
		mem.s[i], mem.y[i] = slices.Clone(s[i]), slices.Clone(y[i])
	}
	mem.factor()
}

// factor computes S'Y, S'S and the Cholesky factor of T from the pairs and θ. It returns
// false, leaving the memory reset, when T is not numerically positive definite.
func (mem *lbfgsMemory) factor() bool {
	k := mem.k()
	mem.sy = newMatrix(k, k)
	mem.ss = newMatrix(k, k)
	for a := range k {
		for b := range k {
			mem.sy[a][b] = dot(mem.s[a], mem.y[b])
			mem.ss[a][b] = dot(mem.s[a], mem.s[b])
		}
	}
	// T_ab = θ (S'S)_ab + Σ_{l < min(a,b)} L_al L_bl / D_l.
	t := newMatrix(k, k)
	for a := range k {
		for b := range k {
			v := mem.theta * mem.ss[a][b]
			for l := 0; l < min(a, b); l++ {
				v += mem.sy[a][l] * mem.sy[b][l] / mem.sy[l][l]
			}
			t[a][b] = v
		}
	}
	jj, ok := cholesky(t)
	if !ok {
		mem.reset()
		return false
	}
	mem.j = jj
	return true
}

// wMatrix returns the n×2k matrix W = [Y θS] as rows.
func (mem *lbfgsMemory) wMatrix(n int) [][]float64 {
	k := mem.k()
	w := newMatrix(n, 2*k)
	for i := range n {
		for a := range k {
			w[i][a] = mem.y[a][i]
			w[i][k+a] = mem.theta * mem.s[a][i]
		}
	}
	return w
}

// mulM returns M v for a vector v of length 2k, by solving M^{-1} p = v with
// the block factorization described at lbfgsMemory (reference routine bmv):
//
//	p2 = T^{-1} (v2 + L D^{-1} v1),   p1 = D^{-1} (L' p2 − v1).
func (mem *lbfgsMemory) mulM(v []float64) []float64 {
	k := mem.k()
	p := make([]float64, 2*k)
	if k == 0 {
		return p
	}
	v1, v2 := v[:k], v[k:]
	p1, p2 := p[:k], p[k:]
	for a := range k {
		sum := v2[a]
		for l := range a {
			sum += mem.sy[a][l] * v1[l] / mem.sy[l][l]
		}
		p2[a] = sum
	}
	choleskySolve(mem.j, p2)
	for a := range k {
		sum := -v1[a]
		for l := a + 1; l < k; l++ {
			sum += mem.sy[l][a] * p2[l]
		}
		p1[a] = sum / mem.sy[a][a]
	}
	return p
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
			return finish(statusFTol, true)
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

// cauchyPoint computes the generalized Cauchy point x^c: the first local
// minimizer of the quadratic model
//
//	m(x + s) = f + g's + ½ s'Bs
//
// along the projected steepest-descent path x(t) = P(x − t g, lo, hi), t >= 0
// ([BLNZ] Section 4, Algorithm CP). The path is piecewise linear with a kink
// at each breakpoint t_i = (x_i − hi_i)/g_i (g_i < 0) or (x_i − lo_i)/g_i
// (g_i > 0) where variable i reaches a bound; the model is examined segment
// by segment, keeping its first and second directional derivatives f' and f”
// up to date with O(k²) work per segment through the compact form of B, as
// in Algorithm CP and the reference routine cauchy. Between breakpoints the
// model is the parabola f' Δt + ½ f” Δt², minimized at Δt* = −f'/f”.
//
// It returns x^c, the vector c = W'(x^c − x) needed by the subspace
// minimization, and free, which reports for each variable whether it is free
// at x^c (not held at a bound). The returned x^c lies in the box.
func (sv *solver) cauchyPoint(x, g []float64) (xcp, c []float64, free []bool) {
	b := sv.box
	n := b.n
	mem := sv.mem
	k := mem.k()
	theta := mem.theta

	xcp = append([]float64(nil), x...)
	c = make([]float64, 2*k)
	free = make([]bool, n)
	d := make([]float64, n) // Cauchy direction: −g on the variables that move

	type breakpoint struct {
		t float64
		i int
	}
	var bps []breakpoint
	allBounded := true // every moving variable eventually hits a bound
	moving := false
	f1 := 0.0 // f' = g'd at t = 0
	for i := range n {
		if b.fixed[i] {
			continue
		}
		gi := g[i]
		atLo := b.hasLo[i] && x[i] <= b.lo[i]
		atHi := b.hasHi[i] && x[i] >= b.hi[i]
		if (atLo && gi >= 0) || (atHi && gi <= 0) {
			// The path keeps this variable at its bound.
			continue
		}
		free[i] = true
		if gi == 0 {
			continue
		}
		d[i] = -gi
		f1 -= gi * gi
		moving = true
		switch {
		case gi > 0 && b.hasLo[i]:
			bps = append(bps, breakpoint{(x[i] - b.lo[i]) / gi, i})
		case gi < 0 && b.hasHi[i]:
			bps = append(bps, breakpoint{(x[i] - b.hi[i]) / gi, i})
		default:
			allBounded = false
		}
	}
	if !moving {
		return xcp, c, free
	}

	w := mem.wMatrix(n)
	p := make([]float64, 2*k) // p = W'd
	for i := range n {
		if d[i] != 0 {
			for a := range p {
				p[a] += w[i][a] * d[i]
			}
		}
	}
	f2org := -theta * f1 // d'(θI)d
	f2 := f2org - dot(p, mem.mulM(p))
	if !(f2 > 0) {
		f2 = machineEpsilon * f2org
	}
	dtm := -f1 / f2 // minimizer of the model on the current segment, relative to its start
	tsum := 0.0

	sort.SliceStable(bps, func(a, b int) bool { return bps[a].t < bps[b].t })
	tj := 0.0
	for nb, bp := range bps {
		tj0 := tj
		tj = bp.t
		dt := tj - tj0
		if dtm < dt {
			break // the minimizer lies inside this segment
		}
		// Move to the breakpoint and fix variable ibp at its bound.
		tsum += dt
		ibp := bp.i
		dibp := d[ibp]
		d[ibp] = 0
		var zibp float64 // x^c_b − x_b
		if dibp > 0 {
			zibp = b.hi[ibp] - x[ibp]
			xcp[ibp] = b.hi[ibp]
		} else {
			zibp = b.lo[ibp] - x[ibp]
			xcp[ibp] = b.lo[ibp]
		}
		free[ibp] = false

		// Update f' and f” for the next segment (g_b = −dibp):
		//   f'  ← f' + Δt f” + g_b² + θ g_b z_b − g_b w_b'Mc
		//   f”  ← f” − θ g_b² − 2 g_b w_b'Mp − g_b² w_b'Mw_b
		// with c ← c + Δt p beforehand and p ← p + g_b w_b afterwards.
		dibp2 := dibp * dibp
		f1 += dt*f2 + dibp2 - theta*dibp*zibp
		f2 -= theta * dibp2
		if k > 0 {
			for a := range c {
				c[a] += dt * p[a]
			}
			wb := w[ibp]
			v := mem.mulM(wb)
			wmc, wmp, wmw := dot(c, v), dot(p, v), dot(wb, v)
			for a := range p {
				p[a] -= dibp * wb[a]
			}
			f1 += dibp * wmc
			f2 += 2*dibp*wmp - dibp2*wmw
		}
		f2 = math.Max(machineEpsilon*f2org, f2)
		if nb < len(bps)-1 {
			dtm = -f1 / f2
		} else if allBounded {
			// Every moving variable is now at a bound: the path ends here.
			dtm = 0
		} else {
			dtm = -f1 / f2
		}
	}
	if !(dtm > 0) {
		dtm = 0
	}
	tsum += dtm
	for i := range n {
		if d[i] != 0 {
			xcp[i] = x[i] + tsum*d[i]
		}
	}
	b.clamp(xcp)
	for a := range c {
		c[a] += dtm * p[a]
	}
	return xcp, c, free
}

// subspaceMin minimizes the quadratic model over the variables that are free
// at the Cauchy point x^c, holding the others at their x^c values, by the
// direct primal method of [BLNZ] Section 5.1: with Z the columns of the
// identity for the free variables, it solves
//
//	(Z'BZ) d = −r,   r = Z'(g + B(x^c − x)) = Z'(g + θ(x^c − x) − W M c),
//
// where c = W'(x^c − x). The reduced Hessian Z'BZ = θI − (Z'W) M (W'Z) is
// formed explicitly and Cholesky-factored, which for the small dimensions
// targeted here is equivalent to the Sherman–Morrison–Woodbury formula of
// [BLNZ] Section 5.1.
//
// The unconstrained Newton point x^c + Z d is then projected onto the box;
// following [MN], the projection is kept unless it is not a descent
// direction from x, in which case the step is instead truncated at the first
// bound along d (the original [BLNZ] rule). It returns the resulting point,
// which lies in the box, and ok = false when the reduced Hessian is not
// numerically positive definite.
func (sv *solver) subspaceMin(x, g, xcp, c []float64, free []bool) ([]float64, bool) {
	b := sv.box
	mem := sv.mem
	theta := mem.theta
	w := mem.wMatrix(b.n)

	var idx []int
	for i, fr := range free {
		if fr {
			idx = append(idx, i)
		}
	}
	nf := len(idx)

	// Reduced gradient of the model at x^c.
	mc := mem.mulM(c)
	r := make([]float64, nf)
	for a, i := range idx {
		r[a] = g[i] + theta*(xcp[i]-x[i]) - dot(w[i], mc)
	}

	// Reduced Hessian Z'BZ.
	mw := make([][]float64, nf)
	for a, i := range idx {
		mw[a] = mem.mulM(w[i])
	}
	h := newMatrix(nf, nf)
	for a, i := range idx {
		for bb := range nf {
			h[a][bb] = -dot(w[i], mw[bb])
		}
		h[a][a] += theta
	}
	// Symmetrize against rounding.
	for a := range nf {
		for bb := a + 1; bb < nf; bb++ {
			v := 0.5 * (h[a][bb] + h[bb][a])
			h[a][bb], h[bb][a] = v, v
		}
	}
	l, ok := cholesky(h)
	if !ok {
		return nil, false
	}
	du := make([]float64, nf)
	for a := range du {
		du[a] = -r[a]
	}
	choleskySolve(l, du)
	if !allFinite(du) {
		return nil, false
	}

	// Projected Newton point [MN].
	xbar := append([]float64(nil), xcp...)
	hitBound := false
	for a, i := range idx {
		v := xcp[i] + du[a]
		if b.hasLo[i] && v <= b.lo[i] {
			v = b.lo[i]
			hitBound = true
		}
		if b.hasHi[i] && v >= b.hi[i] {
			v = b.hi[i]
			hitBound = true
		}
		xbar[i] = v
	}
	if !hitBound {
		return xbar, true
	}
	dd := 0.0
	for i := range xbar {
		dd += (xbar[i] - x[i]) * g[i]
	}
	if dd <= 0 {
		return xbar, true
	}

	// Not a descent direction: backtrack along du from x^c to the first bound.
	alpha := 1.0
	ibd := -1
	for a, i := range idx {
		dk := du[a]
		t := alpha
		switch {
		case dk < 0 && b.hasLo[i]:
			gap := b.lo[i] - xcp[i]
			if gap >= 0 {
				t = 0
			} else if dk*alpha < gap {
				t = gap / dk
			}
		case dk > 0 && b.hasHi[i]:
			gap := b.hi[i] - xcp[i]
			if gap <= 0 {
				t = 0
			} else if dk*alpha > gap {
				t = gap / dk
			}
		}
		if t < alpha {
			alpha = t
			ibd = a
		}
	}
	xbar = append(xbar[:0], xcp...)
	for a, i := range idx {
		xbar[i] = xcp[i] + alpha*du[a]
	}
	if ibd >= 0 {
		i := idx[ibd]
		if du[ibd] > 0 {
			xbar[i] = b.hi[i]
		} else {
			xbar[i] = b.lo[i]
		}
	}
	b.clamp(xbar)
	return xbar, true
}

// ---------------------------------------------------------------------------
// Line search.

// lsOutcome classifies the end of a line search.
type lsOutcome int

const (
	lsOK         lsOutcome = iota // an acceptable point was found
	lsFailed                      // no acceptable point: not a descent direction, too many trials, or only non-finite values
	lsAborted                     // the objective returned an error
	lsOutOfEvals                  // the evaluation budget ran out
)

// lsResult is the outcome of lineSearch.
type lsResult struct {
	outcome lsOutcome
	x, g    []float64 // accepted point and its gradient (lsOK)
	f       float64
	err     error // objective error (lsAborted)
	// Lowest finite trial point seen, if any (used when the budget runs out).
	bestX, bestG []float64
	bestF        float64
}

// lineSearch searches along d = z − x from x for a step satisfying the
// strong Wolfe conditions
//
//	f(x + αd) <= f(x) + 1e-3 α g'd,   |g(x + αd)'d| <= 0.9 |g'd|,
//
// with the Moré–Thuente algorithm, as the reference routine lnsrlb does. The
// step is capped so that x + αd stays in the box (α <= 1 on the first
// iteration of a constrained problem), the first trial is α = 1 except on the
// first iteration of a problem that is not fully boxed, where it is
// min(1/‖d‖, cap), and at most 20 finite trial points are evaluated.
//
// A trial point where f or the gradient is not finite is never accepted: the
// step is halved and the search restarted with that step as its upper limit.
// If the Moré–Thuente search ends with a warning at a point that does not
// lower f, the best lower trial point is accepted instead, or the search
// fails; the reference code would accept it.
func (sv *solver) lineSearch(x []float64, f float64, g, z []float64, iter int) lsResult {
	b := sv.box
	n := b.n
	d := make([]float64, n)
	for i := range d {
		d[i] = z[i] - x[i]
	}
	res := lsResult{bestF: math.Inf(1)}
	gd := dot(g, d)
	if !(gd < 0) {
		res.outcome = lsFailed
		return res
	}
	dnorm := math.Sqrt(dot(d, d))

	// Largest step keeping x + αd in the box.
	stpmx := lsBigStep
	if b.constrained {
		if iter == 0 {
			stpmx = 1
		} else {
			for i, di := range d {
				if di < 0 && b.hasLo[i] {
					gap := b.lo[i] - x[i]
					if gap >= 0 {
						stpmx = 0
					} else if di*stpmx < gap {
						stpmx = gap / di
					}
				} else if di > 0 && b.hasHi[i] {
					gap := b.hi[i] - x[i]
					if gap <= 0 {
						stpmx = 0
					} else if di*stpmx > gap {
						stpmx = gap / di
					}
				}
			}
		}
	}
	if !(stpmx > 0) {
		res.outcome = lsFailed
		return res
	}
	stp := 1.0
	if iter == 0 && !b.boxed {
		stp = math.Min(1/dnorm, stpmx)
	}
	stp = math.Min(stp, stpmx)

	var mt moreThuente
	mt.init(f, gd, stp, 0, stpmx)
	trials, nonFinite := 0, 0
	xt := make([]float64, n)
	for {
		if trials >= lsMaxTrials {
			res.outcome = lsFailed
			return res
		}
		if sv.ev.exhausted() {
			res.outcome = lsOutOfEvals
			return res
		}
		// Trial point, kept in the box despite rounding.
		if stp == 1 {
			copy(xt, z)
		} else {
			for i := range xt {
				xt[i] = x[i] + stp*d[i]
			}
		}
		b.clamp(xt)
		ft, gt, err := sv.ev.eval(xt)
		if err != nil {
			res.outcome = lsAborted
			res.err = err
			return res
		}
		if !finitePoint(ft, gt) {
			nonFinite++
			if nonFinite > lsMaxNonFinite {
				res.outcome = lsFailed
				return res
			}
			stp *= 0.5
			mt.init(f, gd, stp, 0, stp)
			continue
		}
		trials++
		if ft < res.bestF {
			res.bestX = append([]float64(nil), xt...)
			res.bestF, res.bestG = ft, gt
		}
		next, status := mt.iterate(ft, dot(gt, d), stp)
		if status != mtSearching {
			switch {
			case ft <= f:
				res.outcome = lsOK
				res.x, res.f, res.g = append([]float64(nil), xt...), ft, gt
			case res.bestF < f:
				res.outcome = lsOK
				res.x, res.f, res.g = res.bestX, res.bestF, res.bestG
			default:
				res.outcome = lsFailed
			}
			return res
		}
		stp = next
	}
}

// mtStatus is the state reported by moreThuente.iterate.
type mtStatus int

const (
	mtSearching mtStatus = iota // evaluate at the returned step and call iterate again
	mtConverged                 // the current step satisfies the strong Wolfe conditions
	mtWarning                   // no further progress is possible (rounding, interval too small, or a step limit reached)
)

// moreThuente is the line search of [MT] in the reverse-communication form of
// the MINPACK-2 routine dcsrch. It finds a step α in [stpmin, stpmax] with
//
//	φ(α) <= φ(0) + ftol α φ'(0)   and   |φ'(α)| <= gtol |φ'(0)|
//
// for φ(α) = f(x + αd), keeping an interval [stx, sty] that brackets such a
// step once one is known. Before a step satisfying φ(α) <= φ(0) + ftol α φ'(0)
// and φ'(α) >= 0 has been seen (stage 1), the modified function
// ψ(α) = φ(α) − φ(0) − ftol α φ'(0) drives the step selection.
type moreThuente struct {
	ftol, gtol, xtol float64
	stpmin, stpmax   float64

	brackt              bool
	stage               int
	finit, ginit, gtest float64
	stx, fx, gx         float64 // step with the least function value so far
	sty, fy, gy         float64 // other endpoint of the interval
	stmin, stmax        float64 // current limits for the next step
	width, width1       float64
}

// init starts a search from φ(0) = f0, φ'(0) = g0 with first trial step stp.
// It requires g0 < 0 and stpmin <= stp <= stpmax.
func (ls *moreThuente) init(f0, g0, stp, stpmin, stpmax float64) {
	*ls = moreThuente{
		ftol:   lsFTol,
		gtol:   lsGTol,
		xtol:   lsXTol,
		stpmin: stpmin,
		stpmax: stpmax,
		stage:  1,
		finit:  f0,
		ginit:  g0,
		gtest:  lsFTol * g0,
		width:  stpmax - stpmin,
		stx:    0,
		fx:     f0,
		gx:     g0,
		sty:    0,
		fy:     f0,
		gy:     g0,
		stmin:  0,
		stmax:  stp + mtExtrapolationUpper*stp,
	}
	ls.width1 = ls.width / 0.5
}

// iterate takes φ(stp) = f and φ'(stp) = g at the current trial step and
// returns either mtConverged or mtWarning (stop; stp is the final step) or
// mtSearching with the next trial step.
func (ls *moreThuente) iterate(f, g, stp float64) (float64, mtStatus) {
	ftest := ls.finit + stp*ls.gtest
	if ls.stage == 1 && f <= ftest && g >= 0 {
		ls.stage = 2
	}

	// Tests for warnings and convergence, in the order of dcsrch (the last
	// one that applies wins, so convergence takes precedence).
	status := mtSearching
	if ls.brackt && (stp <= ls.stmin || stp >= ls.stmax) {
		status = mtWarning // rounding errors prevent progress
	}
	if ls.brackt && ls.stmax-ls.stmin <= ls.xtol*ls.stmax {
		status = mtWarning // xtol test satisfied
	}
	if stp == ls.stpmax && f <= ftest && g <= ls.gtest {
		status = mtWarning // stp = stpmax
	}
	if stp == ls.stpmin && (f > ftest || g >= ls.gtest) {
		status = mtWarning // stp = stpmin
	}
	if f <= ftest && math.Abs(g) <= ls.gtol*(-ls.ginit) {
		status = mtConverged
	}
	if status != mtSearching {
		return stp, status
	}

	bx := mtPoint{ls.stx, ls.fx, ls.gx}
	by := mtPoint{ls.sty, ls.fy, ls.gy}
	if ls.stage == 1 && f <= ls.fx && f > ftest {
		// A lower function value without sufficient decrease: use the
		// modified function ψ to choose the step.
		gt := ls.gtest
		mx := mtPoint{bx.stp, bx.f - bx.stp*gt, bx.g - gt}
		my := mtPoint{by.stp, by.f - by.stp*gt, by.g - gt}
		mp := mtPoint{stp, f - stp*gt, g - gt}
		stp = dcstep(&mx, &my, mp, &ls.brackt, ls.stmin, ls.stmax)
		bx = mtPoint{mx.stp, mx.f + mx.stp*gt, mx.g + gt}
		by = mtPoint{my.stp, my.f + my.stp*gt, my.g + gt}
	} else {
		stp = dcstep(&bx, &by, mtPoint{stp, f, g}, &ls.brackt, ls.stmin, ls.stmax)
	}
	ls.stx, ls.fx, ls.gx = bx.stp, bx.f, bx.g
	ls.sty, ls.fy, ls.gy = by.stp, by.f, by.g

	// Bisect if the bracket did not shrink enough in two steps.
	if ls.brackt {
		if math.Abs(ls.sty-ls.stx) >= 0.66*ls.width1 {
			stp = ls.stx + 0.5*(ls.sty-ls.stx)
		}
		ls.width1 = ls.width
		ls.width = math.Abs(ls.sty - ls.stx)
	}

	// Limits for the next step.
	if ls.brackt {
		ls.stmin = math.Min(ls.stx, ls.sty)
		ls.stmax = math.Max(ls.stx, ls.sty)
	} else {
		ls.stmin = stp + mtExtrapolationLower*(stp-ls.stx)
		ls.stmax = stp + mtExtrapolationUpper*(stp-ls.stx)
	}
	stp = math.Max(stp, ls.stpmin)
	stp = math.Min(stp, ls.stpmax)

	// If no further progress is possible, fall back to the best step.
	if ls.brackt && (stp <= ls.stmin || stp >= ls.stmax || ls.stmax-ls.stmin <= ls.xtol*ls.stmax) {
		stp = ls.stx
	}
	return stp, mtSearching
}

// mtPoint is a step with its function value and directional derivative.
type mtPoint struct {
	stp, f, g float64
}

// dcstep computes a safeguarded trial step from the best point x, the other
// interval endpoint y and the current trial point p, and updates the interval
// [x, y] so that it keeps containing a step satisfying the sufficient
// decrease and curvature conditions ([MT] Section 4; MINPACK-2 dcstep). The
// step is the minimizer of a cubic or quadratic interpolant chosen according
// to four cases; stpmin and stpmax bound it while no minimizer is bracketed.
// x.g must be negative in the direction of p.stp − x.stp.
func dcstep(x, y *mtPoint, p mtPoint, brackt *bool, stpmin, stpmax float64) float64 {
	sgnd := p.g * (x.g / math.Abs(x.g))
	var stpf float64
	switch {
	case p.f > x.f:
		// Case 1: a higher function value. The minimum is bracketed. Take
		// the cubic step if it is closer to x, else the average of the
		// cubic and quadratic steps.
		theta := 3*(x.f-p.f)/(p.stp-x.stp) + x.g + p.g
		s := math.Max(math.Abs(theta), math.Max(math.Abs(x.g), math.Abs(p.g)))
		gamma := s * math.Sqrt((theta/s)*(theta/s)-(x.g/s)*(p.g/s))
		if p.stp < x.stp {
			gamma = -gamma
		}
		pp := (gamma - x.g) + theta
		q := ((gamma - x.g) + gamma) + p.g
		r := pp / q
		stpc := x.stp + r*(p.stp-x.stp)
		stpq := x.stp + ((x.g/((x.f-p.f)/(p.stp-x.stp)+x.g))/2)*(p.stp-x.stp)
		if math.Abs(stpc-x.stp) < math.Abs(stpq-x.stp) {
			stpf = stpc
		} else {
			stpf = stpc + (stpq-stpc)/2
		}
		*brackt = true

	case sgnd < 0:
		// Case 2: a lower function value and derivatives of opposite
		// sign. The minimum is bracketed. Take the cubic step if it is
		// farther from p than the secant step, else the secant step.
		theta := 3*(x.f-p.f)/(p.stp-x.stp) + x.g + p.g
		s := math.Max(math.Abs(theta), math.Max(math.Abs(x.g), math.Abs(p.g)))
		gamma := s * math.Sqrt((theta/s)*(theta/s)-(x.g/s)*(p.g/s))
		if p.stp > x.stp {
			gamma = -gamma
		}
		pp := (gamma - p.g) + theta
		q := ((gamma - p.g) + gamma) + x.g
		r := pp / q
		stpc := p.stp + r*(x.stp-p.stp)
		stpq := p.stp + (p.g/(p.g-x.g))*(x.stp-p.stp)
		if math.Abs(stpc-p.stp) > math.Abs(stpq-p.stp) {
			stpf = stpc
		} else {
			stpf = stpq
		}
		*brackt = true

	case math.Abs(p.g) < math.Abs(x.g):
		// Case 3: a lower function value, derivatives of the same sign,
		// and the magnitude of the derivative decreases. The cubic step
		// is used only if the cubic tends to infinity in the direction of
		// the step or its minimum is beyond p; otherwise the secant step.
		theta := 3*(x.f-p.f)/(p.stp-x.stp) + x.g + p.g
		s := math.Max(math.Abs(theta), math.Max(math.Abs(x.g), math.Abs(p.g)))
		gamma := s * math.Sqrt(math.Max(0, (theta/s)*(theta/s)-(x.g/s)*(p.g/s)))
		if p.stp > x.stp {
			gamma = -gamma
		}
		pp := (gamma - p.g) + theta
		q := (gamma + (x.g - p.g)) + gamma
		r := pp / q
		var stpc float64
		switch {
		case r < 0 && gamma != 0:
			stpc = p.stp + r*(x.stp-p.stp)
		case p.stp > x.stp:
			stpc = stpmax
		default:
			stpc = stpmin
		}
		stpq := p.stp + (p.g/(p.g-x.g))*(x.stp-p.stp)
		if *brackt {
			// Take the step closer to p, but stay well inside the bracket.
			if math.Abs(stpc-p.stp) < math.Abs(stpq-p.stp) {
				stpf = stpc
			} else {
				stpf = stpq
			}
			if p.stp > x.stp {
				stpf = math.Min(p.stp+0.66*(y.stp-p.stp), stpf)
			} else {
				stpf = math.Max(p.stp+0.66*(y.stp-p.stp), stpf)
			}
		} else {
			// Take the step farther from p, within the limits.
			if math.Abs(stpc-p.stp) > math.Abs(stpq-p.stp) {
				stpf = stpc
			} else {
				stpf = stpq
			}
			stpf = math.Min(stpmax, stpf)
			stpf = math.Max(stpmin, stpf)
		}

	default:
		// Case 4: a lower function value, derivatives of the same sign,
		// and the magnitude of the derivative does not decrease. If the
		// minimum is not bracketed the step is stpmin or stpmax, otherwise
		// the cubic step through p and y.
		switch {
		case *brackt:
			theta := 3*(p.f-y.f)/(y.stp-p.stp) + y.g + p.g
			s := math.Max(math.Abs(theta), math.Max(math.Abs(y.g), math.Abs(p.g)))
			gamma := s * math.Sqrt((theta/s)*(theta/s)-(y.g/s)*(p.g/s))
			if p.stp > y.stp {
				gamma = -gamma
			}
			pp := (gamma - p.g) + theta
			q := ((gamma - p.g) + gamma) + y.g
			r := pp / q
			stpf = p.stp + r*(y.stp-p.stp)
		case p.stp > x.stp:
			stpf = stpmax
		default:
			stpf = stpmin
		}
	}

	// Update the interval that contains a minimizer.
	if p.f > x.f {
		*y = p
	} else {
		if sgnd < 0 {
			*y = *x
		}
		*x = p
	}
	return stpf
}

// ---------------------------------------------------------------------------
// Small dense linear-algebra helpers.

// dot returns the inner product of a and b, which must have equal lengths.
func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// anyTrue reports whether some element of v is true.
func anyTrue(v []bool) bool {
	for _, b := range v {
		if b {
			return true
		}
	}
	return false
}

// newMatrix returns an r×c zero matrix as a slice of rows.
func newMatrix(r, c int) [][]float64 {
	m := make([][]float64, r)
	for i := range m {
		m[i] = make([]float64, c)
	}
	return m
}

// cholesky returns the lower-triangular factor L with L L' = a for a
// symmetric matrix a (only its lower triangle is read). It returns false when
// a is not numerically positive definite: a pivot is not positive and finite,
// or is tiny relative to the corresponding diagonal entry of a.
func cholesky(a [][]float64) ([][]float64, bool) {
	n := len(a)
	l := newMatrix(n, n)
	for j := range n {
		sum := a[j][j]
		for k := range j {
			sum -= l[j][k] * l[j][k]
		}
		if !(sum > machineEpsilon*math.Abs(a[j][j])) || math.IsInf(sum, 0) {
			return nil, false
		}
		ljj := math.Sqrt(sum)
		l[j][j] = ljj
		for i := j + 1; i < n; i++ {
			s := a[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			l[i][j] = s / ljj
		}
	}
	return l, true
}

// choleskySolve overwrites b with the solution of (L L') x = b for the
// lower-triangular factor l returned by cholesky.
func choleskySolve(l [][]float64, b []float64) {
	n := len(l)
	for i := range n {
		s := b[i]
		for k := range i {
			s -= l[i][k] * b[k]
		}
		b[i] = s / l[i][i]
	}
	for i := n - 1; i >= 0; i-- {
		s := b[i]
		for k := i + 1; k < n; k++ {
			s -= l[k][i] * b[k]
		}
		b[i] = s / l[i][i]
	}
}
