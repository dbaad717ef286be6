package control

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/require"
)

// Checks of the partially observable planner's steps, for both observation timings, against
// expectations over the noises computed here in plain Go by Gauss–Hermite quadrature: the
// model of a step is random (every noise signal-dependent), its matrices constants, so the
// planner's graph functions fold to numbers as they are built.

type dense [][]float64

func randDense(rng *rand.Rand, r, c int) dense {
	a := make(dense, r)
	for i := range a {
		a[i] = make([]float64, c)
		for j := range a[i] {
			a[i][j] = rng.NormFloat64()
		}
	}
	return a
}

func randVec(rng *rand.Rand, n int) []float64 { return randDense(rng, 1, n)[0] }

// randSym returns X Xᵀ + I for a random n×n X.
func randSym(rng *rand.Rand, n int) dense {
	x := randDense(rng, n, n)
	s := mulT(x, x)
	for i := range n {
		s[i][i]++
	}
	return s
}

// mulT returns A·Bᵀ.
func mulT(a, b dense) dense {
	out := make(dense, len(a))
	for i := range a {
		out[i] = make([]float64, len(b))
		for j := range b {
			for k := range a[i] {
				out[i][j] += a[i][k] * b[j][k]
			}
		}
	}
	return out
}

func mv(a dense, x []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		for j, v := range x {
			out[i] += a[i][j] * v
		}
	}
	return out
}

func vadd(vs ...[]float64) []float64 {
	out := make([]float64, len(vs[0]))
	for _, v := range vs {
		for i := range v {
			out[i] += v[i]
		}
	}
	return out
}

func vsub(a, b []float64) []float64 { return vadd(a, scaled(-1, b)) }

func scaled(c float64, v []float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = c * v[i]
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func col(a dense, j int) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i][j]
	}
	return out
}

// quad returns ½xᵀSx.
func quad(s dense, x []float64) float64 { return 0.5 * dot(x, mv(s, x)) }

func constMat(a dense) graph.Mat {
	out := graph.NewMat(len(a), len(a[0]))
	for i := range a {
		for j := range a[i] {
			out[i][j] = graph.C(a[i][j])
		}
	}
	return out
}

func constVec(v []float64) graph.Vec {
	out := make(graph.Vec, len(v))
	for i := range v {
		out[i] = graph.C(v[i])
	}
	return out
}

func numMat(a graph.Mat) dense {
	out := make(dense, len(a))
	for i := range a {
		out[i] = make([]float64, len(a[i]))
		for j := range a[i] {
			out[i][j] = a[i][j].Const()
		}
	}
	return out
}

func numVec(v graph.Vec) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i].Const()
	}
	return out
}

// stepModel is a linearized step in plain Go: x' = A x + B u + Σ_j (V_j + Cx_j x + Cu_j u) v_j,
// y = F x + Σ_j (W_j + D_j x) w_j, cost ½xᵀQx + ½uᵀRu + uᵀPx + qᵀx + rᵀu.
type stepModel struct {
	A, B, V, F, W, Q, R, P dense
	Cx, Cu, D              []dense
	q, r                   []float64
}

func randStep(rng *rand.Rand, s *models.Symbolic) stepModel {
	n, k, nv, m, nw := dims(s)
	sm := stepModel{A: randDense(rng, n, n), B: randDense(rng, n, k), V: randDense(rng, n, nv), F: randDense(rng, m, n),
		W: randDense(rng, m, nw), Q: randSym(rng, n), R: randSym(rng, k), P: randDense(rng, k, n), q: randVec(rng, n), r: randVec(rng, k)}
	for range nv {
		sm.Cx = append(sm.Cx, randDense(rng, n, n))
		sm.Cu = append(sm.Cu, randDense(rng, n, k))
	}
	for range nw {
		sm.D = append(sm.D, randDense(rng, m, n))
	}
	return sm
}

