package graph

import (
	"math"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// Alg is the sym.Algebra of batched scalars: it evaluates symbolic expressions as graph
// operations, one operation per expression node, with constants folded.
type Alg struct{}

var _ sym.Algebra[S] = Alg{}

func (Alg) Const(c float64) S { return C(c) }
func (Alg) Add(a, b S) S      { return Add(a, b) }
func (Alg) Mul(a, b S) S      { return Mul(a, b) }
func (Alg) Recip(a S) S       { return Recip(a) }
func (Alg) Square(a S) S      { return Square(a) }
func (Alg) Sqrt(a S) S        { return Sqrt(a) }
func (Alg) Sin(a S) S         { return Sin(a) }
func (Alg) Cos(a S) S         { return Cos(a) }
func (Alg) Exp(a S) S         { return Exp(a) }
func (Alg) Log(a S) S         { return Log(a) }
func (Alg) Tanh(a S) S        { return Tanh(a) }
func (Alg) Abs(a S) S         { return Abs(a) }
func (Alg) Sign(a S) S        { return Sign(a) }
func (Alg) Floor(a S) S       { return Floor(a) }
func (Alg) Atan2(y, x S) S    { return Atan2(y, x) }

// Evaluator evaluates symbolic expressions as graph operations; see sym.Evaluator.
type Evaluator = sym.Evaluator[S]

// NewEvaluator returns an Evaluator of expressions with the given variables bound.
func NewEvaluator(bind map[*sym.Node]S) *Evaluator { return sym.NewEvaluator[S](Alg{}, bind) }

// Atan2 returns the angle of (x, y) in (−π, π], like math.Atan2(y, x).
//
// GoMLX v0.26 has no atan or atan2 operation. The value is computed by argument reduction
// (atan z = π/2 − atan(1/z) for |z| > 1, then two half-angle steps
// atan z = 2·atan(z / (1 + √(1+z²)))) and a Taylor series on |z| ≤ tan(π/16), accurate to a few
// ulps; no gradient flows through that computation. The gradient is attached exactly:
// ∂/∂y = x/(x²+y²), ∂/∂x = −y/(x²+y²).
func Atan2(y, x S) S {
	if y.IsConst() && x.IsConst() {
		return C(math.Atan2(y.c, x.c))
	}
	g := Graph(y, x)
	yn, xn := G.StopGradient(y.Node(g)), G.StopGradient(x.Node(g))
	ys, xs := N(yn), N(xn)
	value := atan2Value(ys, xs)
	r2 := Add(Square(xs), Square(ys))
	r2 = Select(GreaterThan(r2, C(0)), r2, C(1)) // the derivative at the origin is taken as 0
	a := Div(xs, r2)                             // ∂atan2/∂y, constant for the gradient
	b := Neg(Div(ys, r2))                        // ∂atan2/∂x
	lin := Add(Mul(a, y), Mul(b, x))
	zeroWithGradient := Sub(lin, N(G.StopGradient(lin.Node(g))))
	return Add(value, zeroWithGradient)
}

// atan2Value computes atan2 of gradient-free inputs.
func atan2Value(y, x S) S {
	// atan(y/x) for x ≠ 0, then shifted into the right quadrant.
	safeX := Select(GreaterThan(Abs(x), C(0)), x, C(1))
	base := atanValue(Div(y, safeX))
	pi := C(math.Pi)
	yNonNeg := Select(GreaterThan(y, C(0)), C(1), Select(GreaterThan(C(0), y), C(-1), C(1)))
	negX := Add(base, Mul(yNonNeg, pi))
	zeroX := Scale(math.Pi/2, Sign(y))
	return Select(GreaterThan(x, C(0)), base, Select(GreaterThan(C(0), x), negX, zeroX))
}

// atanValue computes atan z by argument reduction and a Taylor series.
func atanValue(z S) S {
	a := Abs(z)
	big := GreaterThan(a, C(1))
	w := Select(big, Recip(Select(big, a, C(1))), a) // w in [0, 1]
	for range 2 {                                    // atan w = 2 atan(w / (1 + sqrt(1 + w²)))
		w = Div(w, Add(C(1), Sqrt(Add(C(1), Square(w)))))
	}
	// Taylor series atan w = w·Σ_k (−1)ᵏ w²ᵏ/(2k+1) on |w| ≤ tan(π/16) ≈ 0.199, k ≤ 12
	// (truncation error < 1e-19), by Horner's rule in w².
	q := Square(w)
	coef := func(k int) S {
		if k%2 == 1 {
			return C(-1 / float64(2*k+1))
		}
		return C(1 / float64(2*k+1))
	}
	poly := coef(12)
	for k := 11; k >= 0; k-- {
		poly = Add(coef(k), Mul(q, poly))
	}
	r := Scale(4, Mul(w, poly))
	r = Select(big, Sub(C(math.Pi/2), r), r)
	return Mul(Sign(z), r)
}
