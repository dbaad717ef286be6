package fit

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLBFGSBConcurrent(t *testing.T) {
	const (
		workers = 16
		n       = 4
	)
	lo, hi := filled(n, -2), filled(n, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	starts := make([][]float64, workers)
	for w := range starts {
		starts[w] = make([]float64, n)
		for i := range starts[w] {
			starts[w][i] = -3 + 6*rng.Float64() // some outside the box
		}
	}

	// Sequential reference results.
	want := make([]LBFGSBResult, workers)
	for w := range want {
		want[w] = LBFGSB(rosenbrock, starts[w], lo, hi, LBFGSBSettings{})
	}

	// A single "batch evaluator" goroutine serves every minimization, so the
	// objectives block while waiting for it.
	type reply struct {
		f float64
		g []float64
	}
	type request struct {
		x     []float64
		reply chan reply
	}
	requests := make(chan request)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := range requests {
			f, g, _ := rosenbrock(r.x)
			r.reply <- reply{f, g}
		}
	}()
	obj := func(x []float64) (float64, []float64, error) {
		ch := make(chan reply, 1)
		requests <- request{x, ch}
		r := <-ch
		return r.f, r.g, nil
	}

	got := make([]LBFGSBResult, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			got[w] = LBFGSB(obj, starts[w], lo, hi, LBFGSBSettings{})
		})
	}
	wg.Wait()
	close(requests)
	<-done

	for w := range workers {
		require.True(t, got[w].Converged, "worker %d: %s", w, got[w].Status)
		require.Equal(t, want[w].X, got[w].X, "worker %d", w)
		require.Equal(t, want[w].F, got[w].F, "worker %d", w)
		require.Equal(t, want[w].Iterations, got[w].Iterations, "worker %d", w)
		require.Equal(t, want[w].Evaluations, got[w].Evaluations, "worker %d", w)
		requireInBox(t, got[w].X, lo, hi)
	}
}

func TestLBFGSBObjectiveMayReuseBuffers(t *testing.T) {
	// The objective keeps the x it is given and returns the same gradient
	// buffer every time; the minimizer must copy what it needs.
	var kept [][]float64
	buf := make([]float64, 2)
	fn := func(x []float64) (float64, []float64, error) {
		kept = append(kept, x)
		f, g, _ := rosenbrock(x)
		copy(buf, g)
		return f, buf, nil
	}
	lo, hi := unbounded(2)
	res := LBFGSB(fn, []float64{-1.2, 1}, lo, hi, LBFGSBSettings{})
	require.True(t, res.Converged, res.Status)
	assert.InDeltaSlice(t, []float64{1, 1}, res.X, 1e-4)
	ref := LBFGSB(rosenbrock, []float64{-1.2, 1}, lo, hi, LBFGSBSettings{})
	assert.Equal(t, ref.X, res.X)
	for k := 1; k < len(kept); k++ {
		assert.NotSame(t, &kept[k][0], &kept[k-1][0], "each call gets a fresh x")
	}
}

func TestLBFGSBEdgeCases(t *testing.T) {
	t.Run("zero dimensions", func(t *testing.T) {
		res := LBFGSB(func([]float64) (float64, []float64, error) { return 3, nil, nil }, nil, nil, nil, LBFGSBSettings{})
		assert.True(t, res.Converged)
		assert.Equal(t, 3.0, res.F)
		assert.Equal(t, 1, res.Evaluations)
	})
	t.Run("start at the constrained optimum", func(t *testing.T) {
		res := LBFGSB(quadratic(quad3A, quad3C), []float64{1, -1, 0.3}, []float64{-1, -1, -inf}, []float64{1, inf, inf}, LBFGSBSettings{})
		assert.True(t, res.Converged)
		assert.Equal(t, "projected gradient below tolerance", res.Status)
		assert.Equal(t, 0, res.Iterations)
		assert.Equal(t, 1, res.Evaluations)
	})
	t.Run("all variables fixed", func(t *testing.T) {
		res := LBFGSB(rosenbrock, []float64{0, 0}, []float64{0.3, 0.4}, []float64{0.3, 0.4}, LBFGSBSettings{})
		assert.True(t, res.Converged)
		assert.Equal(t, []float64{0.3, 0.4}, res.X)
	})
	t.Run("settings defaults", func(t *testing.T) {
		s := LBFGSBSettings{Memory: -1, PGTol: math.NaN()}.withDefaults()
		assert.Equal(t, LBFGSBSettings{Memory: 10, MaxIter: 15000, MaxEval: 15000, PGTol: 1e-5, FTol: 2.220446049250313e-09}, s)
	})
}