// point returns the step as a Point of constants (Point.Flat's order).
func (sm stepModel) point(s *models.Symbolic) *Point {
	var parts []any
	for _, a := range append(append([]dense{sm.A, sm.B, sm.V}, sm.Cx...), sm.Cu...) {
		parts = append(parts, constMat(a))
	}
	for _, a := range append(append([]dense{sm.F, sm.W}, sm.D...), sm.Q, sm.R, sm.P) {
		parts = append(parts, constMat(a))
	}
	return pointFromFlat(s, graph.Flatten(append(parts, constVec(sm.q), constVec(sm.r))...))
}

func (sm stepModel) next(x, u, v []float64) []float64 {
	out := vadd(mv(sm.A, x), mv(sm.B, u))
	for j := range v {
		out = vadd(out, scaled(v[j], vadd(col(sm.V, j), mv(sm.Cx[j], x), mv(sm.Cu[j], u))))
	}
	return out
}

// obsNoise returns Σ_j (W_j + D_j x) w_j.
func (sm stepModel) obsNoise(x, w []float64) []float64 {
	out := make([]float64, len(sm.F))
	for j := range w {
		out = vadd(out, scaled(w[j], vadd(col(sm.W, j), mv(sm.D[j], x))))
	}
	return out
}

func (sm stepModel) cost(x, u []float64) float64 {
	return quad(sm.Q, x) + quad(sm.R, u) + dot(u, mv(sm.P, x)) + dot(sm.q, x) + dot(sm.r, u)
}

// gaussHermite calls f at the nodes of the 3-point Gauss–Hermite rule in d standard normal
// variables, with their weights: exact for polynomials of degree ≤ 5 in each variable.
func gaussHermite(d int, f func(z []float64, weight float64)) {
	nodes, weights := []float64{-math.Sqrt(3), 0, math.Sqrt(3)}, []float64{1.0 / 6, 2.0 / 3, 1.0 / 6}
	idx := make([]int, d)
	z := make([]float64, d)
	for {
		w := 1.0
		for i, j := range idx {
			z[i], w = nodes[j], w*weights[j]
		}
		f(z, w)
		i := 0
		for ; i < d && idx[i] == 2; i++ {
			idx[i] = 0
		}
		if i == d {
			return
		}
		idx[i]++
	}
}

// value is partialValue in plain Go.
type value struct {
	Sx, Sb, Sxb dense
	sx, sb      []float64
}

func (v value) eval(x, b []float64) float64 {
	return quad(v.Sx, x) + quad(v.Sb, b) + dot(x, mv(v.Sxb, b)) + dot(x, v.sx) + dot(b, v.sb)
}

func (v value) graph() partialValue {
	return partialValue{Sx: constMat(v.Sx), Sb: constMat(v.Sb), Sxb: constMat(v.Sxb), sx: constVec(v.sx), sb: constVec(v.sb)}
}

func numValue(v partialValue) value {
	return value{Sx: numMat(v.Sx), Sb: numMat(v.Sb), Sxb: numMat(v.Sxb), sx: numVec(v.sx), sb: numVec(v.sb)}
}

func lightdarkSymbolic(t *testing.T) *models.Symbolic {
	m, err := models.Get("lightdark")
	require.NoError(t, err)
	s, err := models.Derive(m)
	require.NoError(t, err)
	return s
}

