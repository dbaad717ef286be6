// L-BFGS-B ([BLNZ], see lbfgsb.go): the feasible box, objective evaluation, the limited-memory
// matrix in compact form and small dense linear algebra.

package fit

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

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
	// seeded counts the oldest pairs that came from a curvature estimate (seed), not from
	// steps taken.
	seeded int
	sy     [][]float64 // S'Y: sy[i][j] = s_i'y_j
	ss     [][]float64 // S'S
	j      [][]float64 // lower-triangular Cholesky factor of T
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
	mem.theta, mem.seeded = 1, 0
}

// dropSeeded discards the pairs that came from a curvature estimate, keeping those of steps
// taken and the θ of the newest of them (B = I when there are none).
func (mem *lbfgsMemory) dropSeeded() {
	s, y := mem.s[mem.seeded:], mem.y[mem.seeded:]
	if len(s) == 0 {
		mem.reset()
		return
	}
	last := len(s) - 1
	mem.restore(s, y, dot(y[last], y[last])/dot(s[last], y[last]))
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
		mem.seeded = max(mem.seeded-1, 0)
	}
	mem.theta = yy / sy
	return mem.factor()
}

// restore sets the memory to the pairs (s, y), oldest first, and θ, as push left them, none
// of them seeded.
func (mem *lbfgsMemory) restore(s, y [][]float64, theta float64) {
	if len(s) == 0 {
		mem.reset()
		return
	}
	mem.s, mem.y, mem.theta, mem.seeded = make([][]float64, len(s)), make([][]float64, len(y)), theta, 0
	for i := range s {
		mem.s[i], mem.y[i] = slices.Clone(s[i]), slices.Clone(y[i])
	}
	mem.factor()
}

// seed sets the memory to correction pairs that make B equal the symmetric matrix h on the
// span of its eigenvectors of positive curvature: s_i = v_i, y_i = λ_i v_i for every
// eigenvalue λ_i > 1e-10·λ_max, smallest λ first (the pairs the memory drops first as real
// ones arrive are then the flattest directions, where h is least sure), and θ = λ_max, the
// curvature B assumes on the directions h does not say are convex. The pairs are mutually
// orthogonal and h-conjugate, so that the compact form's BFGS updates keep each one's secant
// equation B s_i = y_i ([BLNZ] §2; Nocedal & Wright 2006, Thm. 6.4's hereditary property).
// With at most m kept it keeps the m largest. Where h has no positive eigenvalue the
// memory stays empty (B = I).
func (mem *lbfgsMemory) seed(h [][]float64) {
	n := len(h)
	if n == 0 {
		mem.reset()
		return
	}
	sym := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, 0.5*(h[i][j]+h[j][i]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		mem.reset()
		return
	}
	vals := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := vals[n-1]
	var s, y [][]float64
	for i, l := range vals {
		if !(l > 1e-10*top) || !(top > 0) {
			continue
		}
		v := mat.Col(nil, i, &vecs)
		lv := make([]float64, n)
		for k := range v {
			lv[k] = l * v[k]
		}
		s, y = append(s, v), append(y, lv)
	}
	if len(s) > mem.m {
		s, y = s[len(s)-mem.m:], y[len(y)-mem.m:]
	}
	mem.restore(s, y, top)
	mem.seeded = mem.k()
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
