package posterior

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewBox(t *testing.T) {
	for _, c := range []struct {
		name   string
		lo, hi []float64
	}{
		{"empty", nil, nil},
		{"lengths", []float64{0, 1}, []float64{1}},
		{"equal", []float64{1}, []float64{1}},
		{"reversed", []float64{2}, []float64{1}},
		{"NaN", []float64{math.NaN()}, []float64{1}},
		{"infinite", []float64{0}, []float64{math.Inf(1)}},
	} {
		_, err := NewBox(c.lo, c.hi)
		assert.Error(t, err, c.name)
	}
	lo := []float64{-3, 0}
	b, err := NewBox(lo, []float64{-1, 5})
	require.NoError(t, err)
	lo[0] = 7
	assert.Equal(t, []float64{-3, 0}, b.Lo(), "the box keeps its own copy")
	assert.Equal(t, []float64{-1, 5}, b.Hi())
	assert.Equal(t, 2, b.Dim())
	assert.Panics(t, func() { b.To([]float64{1}) })
	assert.Panics(t, func() { b.From([]float64{1, 2, 3}) })
}

func TestBoxTransform(t *testing.T) {
	b, err := NewBox([]float64{-3, 0, 10}, []float64{-1, 5, 10.5})
	require.NoError(t, err)
	for _, s := range [][]float64{{-2, 2.5, 10.25}, {-2.999, 0.001, 10.4999}, {-1.5, 4, 10.01}} {
		y := b.To(s)
		assert.InDeltaSlice(t, s, b.From(y), 1e-12)
	}
	y := b.To([]float64{-3, 5, 11})
	assert.True(t, math.IsInf(y[0], -1))
	assert.True(t, math.IsInf(y[1], 1))
	assert.True(t, math.IsNaN(y[2]))
	assert.Equal(t, []float64{-2, 2.5, 10.25}, b.From([]float64{0, 0, 0}))
	s := b.From([]float64{-800, 800, 40})
	assert.Equal(t, []float64{-3, 5, 10.5}, s, "extreme points map onto the bounds")
	assert.False(t, math.IsInf(b.LogJacobian([]float64{-800, 800, 40}), 0), "the log-Jacobian stays finite")
}

func TestBoxJacobian(t *testing.T) {
	b, err := NewBox([]float64{-3, 0, 10}, []float64{-1, 5, 10.5})
	require.NoError(t, err)
	const h = 1e-5
	for _, y := range [][]float64{{0, 0, 0}, {-2.5, 1.3, 4}, {7, -9, 0.3}, {-30, 25, -0.01}} {
		// log |det ∂s/∂y| against central differences of From (the Jacobian is diagonal).
		var want float64
		for i := range y {
			yp, ym := clone(y), clone(y)
			yp[i] += h
			ym[i] -= h
			want += math.Log((b.From(yp)[i] - b.From(ym)[i]) / (2 * h))
		}
		if math.Abs(y[0]) < 20 && math.Abs(y[1]) < 20 { // beyond, the differences of From underflow
			assert.InDelta(t, want, b.LogJacobian(y), 1e-6, "y = %v", y)
		}
		// Its gradient against central differences of LogJacobian.
		g := b.LogJacobianGrad(y)
		for i := range y {
			yp, ym := clone(y), clone(y)
			yp[i] += h
			ym[i] -= h
			fd := (b.LogJacobian(yp) - b.LogJacobian(ym)) / (2 * h)
			assert.InDelta(t, fd, g[i], 1e-7, "∂/∂y%d at %v", i, y)
		}
	}
}

