package fit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var inf = math.Inf(1)

// unbounded returns the bounds of R^n.
func unbounded(n int) (lo, hi []float64) {
	lo, hi = make([]float64, n), make([]float64, n)
	for i := range lo {
		lo[i], hi[i] = -inf, inf
	}
	return lo, hi
}

// filled returns a slice of n copies of v.
func filled(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// rosenbrock is scipy's rosen: Σ 100 (x_{i+1} − x_i²)² + (1 − x_i)².
func rosenbrock(x []float64) (float64, []float64, error) {
	f := 0.0
	g := make([]float64, len(x))
	for i := 0; i < len(x)-1; i++ {
		a := x[i+1] - x[i]*x[i]
		b := 1 - x[i]
		f += 100*a*a + b*b
		g[i] += -400*x[i]*a - 2*b
		g[i+1] += 200 * a
	}
	return f, g, nil
}

// quadratic returns ½ (x − c)' A (x − c) for a symmetric positive definite A.
func quadratic(a [][]float64, c []float64) Objective {
	return func(x []float64) (float64, []float64, error) {
		n := len(x)
		g := make([]float64, n)
		f := 0.0
		for i := range n {
			for j := range n {
				g[i] += a[i][j] * (x[j] - c[j])
			}
			f += 0.5 * (x[i] - c[i]) * g[i]
		}
		return f, g, nil
	}
}

// coupled is a smooth, slightly non-quadratic test function in any dimension:
// Σ (i+1)(x_i − 2)² + Σ x_i x_{i+1} + 0.1 Σ sin(3 x_i).
func coupled(x []float64) (float64, []float64, error) {
	n := len(x)
	f := 0.0
	g := make([]float64, n)
	for i := range n {
		w := float64(i + 1)
		f += w*(x[i]-2)*(x[i]-2) + 0.1*math.Sin(3*x[i])
		g[i] += 2*w*(x[i]-2) + 0.3*math.Cos(3*x[i])
		if i < n-1 {
			f += x[i] * x[i+1]
			g[i] += x[i+1]
			g[i+1] += x[i]
		}
	}
	return f, g, nil
}

// quad3A and quad3C define a coupled three-dimensional quadratic used in
// several tests.
var (
	quad3A = [][]float64{{4, 1, 0.5}, {1, 3, 0.2}, {0.5, 0.2, 2}}
	quad3C = []float64{2, -3, 0.25}
)

// recorder wraps an objective and records every point it is evaluated at.
type recorder struct {
	fn     Objective
	mu     sync.Mutex
	points [][]float64
}

func (r *recorder) eval(x []float64) (float64, []float64, error) {
	r.mu.Lock()
	r.points = append(r.points, append([]float64(nil), x...))
	r.mu.Unlock()
	return r.fn(x)
}

// requireInBox asserts lo <= x <= hi componentwise.
func requireInBox(t *testing.T, x, lo, hi []float64, msgAndArgs ...any) {
	t.Helper()
	for i := range x {
		require.Falsef(t, math.IsNaN(x[i]), "x[%d] is NaN %v", i, msgAndArgs)
		require.GreaterOrEqualf(t, x[i], lo[i], "x[%d] below its lower bound %v", i, msgAndArgs)
		require.LessOrEqualf(t, x[i], hi[i], "x[%d] above its upper bound %v", i, msgAndArgs)
	}
}

// requireKKT checks the first-order optimality conditions of the box problem
// at res: a variable at its lower bound has g_i >= −tol, one at its upper
// bound g_i <= tol, a free one |g_i| <= tol; and the projected gradient norm
// used by the stopping test is at most tol.
func requireKKT(t *testing.T, res LBFGSBResult, lo, hi []float64, tol float64) {
	t.Helper()
	for i, gi := range res.Grad {
		switch {
		case res.X[i] == lo[i] && res.X[i] == hi[i]:
			// Fixed variable: no sign condition.
		case res.X[i] == lo[i]:
			assert.GreaterOrEqualf(t, gi, -tol, "variable %d at its lower bound needs g >= 0", i)
		case res.X[i] == hi[i]:
			assert.LessOrEqualf(t, gi, tol, "variable %d at its upper bound needs g <= 0", i)
		default:
			assert.LessOrEqualf(t, math.Abs(gi), tol, "free variable %d needs g = 0", i)
		}
	}
	assert.LessOrEqual(t, newBox(lo, hi).projGradNorm(res.X, res.Grad), tol)
}

// requireConsistent checks that F and Grad are the objective's values at X.
func requireConsistent(t *testing.T, fn Objective, res LBFGSBResult) {
	t.Helper()
	f, g, err := fn(res.X)
	require.NoError(t, err)
	require.Equal(t, f, res.F, "F must be f(X)")
	require.Equal(t, g, res.Grad, "Grad must be the gradient at X")
}

func TestLBFGSBUnconstrainedQuadratics(t *testing.T) {
	tests := []struct {
		name string
		a    [][]float64
		c    []float64
		x0   []float64
	}{
		{"1-D", [][]float64{{2}}, []float64{3}, []float64{-10}},
		{"3-D coupled", quad3A, quad3C, []float64{0, 0, 0}},
		{"ill-conditioned diagonal", [][]float64{{1, 0, 0}, {0, 1e3, 0}, {0, 0, 1e6}}, []float64{1, -2, 3}, []float64{10, 10, 10}},
		{"6-D tridiagonal", func() [][]float64 {
			a := newMatrix(6, 6)
			for i := range 6 {
				a[i][i] = 4
				if i > 0 {
					a[i][i-1], a[i-1][i] = -1, -1
				}
			}
			return a
		}(), []float64{1, 2, 3, -1, -2, -3}, filled(6, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := unbounded(len(tc.x0))
			fn := quadratic(tc.a, tc.c)
			// FTol is effectively disabled so that the projected-gradient
			// test decides.
			res := LBFGSB(fn, tc.x0, lo, hi, LBFGSBSettings{PGTol: 1e-8, FTol: 1e-20})
			require.Equal(t, "projected gradient below tolerance", res.Status)
			require.True(t, res.Converged)
			require.NoError(t, res.Err)
			assert.InDeltaSlice(t, tc.c, res.X, 1e-7)
			assert.InDelta(t, 0, res.F, 1e-12)
			requireConsistent(t, fn, res)
		})
	}
}

func TestLBFGSBRosenbrock(t *testing.T) {
	tests := []struct {
		name string
		x0   []float64
		mem  int
	}{
		{"2-D from (-1.2, 1)", []float64{-1.2, 1}, 0},
		{"5-D from scipy's tutorial start", []float64{1.3, 0.7, 0.8, 1.9, 1.2}, 0},
		{"2-D with memory 1", []float64{-1.2, 1}, 1},
		{"10-D alternating start, memory 3", []float64{-1.2, 1, -1.2, 1, -1.2, 1, -1.2, 1, -1.2, 1}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := unbounded(len(tc.x0))
			res := LBFGSB(rosenbrock, tc.x0, lo, hi, LBFGSBSettings{Memory: tc.mem, PGTol: 1e-9, FTol: 1e-15})
			require.True(t, res.Converged, res.Status)
			assert.InDeltaSlice(t, filled(len(tc.x0), 1), res.X, 1e-5)
			assert.Less(t, res.F, 1e-10)
			requireConsistent(t, rosenbrock, res)
		})
	}
}

