package fit

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corrQuadA is a 5-D Hessian as ill-conditioned and correlated as a fit's negative
// log-likelihood in its fitting scale (L L' of a lower triangle L: the first two parameters
// at ρ ≈ −0.97, eigenvalues from about 0.03 to 800), corrQuadC its quadratic's minimum.
var (
	corrQuadA = func() [][]float64 {
		l := [][]float64{
			{20, 0, 0, 0, 0},
			{-19.4, 4.8, 0, 0, 0},
			{0.5, 1.0, 7, 0, 0},
			{0, 0.3, 0.4, 1.3, 0},
			{0.1, 0.02, 0, 0.05, 0.2},
		}
		a := newMatrix(5, 5)
		for i := range 5 {
			for j := range 5 {
				for k := range 5 {
					a[i][j] += l[i][k] * l[j][k]
				}
			}
		}
		return a
	}()
	corrQuadC = []float64{-2.5, -1.7, 0.3, -0.4, -6}
)

// scaled returns a copy of a with entry (i, j) multiplied by 1 + e·((i + j + 2·min(i, j))
// mod 3 − 1), symmetric in i and j: a Hessian up to e off, as a similar subject's would be.
func scaled(a [][]float64, e float64) [][]float64 {
	n := len(a)
	b := newMatrix(n, n)
	for i := range n {
		for j := range n {
			b[i][j] = a[i][j] * (1 + e*float64((i+j+2*min(i, j))%3-1))
		}
	}
	return b
}

// TestLBFGSBCurvature: a memory started from a Hessian estimate reaches the same minimum in
// far fewer evaluations: from the exact Hessian one Newton step on a quadratic, from one 10 %
// off a few; with active bounds; where the estimate is not positive definite (only its
// convex directions used); and on a non-quadratic function.
func TestLBFGSBCurvature(t *testing.T) {
	n := len(corrQuadC)
	free, freeHi := unbounded(n)
	negative := scaled(corrQuadA, 0)
	negative[4][4] = -0.5 // one eigenvalue below 0
	boxLo, boxHi := filled(n, -3), filled(n, 3)
	boxLo[1], boxLo[4] = -1.5, -5.5 // two bounds active at the minimum
	tests := []struct {
		name      string
		fn        Objective
		lo, hi    []float64
		curvature [][]float64
		maxEvals  int // with the curvature, at most
	}{
		{"exact Hessian", quadratic(corrQuadA, corrQuadC), free, freeHi, corrQuadA, 3},
		{"Hessian 10 % off", quadratic(corrQuadA, corrQuadC), free, freeHi, scaled(corrQuadA, 0.1), 15},
		{"bounds active", quadratic(corrQuadA, corrQuadC), boxLo, boxHi, scaled(corrQuadA, 0.1), 15},
		{"not positive definite", quadratic(corrQuadA, corrQuadC), boxLo, boxHi, negative, 25},
		{"non-quadratic", coupled, free, freeHi, [][]float64{
			{2, 1, 0, 0, 0}, {1, 4, 1, 0, 0}, {0, 1, 6, 1, 0}, {0, 0, 1, 8, 1}, {0, 0, 0, 1, 10}}, 12},
	}
	x0 := []float64{-2, -2.3, 0, 0, -5.8}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := LBFGSBSettings{PGTol: 1e-7, FTol: 1e-20}
			plain := LBFGSB(tc.fn, x0, tc.lo, tc.hi, set)
			set.Curvature = tc.curvature
			seeded := LBFGSB(tc.fn, x0, tc.lo, tc.hi, set)
			require.True(t, plain.Converged, plain.Status)
			require.True(t, seeded.Converged, seeded.Status)
			assert.InDeltaSlice(t, plain.X, seeded.X, 1e-6)
			assert.InDelta(t, plain.F, seeded.F, 1e-10)
			assert.LessOrEqual(t, seeded.Evaluations, tc.maxEvals, "plain took %d", plain.Evaluations)
			assert.Less(t, seeded.Evaluations, plain.Evaluations)
			requireConsistent(t, tc.fn, seeded)
		})
	}
}

