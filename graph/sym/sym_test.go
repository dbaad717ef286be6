package sym

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimplification(t *testing.T) {
	x, y := NewVar("x"), NewVar("y")
	tests := []struct {
		name string
		got  Expr
		want Expr
	}{
		{"x+0", Add(x, Zero), x},
		{"x*1", Mul(x, One), x},
		{"x*0", Mul(x, Zero), Zero},
		{"const fold", Add(C(2), Mul(C(3), C(4))), C(14)},
		{"like terms", Add(x, x, Scale(3, x)), Scale(5, x)},
		{"cancel", Sub(Mul(x, y), Mul(y, x)), Zero},
		{"commutative", Add(x, y), Add(y, x)},
		{"interned", Sin(Add(x, y)), Sin(Add(y, x))},
		{"recip recip", Recip(Recip(x)), x},
		{"x*x", Mul(x, x), Square(x)},
		{"neg neg", Neg(Neg(x)), x},
		{"sin const", Sin(C(0)), Zero},
		{"pow", Pow(x, 3), Mul(Square(x), x)},
		{"square of scaled", Square(Scale(-2, x)), Scale(4, Square(x))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Same(t, tc.want, tc.got, "got %s want %s", tc.got, tc.want)
		})
	}
}

func TestDependsOn(t *testing.T) {
	x, y, z := NewVar("x"), NewVar("y"), NewVar("z")
	e := Mul(Sin(x), Add(y, C(1)))
	assert.True(t, e.DependsOn(x))
	assert.True(t, e.DependsOn(y))
	assert.False(t, e.DependsOn(z))
	assert.Same(t, Zero, Diff(e, z))
}

// randomExpr builds a random smooth expression of the variables, away from singularities for
// inputs in [-1, 1].
func randomExpr(r *rand.Rand, vars Vec, depth int) Expr {
	if depth == 0 || r.IntN(4) == 0 {
		if r.IntN(5) == 0 {
			return C(r.Float64()*2 - 1)
		}
		return vars[r.IntN(len(vars))]
	}
	a := randomExpr(r, vars, depth-1)
	b := randomExpr(r, vars, depth-1)
	switch r.IntN(12) {
	case 0:
		return Add(a, b)
	case 1:
		return Mul(a, b)
	case 2:
		return Sub(a, Scale(0.7, b))
	case 3:
		return Div(a, Add(C(3), Square(b)))
	case 4:
		return Sqrt(Add(C(2), Square(a)))
	case 5:
		return Sin(a)
	case 6:
		return Cos(b)
	case 7:
		return Exp(Scale(0.3, a))
	case 8:
		return Log(Add(C(2.5), Sin(a)))
	case 9:
		return Tanh(a)
	case 10:
		return Atan2(Add(C(0.5), Square(a)), b)
	default:
		return Square(Add(a, b))
	}
}

func evalAt(e Expr, vars Vec, x []float64) float64 {
	return Eval(e, Bind(nil, vars, x))
}

func centralDiff(f func([]float64) float64, x []float64, j int, h float64) float64 {
	xp := append([]float64(nil), x...)
	xm := append([]float64(nil), x...)
	xp[j] += h
	xm[j] -= h
	return (f(xp) - f(xm)) / (2 * h)
}

func relErr(got, want float64) float64 {
	return math.Abs(got-want) / math.Max(1, math.Abs(want))
}