func TestLBFGSBActiveBounds(t *testing.T) {
	// Separable quadratic Σ w_i (x_i − c_i)².
	sep := func(w, c []float64) Objective {
		return func(x []float64) (float64, []float64, error) {
			f := 0.0
			g := make([]float64, len(x))
			for i := range x {
				f += w[i] * (x[i] - c[i]) * (x[i] - c[i])
				g[i] = 2 * w[i] * (x[i] - c[i])
			}
			return f, g, nil
		}
	}
	tests := []struct {
		name   string
		fn     Objective
		x0     []float64
		lo, hi []float64
		want   []float64
	}{
		{
			name: "lower bounds active",
			fn:   sep([]float64{1, 2, 3}, []float64{-5, -1, -2}),
			x0:   []float64{1, 1, 1},
			lo:   []float64{0, 0, 0}, hi: []float64{inf, inf, inf},
			want: []float64{0, 0, 0},
		},
		{
			name: "upper bounds active",
			fn:   sep([]float64{1, 2, 3}, []float64{5, 10, 2}),
			x0:   []float64{0, 0, 0},
			lo:   []float64{-inf, -inf, -inf}, hi: []float64{1, 2, 1.5},
			want: []float64{1, 2, 1.5},
		},
		{
			name: "both sides active in a box",
			fn:   sep([]float64{1, 1}, []float64{-3, 3}),
			x0:   []float64{0.2, -0.2},
			lo:   []float64{-1, -1}, hi: []float64{1, 1},
			want: []float64{-1, 1},
		},
		{
			// Coupled quadratic: x0 at its upper bound (g0 = −1.975), x1 at its
			// lower bound (g1 = 5.01), x2 free where 0.5(x0−2) + 0.2(x1+3) +
			// 2(x2−0.25) = 0, i.e. x2 = 0.3.
			name: "mixed, coupled",
			fn:   quadratic(quad3A, quad3C),
			x0:   []float64{5, 5, 5},
			lo:   []float64{-1, -1, -inf}, hi: []float64{1, inf, inf},
			want: []float64{1, -1, 0.3},
		},
		{
			// Along x ≤ 0.5 Rosenbrock is at least (1 − x)², which is smallest at
			// x = 0.5, reached with y = x² = 0.25; there ∂f/∂x = −1 < 0.
			name: "Rosenbrock with x <= 0.5",
			fn:   rosenbrock,
			x0:   []float64{-1.2, 1},
			lo:   []float64{-inf, -inf}, hi: []float64{0.5, inf},
			want: []float64{0.5, 0.25},
		},
		{
			name: "fixed variable lo == hi",
			fn:   quadratic(quad3A, quad3C),
			x0:   []float64{0, 7, 0},
			lo:   []float64{-inf, 0.5, -inf}, hi: []float64{inf, 0.5, inf},
			// With x1 = 0.5 fixed the free block solves
			// [4 .5; .5 2] (x0−2, x2−0.25) = −(1, 0.2)·3.5.
			want: func() []float64 {
				r0, r2 := -3.5, -0.7
				det := 4*2 - 0.25
				return []float64{2 + (2*r0-0.5*r2)/det, 0.5, 0.25 + (4*r2-0.5*r0)/det}
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := LBFGSB(tc.fn, tc.x0, tc.lo, tc.hi, LBFGSBSettings{PGTol: 1e-9})
			require.True(t, res.Converged, res.Status)
			assert.InDeltaSlice(t, tc.want, res.X, 1e-7)
			requireInBox(t, res.X, tc.lo, tc.hi)
			requireKKT(t, res, tc.lo, tc.hi, 1e-6)
			requireConsistent(t, tc.fn, res)
		})
	}
}