// TestPartialStepIsPolicyEvaluation checks one step of the partially observable backward pass
// (backwardPartialTimed), for both timings, with and without a gap, against the expected
// cost-to-go of the control law it returns: with u = L b + l,
//
//	V_t(x, b) = c(x, u) + E v(x', b') + const,   x' = A x + B u + ξ + d,
//
// the paper's agent b' = A b + B u + d + K (F (x − b) + ω(x)) with F, ω of step t, the agent
// that sees first b' = b⁻ + K (F' (x' − b⁻) + ω'(x')), b⁻ = A b + B u + d, with F', ω' of step
// t+1; the expectation over v and w by quadrature (exact: the integrand is a polynomial of
// degree ≤ 4). The recursion of the value function is exact policy evaluation for any L, l,
// so the quadratic and linear terms of V_t must match to rounding.
func TestPartialStepIsPolicyEvaluation(t *testing.T) {
	s := lightdarkSymbolic(t)
	n, _, nv, m, nw := dims(s)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, seeFirst := range []bool{false, true} {
		for _, withGap := range []bool{false, true} {
			p, pn := randStep(rng, s), randStep(rng, s)
			K := randDense(rng, n, m)
			after := value{Sx: randSym(rng, n), Sb: randSym(rng, n), Sxb: randDense(rng, n, n), sx: randVec(rng, n), sb: randVec(rng, n)}
			d := make([]float64, n)
			var gap graph.Vec
			if withGap {
				d = randVec(rng, n)
				gap = constVec(d)
			}
			var pnPoint *Point
			if seeFirst {
				pnPoint = pn.point(s)
			}
			L, l, _, before := backwardPartialTimed(p.point(s), pnPoint, constMat(K), after.graph(), gap, RegularizationEps)
			Ln, ln, got := numMat(L), numVec(l), numValue(before)
			costToGo := func(x, b []float64) float64 {
				u := vadd(mv(Ln, b), ln)
				total := p.cost(x, u)
				gaussHermite(nv+nw, func(z []float64, weight float64) {
					v, w := z[:nv], z[nv:]
					x1 := vadd(p.next(x, u, v), d)
					var b1 []float64
					if seeFirst {
						pred := vadd(mv(p.A, b), mv(p.B, u), d)
						b1 = vadd(pred, mv(K, vadd(mv(pn.F, vsub(x1, pred)), pn.obsNoise(x1, w))))
					} else {
						b1 = vadd(mv(p.A, b), mv(p.B, u), d, mv(K, vadd(mv(p.F, vsub(x, b)), p.obsNoise(x, w))))
					}
					total += weight * after.eval(x1, b1)
				})
				return total
			}
			zero := make([]float64, n)
			base := costToGo(zero, zero)
			for range 6 {
				x, b := randVec(rng, n), randVec(rng, n)
				want := costToGo(x, b) - base
				require.InDelta(t, want, got.eval(x, b), 1e-10*math.Max(1, math.Abs(want)),
					"see first %v, gap %v: cost-to-go at x %v, b %v", seeFirst, withGap, x, b)
			}
		}
	}
}