func TestLBFGSBPanics(t *testing.T) {
	ok := rosenbrock
	tests := []struct {
		name       string
		fn         Objective
		x0, lo, hi []float64
	}{
		{"nil objective", nil, []float64{0}, []float64{-1}, []float64{1}},
		{"short lo", ok, []float64{0, 0}, []float64{-1}, []float64{1, 1}},
		{"long hi", ok, []float64{0, 0}, []float64{-1, -1}, []float64{1, 1, 1}},
		{"lo > hi", ok, []float64{0, 0}, []float64{-1, 2}, []float64{1, 1}},
		{"NaN bound", ok, []float64{0, 0}, []float64{-1, math.NaN()}, []float64{1, 1}},
		{"empty box", ok, []float64{0, 0}, []float64{inf, -1}, []float64{inf, 1}},
		{"gradient of wrong length", func([]float64) (float64, []float64, error) { return 1, []float64{1}, nil },
			[]float64{0, 0}, []float64{-1, -1}, []float64{1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, func() { LBFGSB(tc.fn, tc.x0, tc.lo, tc.hi, LBFGSBSettings{}) })
		})
	}
}

// TestCauchyPointIdentity checks the generalized Cauchy point against its
// closed form for B = I: the model is then separable and decreases along the
// whole path up to t = 1, so x^c = P(x − g).
func TestCauchyPointIdentity(t *testing.T) {
	lo := []float64{-1, -inf, 0, -2, 5, -1}
	hi := []float64{1, 0.5, inf, 2, 5, 1}
	x := []float64{0.5, 0, 0, 2, 5, 0.5}
	g := []float64{-3, -0.25, 1, -1, 7, 0}
	sv := &solver{box: newBox(lo, hi), set: LBFGSBSettings{}.withDefaults(), mem: newLBFGSMemory(5)}
	xcp, c, free := sv.cauchyPoint(x, g)
	assert.InDeltaSlice(t, []float64{1, 0.25, 0, 2, 5, 0.5}, xcp, 1e-14)
	assert.Empty(t, c)
	// Variable 0 reached its upper bound, 2 and 3 start at a bound the
	// gradient pushes against, 4 is fixed; 1 moved and stays free, 5 has a
	// zero gradient and is free.
	assert.Equal(t, []bool{false, true, false, false, false, true}, free)
}

// TestLBFGSMemory checks the compact representation: M must invert the
// middle matrix of (3.4), and B = θI − WMW' must satisfy the secant equation
// B s = y for the newest pair.
func TestLBFGSMemory(t *testing.T) {
	const n = 5
	rng := rand.New(rand.NewPCG(3, 4))
	// A symmetric positive definite "Hessian" generating y = H s.
	h := newMatrix(n, n)
	for i := range n {
		for j := range n {
			h[i][j] = 0.3 * math.Cos(float64(i*j+1))
		}
		h[i][i] += 3
	}
	for i := range n {
		for j := range i {
			h[i][j] = h[j][i]
		}
	}
	mem := newLBFGSMemory(3)
	for step := range 5 {
		s := make([]float64, n)
		y := make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		for i := range y {
			y[i] = dot(h[i], s)
		}
		require.True(t, mem.push(s, y, dot(s, y), dot(y, y)), "step %d", step)
		k := mem.k()
		require.Equal(t, min(step+1, 3), k)

		// Middle matrix K = [−D L'; L θS'S].
		km := newMatrix(2*k, 2*k)
		for a := range k {
			for b := range k {
				if a == b {
					km[a][b] = -dot(mem.s[a], mem.y[a])
				}
				if a > b {
					km[k+a][b] = dot(mem.s[a], mem.y[b])
					km[b][k+a] = km[k+a][b]
				}
				km[k+a][k+b] = mem.theta * dot(mem.s[a], mem.s[b])
			}
		}
		v := make([]float64, 2*k)
		for a := range v {
			v[a] = rng.NormFloat64()
		}
		mv := mem.mulM(v)
		for a := range v {
			assert.InDelta(t, v[a], dot(km[a], mv), 1e-9)
		}

		// Secant equation for the newest pair.
		w := mem.wMatrix(n)
		sNew, yNew := mem.s[k-1], mem.y[k-1]
		wts := make([]float64, 2*k)
		for i := range n {
			for a := range wts {
				wts[a] += w[i][a] * sNew[i]
			}
		}
		mwts := mem.mulM(wts)
		for i := range n {
			bs := mem.theta*sNew[i] - dot(w[i], mwts)
			assert.InDelta(t, yNew[i], bs, 1e-9)
		}
	}
}