func TestLBFGSBStaysInBox(t *testing.T) {
	tests := []struct {
		name   string
		fn     Objective
		x0     []float64
		lo, hi []float64
	}{
		{"Rosenbrock, start far outside", rosenbrock, []float64{-100, 250}, []float64{-2, -2}, []float64{0.5, 2}},
		{"Rosenbrock 6-D, one-sided bounds", rosenbrock, []float64{-5, 5, -5, 5, -5, 5},
			[]float64{-0.5, -inf, 0.2, -inf, -0.5, 0.3}, []float64{inf, 0.7, inf, 3, 0.7, inf}},
		{"coupled 8-D box, start outside on both sides", coupled, []float64{-9, 9, -9, 9, -9, 9, -9, 9}, filled(8, -1), filled(8, 1.5)},
		{"coupled 5-D with a fixed variable", coupled, []float64{10, 10, 10, 10, 10},
			[]float64{-1, 0.25, -inf, -inf, 0}, []float64{1, 0.25, 1.75, inf, inf}},
		{"mixed quadratic", quadratic(quad3A, quad3C), []float64{5, -5, 5}, []float64{-1, -1, -inf}, []float64{1, inf, inf}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{fn: tc.fn}
			res := LBFGSB(rec.eval, tc.x0, tc.lo, tc.hi, LBFGSBSettings{PGTol: 1e-9, FTol: 1e-15})
			require.True(t, res.Converged, res.Status)
			require.Equal(t, len(rec.points), res.Evaluations)

			// The first evaluation is at the projection of x0.
			want := make([]float64, len(tc.x0))
			for i, v := range tc.x0 {
				want[i] = math.Min(math.Max(v, tc.lo[i]), tc.hi[i])
			}
			require.Equal(t, want, rec.points[0])
			for k, p := range rec.points {
				requireInBox(t, p, tc.lo, tc.hi, "evaluation", k)
			}
			requireInBox(t, res.X, tc.lo, tc.hi)
			requireKKT(t, res, tc.lo, tc.hi, 1e-6)
		})
	}
}