// TestMomentsStepMatchesQuadrature checks one step of the planner's closed-loop moments
// (momentsStep), for both timings, against expectations over (b, e, v, w) by quadrature:
// with u = L b, x = b + e and x' = A x + B u + ξ, the gain must be the linear
// minimum-variance one, K = E[(x' − b⁻) iᵀ] E[i iᵀ]⁻¹, b⁻ = A b + B u, with the innovation
// i = F e + ω(x) of x_t for the paper's agent and i = F'(x' − b⁻) + ω'(x') of x_{t+1} (F', ω'
// at the next step) for the agent that sees first; and the next moments those of
// b' = b⁻ + K i and e' = x' − b'.
func TestMomentsStepMatchesQuadrature(t *testing.T) {
	s := lightdarkSymbolic(t)
	n, k, nv, m, nw := dims(s)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, seeFirst := range []bool{false, true} {
		p, pn := randStep(rng, s), randStep(rng, s)
		L := randDense(rng, k, n)
		Z := randDense(rng, 2*n, 2*n) // (b, e) = Z z
		joint := mulT(Z, Z)
		block := func(r, c int) dense {
			out := make(dense, n)
			for i := range n {
				out[i] = joint[r+i][c : c+n]
			}
			return out
		}
		mo := momentsState{Sb: constMat(block(0, 0)), Se: constMat(block(n, n)), Sbe: constMat(block(0, n))}
		var pnPoint *Point
		if seeFirst {
			pnPoint = pn.point(s)
		}
		Kg, next := momentsStep(p.point(s), pnPoint, constMat(L), mo)
		K := numMat(Kg)

		// each calls f with b⁻, x' and the innovation at every node.
		each := func(f func(pred, x1, innov []float64, weight float64)) {
			gaussHermite(2*n+nv+nw, func(z []float64, weight float64) {
				be := mv(Z, z[:2*n])
				b, e := be[:n], be[n:]
				v, w := z[2*n:2*n+nv], z[2*n+nv:]
				x, u := vadd(b, e), mv(L, b)
				x1, pred := p.next(x, u, v), vadd(mv(p.A, b), mv(p.B, u))
				innov := vadd(mv(p.F, e), p.obsNoise(x, w))
				if seeFirst {
					innov = vadd(mv(pn.F, vsub(x1, pred)), pn.obsNoise(x1, w))
				}
				f(pred, x1, innov, weight)
			})
		}
		outer := func(acc dense, a, b []float64, weight float64) {
			for i := range a {
				for j := range b {
					acc[i][j] += weight * a[i] * b[j]
				}
			}
		}
		Cti, Cii := make(dense, n), make(dense, m)
		for i := range Cti {
			Cti[i] = make([]float64, m)
		}
		for i := range Cii {
			Cii[i] = make([]float64, m)
		}
		each(func(pred, x1, innov []float64, weight float64) {
			outer(Cti, vsub(x1, pred), innov, weight)
			outer(Cii, innov, innov, weight)
		})
		// K Cii = Cti, checked without inverting Cii.
		for i := range n {
			for j := range m {
				require.InDelta(t, Cti[i][j], dot(K[i], col(Cii, j)), 1e-10*math.Max(1, math.Abs(Cti[i][j])), "see first %v: gain", seeFirst)
			}
		}
		Sb, Se, Sbe := make(dense, n), make(dense, n), make(dense, n)
		for i := range n {
			Sb[i], Se[i], Sbe[i] = make([]float64, n), make([]float64, n), make([]float64, n)
		}
		each(func(pred, x1, innov []float64, weight float64) {
			b1 := vadd(pred, mv(K, innov))
			e1 := vsub(x1, b1)
			outer(Sb, b1, b1, weight)
			outer(Se, e1, e1, weight)
			outer(Sbe, b1, e1, weight)
		})
		for name, pair := range map[string][2]dense{"Sb": {Sb, numMat(next.Sb)}, "Se": {Se, numMat(next.Se)}, "Sbe": {Sbe, numMat(next.Sbe)}} {
			for i := range n {
				for j := range n {
					require.InDelta(t, pair[0][i][j], pair[1][i][j], 1e-9*math.Max(1, math.Abs(pair[0][i][j])), "see first %v: %s[%d][%d]", seeFirst, name, i, j)
				}
			}
		}
	}
}

// mm returns A·B.
func mm(a, b dense) dense {
	bt := make(dense, len(b[0]))
	for j := range bt {
		bt[j] = col(b, j)
	}
	return mulT(a, bt)
}

func madd(a, b dense) dense {
	out := make(dense, len(a))
	for i := range a {
		out[i] = vadd(a[i], b[i])
	}
	return out
}

// blocks returns the matrix [[a, b], [c, d]].
func blocks(a, b, c, d dense) dense {
	var out dense
	for i := range a {
		out = append(out, append(append([]float64{}, a[i]...), b[i]...))
	}
	for i := range c {
		out = append(out, append(append([]float64{}, c[i]...), d[i]...))
	}
	return out
}

func zeros(r, c int) dense { return scaledMat(0, make(dense, r), c) }

func scaledMat(s float64, a dense, c int) dense {
	out := make(dense, len(a))
	for i := range a {
		out[i] = make([]float64, c)
		for j := range a[i] {
			out[i][j] = s * a[i][j]
		}
	}
	return out
}