// TestBoxTargetGradient checks the log density and gradient of a BoxTarget with a normal prior
// on one parameter and a group-dependent likelihood against finite differences.
func TestBoxTargetGradient(t *testing.T) {
	b, err := NewBox([]float64{-3, 0}, []float64{-1, 5})
	require.NoError(t, err)
	like := func(group int, s []float64) float64 {
		return -float64(group+1)*math.Pow(s[0]+2, 2) + math.Sin(s[1])*s[0]
	}
	f := func(groups []int, s [][]float64) ([]float64, [][]float64, error) {
		logp := make([]float64, len(s))
		grad := make([][]float64, len(s))
		for i, si := range s {
			g := float64(groups[i] + 1)
			logp[i] = like(groups[i], si)
			grad[i] = []float64{-2*g*(si[0]+2) + math.Sin(si[1]), math.Cos(si[1]) * si[0]}
		}
		return logp, grad, nil
	}
	priors := []Prior{{}, {Mu: 1, SD: 0.7}}
	target, err := BoxTarget(b, 2, f, priors)
	require.NoError(t, err)
	logDensity := func(group int, y []float64) float64 {
		s := b.From(y)
		z := (s[1] - 1) / 0.7
		return like(group, s) - math.Log(2) - 0.5*z*z - math.Log(0.7*math.Sqrt(2*math.Pi)) + b.LogJacobian(y)
	}
	ys := [][]float64{{0, 0}, {1.5, -2}, {-4, 3}, {0.3, 6}}
	groups := []int{0, 1, 1, 0}
	logp, grad, err := target.Eval(groups, ys)
	require.NoError(t, err)
	const h = 1e-6
	for k, y := range ys {
		assert.InDelta(t, logDensity(groups[k], y), logp[k], 1e-12)
		for i := range y {
			yp, ym := clone(y), clone(y)
			yp[i] += h
			ym[i] -= h
			fd := (logDensity(groups[k], yp) - logDensity(groups[k], ym)) / (2 * h)
			assert.InDelta(t, fd, grad[k][i], 1e-6, "point %d, ∂/∂y%d", k, i)
		}
	}
	assert.InDeltaSlice(t, b.From(ys[1]), target.Scale(ys[1]), 0)
}

func TestBoxTargetZeroDensityAndErrors(t *testing.T) {
	b, err := NewBox([]float64{0}, []float64{1})
	require.NoError(t, err)
	f := func(_ []int, s [][]float64) ([]float64, [][]float64, error) {
		logp := make([]float64, len(s))
		grad := make([][]float64, len(s))
		for i, si := range s {
			if si[0] > 0.5 {
				logp[i] = math.Inf(-1)
				continue
			}
			grad[i] = []float64{1}
		}
		return logp, grad, nil
	}
	target, err := BoxTarget(b, 1, f, nil)
	require.NoError(t, err)
	logp, grad, err := target.Eval([]int{0, 0}, [][]float64{{-1}, {1}})
	require.NoError(t, err)
	assert.False(t, math.IsInf(logp[0], 0))
	assert.NotNil(t, grad[0])
	assert.True(t, math.IsInf(logp[1], -1))
	assert.Nil(t, grad[1])
	_, _, err = target.Eval([]int{1}, [][]float64{{0}})
	assert.ErrorContains(t, err, "group 1 out of range")

	for _, p := range [][]Prior{{{}, {}}, {{Mu: 0, SD: -1}}, {{Mu: math.Inf(1), SD: 1}}, {{SD: math.NaN()}}} {
		_, err := BoxTarget(b, 1, f, p)
		assert.Error(t, err, "%v", p)
	}
	_, err = BoxTarget(b, 0, f, nil)
	assert.Error(t, err)
	_, err = BoxTarget(b, 1, nil, nil)
	assert.Error(t, err)
	_, err = BoxTarget(Box{}, 1, f, nil)
	assert.Error(t, err)
	boom := errors.New("boom")
	failing, err := BoxTarget(b, 1, func([]int, [][]float64) ([]float64, [][]float64, error) { return nil, nil, boom }, nil)
	require.NoError(t, err)
	_, _, err = failing.Eval([]int{0}, [][]float64{{0}})
	assert.ErrorIs(t, err, boom)
}