func TestLBFGSBNonFiniteRegion(t *testing.T) {
	// Both smooth functions have their minimum at (1.5, 0.5); the objective
	// is not finite where x0 > 2.
	quad := func(x []float64) (float64, []float64) {
		return (x[0]-1.5)*(x[0]-1.5) + 10*(x[1]-0.5)*(x[1]-0.5),
			[]float64{2 * (x[0] - 1.5), 20 * (x[1] - 0.5)}
	}
	// Pseudo-Huber: almost linear far from the minimum, so the quasi-Newton
	// curvature estimate is small there and the steps overshoot.
	huber := func(x []float64) (float64, []float64) {
		a, b := x[0]-1.5, x[1]-0.5
		ra, rb := math.Sqrt(1+a*a), math.Sqrt(1+b*b)
		return ra + rb, []float64{a / ra, b / rb}
	}
	infinite := func([]float64) (float64, []float64, error) { return inf, nil, nil }
	tests := []struct {
		name   string
		base   func(x []float64) (float64, []float64)
		bad    func(x []float64) (float64, []float64, error)
		x0     []float64
		lo, hi []float64
	}{
		{"+Inf", quad, infinite, []float64{-8, 3}, filled(2, -10), filled(2, 10)},
		{"NaN", quad, func([]float64) (float64, []float64, error) { return math.NaN(), nil, nil }, []float64{-8, 3}, filled(2, -10), filled(2, 10)},
		{"-Inf", quad, func([]float64) (float64, []float64, error) { return math.Inf(-1), nil, nil }, []float64{-8, 3}, filled(2, -10), filled(2, 10)},
		{"finite f, NaN gradient", quad, func([]float64) (float64, []float64, error) {
			return 0, []float64{math.NaN(), 0}, nil
		}, []float64{-8, 3}, filled(2, -10), filled(2, 10)},
		{"+Inf, steep and wide box", func(x []float64) (float64, []float64) {
			f, g := quad(x)
			return 1e6 * f, []float64{1e6 * g[0], 1e6 * g[1]}
		}, infinite, []float64{0, 0}, filled(2, -1e4), filled(2, 1e4)},
		{"+Inf, pseudo-Huber, one-sided bounds", huber, infinite, []float64{-30, 3}, []float64{-50, -inf}, []float64{inf, inf}},
		{"+Inf, pseudo-Huber, unbounded", huber, infinite, []float64{-30, 3}, []float64{-inf, -inf}, []float64{inf, inf}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nonFinite := 0
			fn := func(x []float64) (float64, []float64, error) {
				if x[0] > 2 {
					nonFinite++
					return tc.bad(x)
				}
				f, g := tc.base(x)
				return f, g, nil
			}
			rec := &recorder{fn: fn}
			res := LBFGSB(rec.eval, tc.x0, tc.lo, tc.hi, LBFGSBSettings{PGTol: 1e-8})
			require.True(t, res.Converged, res.Status)
			assert.Positive(t, nonFinite, "the test should hit the non-finite region")
			assert.InDeltaSlice(t, []float64{1.5, 0.5}, res.X, 1e-6)
			assert.LessOrEqual(t, res.X[0], 2.0)
			assert.False(t, math.IsNaN(res.F) || math.IsInf(res.F, 0))
			for _, p := range rec.points {
				requireInBox(t, p, tc.lo, tc.hi)
			}
		})
	}
}

func TestLBFGSBInitialPointNotFinite(t *testing.T) {
	nan := func([]float64) (float64, []float64, error) { return math.NaN(), nil, nil }
	lo, hi := unbounded(2)

	res := LBFGSB(nan, []float64{1, 2}, lo, hi, LBFGSBSettings{})
	assert.Equal(t, "initial point not finite", res.Status)
	assert.False(t, res.Converged)
	assert.Equal(t, 1, res.Evaluations)
	assert.Equal(t, 0, res.Iterations)
	assert.NoError(t, res.Err)

	calls := 0
	res = LBFGSB(func(x []float64) (float64, []float64, error) {
		calls++
		return rosenbrock(x)
	}, []float64{math.NaN(), 2}, lo, hi, LBFGSBSettings{})
	assert.Equal(t, "initial point not finite", res.Status)
	assert.Equal(t, 0, res.Evaluations)
	assert.Equal(t, 0, calls)
}