// TestMoreThuente checks that the line search returns steps satisfying the
// strong Wolfe conditions on the one-dimensional test functions of [MT].
func TestMoreThuente(t *testing.T) {
	type phi func(a float64) (float64, float64)
	mt1 := func(a float64) (float64, float64) {
		const b = 2.0
		return -a / (a*a + b), (a*a - b) / ((a*a + b) * (a*a + b))
	}
	mt2 := func(a float64) (float64, float64) {
		const b = 0.004
		return math.Pow(a+b, 5) - 2*math.Pow(a+b, 4), 5*math.Pow(a+b, 4) - 8*math.Pow(a+b, 3)
	}
	tests := []struct {
		name   string
		f      phi
		stp0   float64
		stpmax float64
		want   mtStatus
	}{
		{"quadratic", func(a float64) (float64, float64) { return (a - 3) * (a - 3), 2 * (a - 3) }, 1, 1e10, mtConverged},
		{"MT function 1, small first step", mt1, 1e-3, 1e10, mtConverged},
		{"MT function 1, large first step", mt1, 1e3, 1e10, mtConverged},
		// φ'(0) ≈ −5e-7, so the curvature condition needs the minimizer to
		// about 1e-7: the interval-width (xtol) test stops it first.
		{"MT function 2, tiny initial slope", mt2, 1, 1e10, mtWarning},
		{"step limited by stpmax", mt1, 0.1, 0.2, mtWarning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f0, g0 := tc.f(0)
			var ls moreThuente
			ls.init(f0, g0, tc.stp0, 0, tc.stpmax)
			stp := tc.stp0
			for range 50 {
				f, g := tc.f(stp)
				next, status := ls.iterate(f, g, stp)
				if status == mtSearching {
					require.LessOrEqual(t, next, tc.stpmax)
					require.GreaterOrEqual(t, next, 0.0)
					stp = next
					continue
				}
				require.Equal(t, tc.want, status)
				assert.LessOrEqual(t, f, f0+lsFTol*stp*g0, "sufficient decrease")
				if status == mtConverged {
					assert.LessOrEqual(t, math.Abs(g), lsGTol*math.Abs(g0), "curvature condition")
				}
				return
			}
			t.Fatal("line search did not terminate")
		})
	}
}

// TestSubspaceMinBacktracks builds a case where the projection of the
// subspace Newton point onto the box is not a descent direction, so that the
// minimizer must fall back to truncating the Newton step at the first bound
// ([MN]). With H = [1 .99; .99 1] and two H-conjugate corrections, the
// L-BFGS matrix equals H.
func TestSubspaceMinBacktracks(t *testing.T) {
	h := [][]float64{{1, 0.99}, {0.99, 1}}
	mul := func(v []float64) []float64 { return []float64{dot(h[0], v), dot(h[1], v)} }
	mem := newLBFGSMemory(5)
	for _, s := range [][]float64{{1, 0}, {-0.99, 1}} {
		y := mul(s)
		require.True(t, mem.push(s, y, dot(s, y), dot(y, y)))
	}
	lo, hi := []float64{0, -10}, []float64{1, 10}
	sv := &solver{box: newBox(lo, hi), set: LBFGSBSettings{}.withDefaults(), mem: mem}

	// B must equal H.
	w := mem.wMatrix(2)
	for j := range 2 {
		e := []float64{0, 0}
		e[j] = 1
		mwe := mem.mulM([]float64{w[j][0], w[j][1], w[j][2], w[j][3]})
		for i := range 2 {
			assert.InDelta(t, h[i][j], mem.theta*e[i]-dot(w[i], mwe), 1e-12)
		}
	}

	// Newton step −H^{-1} g = (3, −2.9) from x = (0.9, 0).
	x := []float64{0.9, 0}
	newton := []float64{3, -2.9}
	hn := mul(newton)
	g := []float64{-hn[0], -hn[1]}
	xcp, c, free := sv.cauchyPoint(x, g)
	require.Equal(t, []bool{true, true}, free, "the Cauchy point should be interior")
	xbar, ok := sv.subspaceMin(x, g, xcp, c, free)
	require.True(t, ok)

	// Projection would give (1, −2.9), an ascent direction from x.
	proj := []float64{1, x[1] + newton[1]}
	require.Positive(t, (proj[0]-x[0])*g[0]+(proj[1]-x[1])*g[1])

	// Instead xbar is on the segment from xcp to the Newton point, where it
	// meets the bound x0 = 1.
	xn := []float64{x[0] + newton[0], x[1] + newton[1]}
	alpha := (1 - xcp[0]) / (xn[0] - xcp[0])
	assert.Equal(t, 1.0, xbar[0])
	assert.InDelta(t, xcp[1]+alpha*(xn[1]-xcp[1]), xbar[1], 1e-12)
	assert.Negative(t, (xbar[0]-x[0])*g[0]+(xbar[1]-x[1])*g[1], "descent direction")
}