// TestSeedMemory: the seeded memory's B is the Hessian estimate on its convex directions and
// its largest eigenvalue elsewhere, whatever order the compact form applies the pairs in.
func TestSeedMemory(t *testing.T) {
	n := len(corrQuadA)
	bOf := func(mem *lbfgsMemory) [][]float64 {
		b := newMatrix(n, n)
		w := mem.wMatrix(n)
		for j := range n {
			e := make([]float64, n)
			e[j] = 1
			wte := make([]float64, 2*mem.k())
			for c := range wte {
				for i := range n {
					wte[c] += w[i][c] * e[i]
				}
			}
			mw := mem.mulM(wte)
			for i := range n {
				b[i][j] = mem.theta * e[i]
				for c := range mw {
					b[i][j] -= w[i][c] * mw[c]
				}
			}
		}
		return b
	}
	mem := newLBFGSMemory(10)
	mem.seed(corrQuadA)
	require.Equal(t, n, mem.k())
	got := bOf(mem)
	for i := range n {
		assert.InDeltaSlice(t, corrQuadA[i], got[i], 1e-9*800, "row %d", i)
	}

	// Memory of 3: the three stiffest directions kept, B = θ = λ_max on the other two.
	small := newLBFGSMemory(3)
	small.seed(corrQuadA)
	require.Equal(t, 3, small.k())
	for _, s := range small.s { // B s = y on each kept pair
		bs := make([]float64, n)
		b := bOf(small)
		for i := range n {
			for j := range n {
				bs[i] += b[i][j] * s[j]
			}
		}
		as := make([]float64, n)
		for i := range n {
			for j := range n {
				as[i] += corrQuadA[i][j] * s[j]
			}
		}
		assert.InDeltaSlice(t, as, bs, 1e-8)
	}

	// No convex direction: nothing seeded.
	none := newLBFGSMemory(10)
	none.seed([][]float64{{-1, 0}, {0, -2}})
	assert.Equal(t, 0, none.k())
	assert.Equal(t, 1.0, none.theta)

	assert.Panics(t, func() {
		LBFGSB(quadratic(quad3A, quad3C), []float64{0, 0, 0}, filled(3, -1), filled(3, 1), LBFGSBSettings{Curvature: [][]float64{{1}}})
	})
	assert.Panics(t, func() {
		LBFGSB(quadratic(quad3A, quad3C), []float64{0, 0, 0}, filled(3, -1), filled(3, 1),
			LBFGSBSettings{Curvature: [][]float64{{1, 0, 0}, {0, math.NaN(), 0}, {0, 0, 1}}})
	})
}

// TestDropSeeded: the pairs of a curvature estimate go, the pairs of steps taken stay with
// the θ of the newest; a memory that pushes the seeded pairs out counts them down.
func TestDropSeeded(t *testing.T) {
	mem := newLBFGSMemory(7)
	mem.seed(corrQuadA)
	require.Equal(t, 5, mem.seeded)
	steps := [][2][]float64{
		{{1, 0, 0, 0, 0}, {2, 0.5, 0, 0, 0}},
		{{0, 1, 0, 0.5, 0}, {0.2, 3, 0, 1, 0}},
		{{0, 0, 1, 0, 0}, {0, 0.1, 4, 0, 0}},
	}
	for _, st := range steps {
		require.True(t, mem.push(st[0], st[1], dot(st[0], st[1]), dot(st[1], st[1])))
	}
	assert.Equal(t, 7, mem.k())
	assert.Equal(t, 4, mem.seeded, "one seeded pair pushed out by the third step")
	mem.dropSeeded()
	require.Equal(t, 3, mem.k())
	assert.Equal(t, 0, mem.seeded)
	for i, st := range steps {
		assert.Equal(t, st[0], mem.s[i])
		assert.Equal(t, st[1], mem.y[i])
	}
	last := steps[2]
	assert.Equal(t, dot(last[1], last[1])/dot(last[0], last[1]), mem.theta)

	only := newLBFGSMemory(10)
	only.seed(corrQuadA)
	only.dropSeeded()
	assert.Equal(t, 0, only.k())
	assert.Equal(t, 1.0, only.theta)
}

// TestPerTransition: a Hessian in nats becomes the objective's per transition; one with an
// entry that is not finite, or none, gives no curvature (the refit then starts as any other).
func TestPerTransition(t *testing.T) {
	assert.Equal(t, [][]float64{{2, -1}, {-1, 4}}, perTransition([][]float64{{20, -10}, {-10, 40}}, 10))
	assert.Nil(t, perTransition([][]float64{{1, math.NaN()}, {0, 1}}, 10))
	assert.Nil(t, perTransition([][]float64{{math.Inf(1)}}, 10))
	assert.Nil(t, perTransition(nil, 10))
}