func TestLBFGSBObjectiveError(t *testing.T) {
	for _, failAt := range []int{1, 2, 5, 12} {
		t.Run(fmt.Sprintf("error on evaluation %d", failAt), func(t *testing.T) {
			calls := 0
			fn := func(x []float64) (float64, []float64, error) {
				calls++
				if calls == failAt {
					return 0, nil, fmt.Errorf("batch evaluator: %w", context.Canceled)
				}
				return rosenbrock(x)
			}
			lo, hi := []float64{-2, -2}, []float64{2, 2}
			res := LBFGSB(fn, []float64{-1.2, 1}, lo, hi, LBFGSBSettings{})
			require.Error(t, res.Err)
			assert.ErrorIs(t, res.Err, context.Canceled)
			assert.Equal(t, "aborted: batch evaluator: context canceled", res.Status)
			assert.False(t, res.Converged)
			assert.Equal(t, failAt, res.Evaluations)
			assert.Equal(t, failAt, calls, "no evaluation after the error")
			requireInBox(t, res.X, lo, hi)
			if failAt == 1 {
				assert.True(t, math.IsNaN(res.F))
				assert.Equal(t, []float64{-1.2, 1}, res.X)
			} else {
				requireConsistent(t, rosenbrock, res)
			}
		})
	}
}

func TestLBFGSBLimits(t *testing.T) {
	lo, hi := unbounded(2)
	x0 := []float64{-1.2, 1}
	f0, _, _ := rosenbrock(x0)

	t.Run("MaxIter", func(t *testing.T) {
		for _, maxIter := range []int{1, 5, 10} {
			res := LBFGSB(rosenbrock, x0, lo, hi, LBFGSBSettings{MaxIter: maxIter})
			assert.Equal(t, "iteration limit", res.Status)
			assert.False(t, res.Converged)
			assert.NoError(t, res.Err)
			assert.Equal(t, maxIter, res.Iterations)
			assert.Less(t, res.F, f0)
			requireConsistent(t, rosenbrock, res)
		}
	})

	t.Run("MaxEval", func(t *testing.T) {
		for _, maxEval := range []int{1, 2, 3, 7, 20} {
			calls := 0
			fn := func(x []float64) (float64, []float64, error) {
				calls++
				return rosenbrock(x)
			}
			res := LBFGSB(fn, x0, lo, hi, LBFGSBSettings{MaxEval: maxEval})
			assert.Equal(t, "evaluation limit", res.Status, "MaxEval %d", maxEval)
			assert.False(t, res.Converged)
			assert.Equal(t, maxEval, res.Evaluations, "MaxEval %d", maxEval)
			assert.Equal(t, calls, res.Evaluations)
			assert.LessOrEqual(t, res.F, f0)
			requireConsistent(t, rosenbrock, res)
		}
	})

	t.Run("convergence wins over limits that are not reached", func(t *testing.T) {
		res := LBFGSB(rosenbrock, x0, lo, hi, LBFGSBSettings{MaxIter: 100, MaxEval: 200})
		assert.True(t, res.Converged, res.Status)
		assert.LessOrEqual(t, res.Iterations, 100)
		assert.LessOrEqual(t, res.Evaluations, 200)
	})
}