func TestLBFGSBLineSearchFailure(t *testing.T) {
	lo, hi := unbounded(2)
	x0 := []float64{-1.2, 1}
	f0, _, _ := rosenbrock(x0)

	t.Run("gradient of the wrong sign", func(t *testing.T) {
		fn := func(x []float64) (float64, []float64, error) {
			f, g, _ := rosenbrock(x)
			return f, []float64{-g[0], -g[1]}, nil
		}
		res := LBFGSB(fn, x0, lo, hi, LBFGSBSettings{})
		assert.Equal(t, "line search failed", res.Status)
		assert.False(t, res.Converged)
		assert.NoError(t, res.Err)
		assert.Equal(t, 0, res.Iterations)
		assert.Equal(t, x0, res.X)
		assert.Equal(t, f0, res.F)
		assert.LessOrEqual(t, res.Evaluations, 1+lsMaxTrials)
	})

	t.Run("gradient turns wrong after some iterations", func(t *testing.T) {
		calls := 0
		fn := func(x []float64) (float64, []float64, error) {
			calls++
			f, g, _ := rosenbrock(x)
			if calls > 15 {
				g[0], g[1] = -g[0], -g[1]
			}
			return f, g, nil
		}
		res := LBFGSB(fn, x0, lo, hi, LBFGSBSettings{})
		assert.Equal(t, "line search failed", res.Status)
		assert.Positive(t, res.Iterations)
		assert.Less(t, res.F, f0)
		// Soon after the switch two line searches fail in a row (the
		// memory is discarded once before giving up).
		assert.LessOrEqual(t, res.Evaluations, 15+3*lsMaxTrials)
	})

	t.Run("finite only at the start", func(t *testing.T) {
		calls := 0
		fn := func(x []float64) (float64, []float64, error) {
			calls++
			if calls == 1 {
				return rosenbrock(x)
			}
			return inf, nil, nil
		}
		res := LBFGSB(fn, x0, lo, hi, LBFGSBSettings{})
		assert.Equal(t, "line search failed", res.Status)
		assert.Equal(t, x0, res.X)
		assert.Equal(t, f0, res.F)
		assert.Equal(t, 1+lsMaxNonFinite+1, res.Evaluations)
	})
}

// TestLBFGSBEvaluationLimitSweep stops Rosenbrock after every possible number
// of evaluations, including in the middle of line searches, and checks that
// the reported point is consistent, no worse than the start, and that the
// cap is exact.
func TestLBFGSBEvaluationLimitSweep(t *testing.T) {
	lo, hi := []float64{-2, -2}, []float64{0.5, 2}
	x0 := []float64{-1.2, 1}
	f0, _, _ := rosenbrock(x0)
	full := LBFGSB(rosenbrock, x0, lo, hi, LBFGSBSettings{})
	require.True(t, full.Converged)
	prevF := f0
	for maxEval := 1; maxEval < full.Evaluations; maxEval++ {
		calls := 0
		fn := func(x []float64) (float64, []float64, error) {
			calls++
			return rosenbrock(x)
		}
		res := LBFGSB(fn, x0, lo, hi, LBFGSBSettings{MaxEval: maxEval})
		require.Equal(t, "evaluation limit", res.Status, "MaxEval %d", maxEval)
		require.Equal(t, maxEval, res.Evaluations)
		require.Equal(t, maxEval, calls)
		requireConsistent(t, rosenbrock, res)
		requireInBox(t, res.X, lo, hi)
		require.LessOrEqual(t, res.F, prevF, "more evaluations never give a worse point")
		prevF = res.F
	}
}