// TestDerivativesAgainstFiniteDifferences checks first, second and third derivatives of random
// expressions against central finite differences of the next-lower order.
func TestDerivativesAgainstFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vars := NewVars("v", 3)
	for trial := range 60 {
		e := randomExpr(r, vars, 4)
		x := []float64{r.Float64()*2 - 1, r.Float64()*2 - 1, r.Float64()*2 - 1}
		i, j, k := r.IntN(3), r.IntN(3), r.IntN(3)
		d1 := Diff(e, vars[i])
		d2 := Diff(d1, vars[j])
		d3 := Diff(d2, vars[k])
		cases := []struct {
			order    int
			exact    Expr
			lower    Expr
			wrt      int
			tol      float64
			stepSize float64
		}{
			{1, d1, e, i, 1e-8, 1e-5},
			{2, d2, d1, j, 1e-8, 1e-5},
			{3, d3, d2, k, 1e-7, 1e-5},
		}
		for _, c := range cases {
			got := evalAt(c.exact, vars, x)
			want := centralDiff(func(z []float64) float64 { return evalAt(c.lower, vars, z) }, x, c.wrt, c.stepSize)
			require.Less(t, relErr(got, want), c.tol,
				"trial %d order %d: d/d%s of %s at %v: symbolic %g, finite difference %g", trial, c.order, vars[c.wrt], c.lower, x, got, want)
		}
	}
}

func TestJacobianHessian(t *testing.T) {
	x := NewVars("x", 2)
	f := Vec{Mul(x[0], Sin(x[1])), Add(Square(x[0]), Exp(x[1]))}
	J := Jacobian(f, x)
	at := []float64{0.3, -1.2}
	b := Bind(nil, x, at)
	want := [][]float64{{math.Sin(at[1]), at[0] * math.Cos(at[1])}, {2 * at[0], math.Exp(at[1])}}
	for i := range want {
		for j := range want[i] {
			assert.InDelta(t, want[i][j], Eval(J[i][j], b), 1e-15)
		}
	}
	H := Hessian(Mul(Square(x[0]), x[1]), x, x)
	assert.InDelta(t, 2*at[1], Eval(H[0][0], b), 1e-15)
	assert.InDelta(t, 2*at[0], Eval(H[0][1], b), 1e-15)
	assert.InDelta(t, 2*at[0], Eval(H[1][0], b), 1e-15)
	assert.Same(t, Zero, H[1][1])
}

func TestSubst(t *testing.T) {
	x, v := NewVar("x"), NewVar("v")
	e := Add(x, Mul(C(0.1), x, v))
	assert.Same(t, x, Subst(e, map[*Node]Expr{v: Zero}))
	assert.Same(t, Add(C(2), Scale(0.2, v)), Subst(e, map[*Node]Expr{x: C(2)}))
}

func TestAtan2AndWrap(t *testing.T) {
	y, x := NewVar("y"), NewVar("x")
	e := Atan2(y, x)
	for _, p := range [][2]float64{{1, 1}, {1, -1}, {-1, -1}, {-0.3, 2}, {0, -1}, {2, 0}} {
		b := map[*Node]float64{y: p[0], x: p[1]}
		assert.InDelta(t, math.Atan2(p[0], p[1]), Eval(e, b), 1e-15)
		r2 := p[0]*p[0] + p[1]*p[1]
		assert.InDelta(t, p[1]/r2, Eval(Diff(e, y), b), 1e-15)
		assert.InDelta(t, -p[0]/r2, Eval(Diff(e, x), b), 1e-15)
	}
	w := Wrap(x)
	for _, a := range []float64{0, 3, 3.2, -3.2, 7, -10} {
		got := Eval(w, map[*Node]float64{x: a})
		assert.GreaterOrEqual(t, got, -math.Pi)
		assert.Less(t, got, math.Pi)
		assert.InDelta(t, 0, math.Remainder(got-a, 2*math.Pi), 1e-12, fmt.Sprint(a))
	}
	assert.Same(t, One, Diff(w, x))
}

// TestSubstSubexpression replaces a subexpression that is not a variable.
func TestSubstSubexpression(t *testing.T) {
	x, y, z := NewVar("x"), NewVar("y"), NewVar("z")
	a := Atan2(y, x)
	e := Add(Mul(C(3), a), Sin(a), x)
	got := Subst(e, map[*Node]Expr{a: z})
	assert.Equal(t, Add(Mul(C(3), z), Sin(z), x), got)
	assert.Equal(t, Add(C(3), Cos(z)), Diff(got, z))
}