// TestLBFGSBMatchesScipy compares with scipy 1.17.1
// minimize(fun, x0, jac=jac, method="L-BFGS-B", bounds=...) at default
// options. The bounded problems have minimizers that can be derived by hand
// (see TestLBFGSBActiveBounds), and "scipy's TestLBFGSBBounds" is the problem
// of scipy's own test suite (½‖x‖², x0 >= 1, infeasible start (0, −1)),
// whose answer (1, 0) is immediate. On amd64 the iteration and evaluation
// counts agree exactly; a small slack allows for fused multiply–adds on
// other architectures.
func TestLBFGSBMatchesScipy(t *testing.T) {
	halfNorm := func(x []float64) (float64, []float64, error) {
		return 0.5 * (x[0]*x[0] + x[1]*x[1]), []float64{x[0], x[1]}, nil
	}
	tests := []struct {
		name       string
		fn         Objective
		x0         []float64
		lo, hi     []float64
		settings   LBFGSBSettings
		nit, nfev  int
		f          float64
		x          []float64
		status     string
		xTol, fTol float64
	}{
		{
			name: "scipy's TestLBFGSBBounds", fn: halfNorm,
			x0: []float64{0, -1}, lo: []float64{1, -inf}, hi: []float64{inf, inf},
			nit: 1, nfev: 2, f: 0.5, x: []float64{1, 0},
			status: "projected gradient below tolerance", xTol: 1e-12, fTol: 1e-12,
		},
		{
			name: "mixed coupled quadratic", fn: quadratic(quad3A, quad3C),
			x0: []float64{5, 5, 5}, lo: []float64{-1, -1, -inf}, hi: []float64{1, inf, inf},
			nit: 4, nfev: 5, f: 5.9975, x: []float64{1, -1, 0.3},
			status: "projected gradient below tolerance", xTol: 1e-9, fTol: 1e-9,
		},
		{
			name: "coupled quadratic in the unit cube", fn: quadratic(quad3A, quad3C),
			x0: []float64{0.5, 0.5, 0.5}, lo: filled(3, 0), hi: filled(3, 1),
			nit: 3, nfev: 4, f: 12.4975, x: []float64{1, 0, 0.2},
			status: "projected gradient below tolerance", xTol: 1e-9, fTol: 1e-9,
		},
		{
			name: "Rosenbrock with x <= 0.5", fn: rosenbrock,
			x0: []float64{-1.2, 1}, lo: []float64{-inf, -inf}, hi: []float64{0.5, inf},
			nit: 20, nfev: 29, f: 0.25, x: []float64{0.5, 0.25},
			status: "projected gradient below tolerance", xTol: 1e-6, fTol: 1e-9,
		},
		{
			name: "Rosenbrock 2-D unconstrained", fn: rosenbrock,
			x0: []float64{-1.2, 1}, lo: filled(2, -inf), hi: filled(2, inf),
			nit: 36, nfev: 44, f: 2.8076498487712216e-12, x: []float64{0.999998945349282, 0.9999980209057328},
			status: "relative reduction of f below tolerance", xTol: 1e-9, fTol: 1e-15,
		},
		{
			name: "Rosenbrock 5-D unconstrained", fn: rosenbrock,
			x0: []float64{1.3, 0.7, 0.8, 1.9, 1.2}, lo: filled(5, -inf), hi: filled(5, inf),
			nit: 24, nfev: 26, f: 1.3003448967631297e-12,
			x:      []float64{1.0000001063151185, 1.0000002130794126, 1.0000004591484999, 1.0000009075913046, 1.0000018449804886},
			status: "relative reduction of f below tolerance", xTol: 1e-9, fTol: 1e-15,
		},
		{
			name: "Rosenbrock 2-D, maxiter=5", fn: rosenbrock,
			x0: []float64{-1.2, 1}, lo: filled(2, -inf), hi: filled(2, inf), settings: LBFGSBSettings{MaxIter: 5},
			nit: 5, nfev: 7, f: 4.087545016268825, x: []float64{-1.021385160033696, 1.0392943881350645},
			status: "iteration limit", xTol: 1e-9, fTol: 1e-9,
		},
		{
			name: "coupled 8-D box", fn: coupled,
			x0: filled(8, 0), lo: filled(8, -1), hi: filled(8, 1.5),
			nit: 7, nfev: 8, f: 23.865959794808251,
			x:      []float64{1.408430239963, 1.323558639745, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5},
			status: "projected gradient below tolerance", xTol: 1e-9, fTol: 1e-12,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := LBFGSB(tc.fn, tc.x0, tc.lo, tc.hi, tc.settings)
			assert.Equal(t, tc.status, res.Status)
			assert.InDelta(t, tc.f, res.F, tc.fTol)
			assert.InDeltaSlice(t, tc.x, res.X, tc.xTol)
			assert.InDelta(t, tc.nit, res.Iterations, 2)
			assert.InDelta(t, tc.nfev, res.Evaluations, 3)
		})
	}
}
