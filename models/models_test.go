package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestEveryTaskDerives(t *testing.T) {
	for _, name := range Names() {
		m, err := Get(name)
		require.NoError(t, err)
		s, err := Derive(m)
		require.NoError(t, err, name)
		spec := m.Spec()
		n, k := len(spec.States), len(spec.Controls)
		assert.Len(t, s.A, n)
		assert.Len(t, s.B[0], k)
		assert.Len(t, s.Vn[0], spec.StateNoise)
		assert.Len(t, s.Fo, spec.Obs)
		assert.Len(t, s.Wn[0], spec.ObsNoise)
		assert.True(t, s.AffineInControls, "%s: all tasks of the paper are affine in the controls", name)
		for _, p := range spec.Params {
			assert.NoError(t, p.Validate(p.Default), "%s.%s default", name, p.Name)
			assert.Less(t, p.Lo, p.Hi)
		}
	}
	_, err := Get("juggling")
	assert.ErrorContains(t, err, "known tasks: cartpole, lightdark, linear, navigation, pendulum, reaching")
}

// TestLinearizationMatchesFiniteDifferences checks every derived Jacobian and Hessian of every
// task against central differences of the model's own functions at random points.
func TestLinearizationMatchesFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, name := range Names() {
		m, _ := Get(name)
		s, err := Derive(m)
		require.NoError(t, err)
		spec := m.Spec()
		x := make([]float64, len(s.X))
		for i := range x {
			x[i] = spec.X0[i] + 0.3*r.NormFloat64()
		}
		u := []float64{0.7, -0.4}[:len(s.U)]
		theta := spec.Defaults()
		for i, p := range spec.Params {
			if theta[i] == 0 && !p.Signed {
				theta[i] = p.Lo
			}
		}
		bind := func(x, u, v, w []float64) map[*sym.Node]float64 {
			b := sym.Bind(nil, s.X, x)
			sym.Bind(b, s.U, u)
			sym.Bind(b, s.V, v)
			sym.Bind(b, s.W, w)
			return sym.Bind(b, s.Theta, theta)
		}
		zeroV, zeroW := make([]float64, len(s.V)), make([]float64, len(s.W))
		evalVec := func(e sym.Vec, x, u, v, w []float64) []float64 {
			ev := sym.NewEvaluator[float64](sym.Float{}, bind(x, u, v, w))
			return ev.EvalVec(e)
		}
		const h = 1e-6
		check := func(what string, J [][]sym.Expr, f func(z []float64) []float64, z []float64) {
			ev := sym.NewEvaluator[float64](sym.Float{}, bind(x, u, zeroV, zeroW))
			got := ev.EvalMat(J)
			for j := range z {
				zp, zm := append([]float64(nil), z...), append([]float64(nil), z...)
				zp[j] += h
				zm[j] -= h
				fp, fm := f(zp), f(zm)
				for i := range fp {
					fd := (fp[i] - fm[i]) / (2 * h)
					assert.InDelta(t, fd, got[i][j], 1e-6*math.Max(1, math.Abs(fd)), "%s %s[%d][%d]", name, what, i, j)
				}
			}
		}
		check("A", s.A, func(z []float64) []float64 { return evalVec(s.Fv, z, u, zeroV, zeroW) }, x)
		check("B", s.B, func(z []float64) []float64 { return evalVec(s.Fv, x, z, zeroV, zeroW) }, u)
		check("V", s.Vn, func(z []float64) []float64 { return evalVec(s.Fv, x, u, z, zeroW) }, zeroV)
		check("F", s.Fo, func(z []float64) []float64 { return evalVec(s.Hw, z, u, zeroV, zeroW) }, x)
		check("W", s.Wn, func(z []float64) []float64 { return evalVec(s.Hw, x, u, zeroV, z) }, zeroW)
		check("Q", s.CQ, func(z []float64) []float64 { return evalVec(s.Cq, z, u, zeroV, zeroW) }, x)
		check("R", s.CR, func(z []float64) []float64 { return evalVec(s.Cr, x, z, zeroV, zeroW) }, u)
		check("P", s.CP, func(z []float64) []float64 { return evalVec(s.Cr, z, u, zeroV, zeroW) }, x)
		check("Q_T", s.FinalQ, func(z []float64) []float64 { return evalVec(s.Finalq, z, u, zeroV, zeroW) }, x)
		for j := range s.V {
			col := make(sym.Vec, len(s.Vn))
			for i := range col {
				col[i] = s.Vn[i][j]
			}
			check("Cx", s.Cx[j], func(z []float64) []float64 { return evalVec(col, z, u, zeroV, zeroW) }, x)
			check("Cu", s.Cu[j], func(z []float64) []float64 { return evalVec(col, x, z, zeroV, zeroW) }, u)
		}
	}
}

// TestReachingEquationOfMotion checks the arm against M(θ)θ̈ + C(θ, θ̇) + Bθ̇ = u written out
// in plain Go (Li & Todorov 2007): the Euler step's acceleration solves it.
func TestReachingEquationOfMotion(t *testing.T) {
	s, err := Derive(Reaching{})
	require.NoError(t, err)
	const l1, l2, I1, I2 = 0.3, 0.33, 0.025, 0.045
	m2, s2 := 1.1/0.33*l2, 0.16/0.33*l2
	d1, d2, d3 := I1+I2+m2*l1*l1, m2*l1*s2, I2
	r := rand.New(rand.NewPCG(4, 4))
	for range 5 {
		x := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		u := []float64{r.NormFloat64(), r.NormFloat64()}
		b := sym.Bind(nil, s.X, x)
		sym.Bind(b, s.U, u)
		sym.Bind(b, s.V, []float64{0, 0})
		sym.Bind(b, s.Theta, Reaching{}.Spec().Defaults())
		next := sym.NewEvaluator[float64](sym.Float{}, b).EvalVec(s.Fv)
		acc := []float64{(next[2] - x[2]) / 0.01, (next[3] - x[3]) / 0.01}
		c, sn := math.Cos(x[1]), math.Sin(x[1])
		M := mat.NewDense(2, 2, []float64{d1 + 2*d2*c, d3 + d2*c, d3 + d2*c, d3})
		C := []float64{-d2 * sn * x[3] * (2*x[2] + x[3]), d2 * sn * x[2] * x[2]}
		friction := []float64{0.05*x[2] + 0.025*x[3], 0.025*x[2] + 0.05*x[3]}
		for i := range 2 {
			lhs := M.At(i, 0)*acc[0] + M.At(i, 1)*acc[1] + C[i] + friction[i]
			assert.InDelta(t, u[i], lhs, 1e-9)
		}
		assert.InDelta(t, x[0]+0.01*x[2], next[0], 1e-15)
	}
}

func TestScalableDefaults(t *testing.T) {
	m, err := Get("lightdark")
	require.NoError(t, err)
	natural, scaled := m.Spec().ScalableDefaults()
	// target_x 0 (linear) stays; light_cost 0 (log10) becomes √(0.01·1); sigma 0.2 stays.
	assert.Equal(t, []float64{0, 0.1, 0.2}, natural)
	assert.InDeltaSlice(t, []float64{0, -1, math.Log10(0.2)}, scaled, 1e-15)
}
