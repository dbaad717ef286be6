package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

const batch = 3 // batch elements per test evaluation

// randomBatch returns count batched inputs with values from gen.
func randomBatch(count int, gen func(b, i int) float64) [][]float64 {
	in := make([][]float64, count)
	for i := range in {
		in[i] = make([]float64, batch)
		for b := range batch {
			in[i][b] = gen(b, i)
		}
	}
	return in
}

// matFromInputs takes r·c inputs starting at offset as a matrix.
func matFromInputs(in []S, offset, r, c int) Mat {
	A := NewMat(r, c)
	for i := range r {
		for j := range c {
			A[i][j] = in[offset+i*c+j]
		}
	}
	return A
}

func flatten(A Mat) []S {
	var out []S
	for _, row := range A {
		out = append(out, row...)
	}
	return out
}

// dense returns batch element b of inputs [offset, offset+r·c) as a gonum matrix.
func dense(inputs [][]float64, b, offset, r, c int) *mat.Dense {
	d := mat.NewDense(r, c, nil)
	for i := range r {
		for j := range c {
			d.Set(i, j, inputs[offset+i*c+j][b])
		}
	}
	return d
}

// randomSPD returns inputs holding batch SPD n×n matrices M·Mᵀ + n·I.
func randomSPD(r *rand.Rand, n int) [][]float64 {
	in := randomBatch(n*n, func(int, int) float64 { return 0 })
	for b := range batch {
		M := mat.NewDense(n, n, nil)
		for i := range n {
			for j := range n {
				M.Set(i, j, r.Float64()*2-1)
			}
		}
		var A mat.Dense
		A.Mul(M, M.T())
		for i := range n {
			for j := range n {
				v := A.At(i, j)
				if i == j {
					v += 0.5 * float64(n)
				}
				in[i*n+j][b] = v
			}
		}
	}
	return in
}

func assertMatClose(t *testing.T, want mat.Matrix, got [][]float64, b int, tol float64, msg string) {
	t.Helper()
	r, c := want.Dims()
	require.Len(t, got, r*c, msg)
	for i := range r {
		for j := range c {
			w, g := want.At(i, j), got[i*c+j][b]
			assert.InDelta(t, w, g, tol*math.Max(1, math.Abs(w)), "%s [%d][%d] batch %d", msg, i, j, b)
		}
	}
}

func TestProductsAgainstGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	in := randomBatch(12+8+9, func(int, int) float64 { return r.Float64()*2 - 1 })
	outs, _ := evalBatch(t, in, false, func(x []S) []S {
		A := matFromInputs(x, 0, 3, 4)
		B := matFromInputs(x, 12, 4, 2)
		S3 := Symmetrize(matFromInputs(x, 20, 3, 3))
		res := flatten(MatMul(A, B))
		res = append(res, flatten(MatMulT(T(B), A))...)
		res = append(res, flatten(TMatMul(T(A), B))...)
		res = append(res, flatten(Sandwich(T(A), S3))...) // 4×4
		res = append(res, flatten(Gram(A))...)
		res = append(res, MatVec(A, B.ColVec(0))...)
		return res
	})
	for b := range batch {
		A, B := dense(in, b, 0, 3, 4), dense(in, b, 12, 4, 2)
		S3 := dense(in, b, 20, 3, 3)
		var Ssym mat.Dense
		Ssym.Add(S3, S3.T())
		Ssym.Scale(0.5, &Ssym)
		var AB, BtAt, sand, tmp, gram mat.Dense
		AB.Mul(A, B)
		BtAt.Mul(B.T(), A.T()) // = (AB)ᵀ
		tmp.Mul(A.T(), &Ssym)
		sand.Mul(&tmp, A)
		gram.Mul(A, A.T())
		var Ab0 mat.VecDense
		Ab0.MulVec(A, B.ColView(0))
		off := 0
		for _, c := range []struct {
			name string
			m    mat.Matrix
		}{{"MatMul", &AB}, {"MatMulT", &BtAt}, {"TMatMul", &AB}, {"Sandwich", &sand}, {"Gram", &gram}, {"MatVec", &Ab0}} {
			rr, cc := c.m.Dims()
			assertMatClose(t, c.m, outs[off:off+rr*cc], b, 1e-14, c.name)
			off += rr * cc
		}
	}
}

func TestCholeskyFamilyAgainstGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 8; n++ {
		in := randomSPD(r, n)
		rhs := randomBatch(n*2, func(int, int) float64 { return r.Float64()*2 - 1 })
		in = append(in, rhs...)
		outs, _ := evalBatch(t, in, false, func(x []S) []S {
			A := matFromInputs(x, 0, n, n)
			Bm := matFromInputs(x, n*n, n, 2)
			L := Chol(A)
			res := flatten(L)
			res = append(res, flatten(SPDInverse(A))...)
			res = append(res, flatten(SPDSolve(A, Bm))...)
			res = append(res, LogDetChol(L), GaussLogDensity(Bm.ColVec(0), L))
			res = append(res, flatten(SolveLowerT(L, Bm))...)
			return res
		})
		for b := range batch {
			A := dense(in, b, 0, n, n)
			Bm := dense(in, b, n*n, n, 2)
			var ch mat.Cholesky
			require.True(t, ch.Factorize(mat.NewSymDense(n, A.RawMatrix().Data)))
			var L mat.TriDense
			ch.LTo(&L)
			var inv, sol, solT mat.Dense
			require.NoError(t, inv.Inverse(A))
			require.NoError(t, sol.Solve(A, Bm))
			require.NoError(t, solT.Solve(L.T(), Bm))
			logdet := ch.LogDet()
			r0 := Bm.ColView(0)
			var z mat.VecDense
			require.NoError(t, z.SolveVec(A, r0))
			logpdf := -0.5*mat.Dot(r0, &z) - 0.5*logdet - 0.5*float64(n)*math.Log(2*math.Pi)
			off := 0
			for _, c := range []struct {
				name string
				m    mat.Matrix
			}{{"Chol", &L}, {"SPDInverse", &inv}, {"SPDSolve", &sol}} {
				rr, cc := c.m.Dims()
				assertMatClose(t, c.m, outs[off:off+rr*cc], b, 1e-12, c.name)
				off += rr * cc
			}
			assert.InDelta(t, logdet, outs[off][b], 1e-12*math.Abs(logdet)+1e-13, "LogDet n=%d", n)
			assert.InDelta(t, logpdf, outs[off+1][b], 1e-12*math.Abs(logpdf), "GaussLogDensity n=%d", n)
			assertMatClose(t, &solT, outs[off+2:], b, 1e-12, "SolveLowerT")
		}
	}
}

func TestSymEigvalsAgainstGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := 1; n <= 6; n++ {
		for _, kind := range []string{"random", "repeated"} {
			in := randomBatch(n*n, func(int, int) float64 { return 0 })
			for b := range batch {
				M := mat.NewDense(n, n, nil)
				for i := range n {
					for j := range n {
						M.Set(i, j, r.Float64()*2-1)
					}
				}
				var A mat.Dense
				A.Add(M, M.T())
				if kind == "repeated" && b == 0 {
					// A multiple of the identity: all eigenvalues equal, the worst case for
					// the closed forms' square roots and for Jacobi's rotation angles.
					A.Zero()
					for i := range n {
						A.Set(i, i, 2.5)
					}
				}
				for i := range n {
					for j := range n {
						in[i*n+j][b] = A.At(i, j)
					}
				}
			}
			outs, grads := evalBatch(t, in, true, func(x []S) []S {
				A := matFromInputs(x, 0, n, n)
				return append(Vec{MinEig(A)}, SymEigvals(A)...)
			})
			for b := range batch {
				var es mat.EigenSym
				require.True(t, es.Factorize(mat.NewSymDense(n, dense(in, b, 0, n, n).RawMatrix().Data), true))
				want := es.Values(nil)
				got := make([]float64, n)
				for i := range n {
					got[i] = outs[1+i][b]
				}
				slices.Sort(got)
				for i := range n {
					assert.InDelta(t, want[i], got[i], 1e-12, "n=%d %s eigenvalue %d", n, kind, i)
				}
				assert.InDelta(t, want[0], outs[0][b], 1e-12, "MinEig n=%d %s", n, kind)
				for i := range grads {
					assert.False(t, math.IsNaN(grads[i][b]), "NaN gradient n=%d %s", n, kind)
				}
				if kind == "random" {
					// ∂λ_min/∂A = v·vᵀ for the unit eigenvector v of λ_min (a simple eigenvalue).
					var V mat.Dense
					es.VectorsTo(&V)
					for i := range n {
						for j := range n {
							assert.InDelta(t, V.At(i, 0)*V.At(j, 0), grads[i*n+j][b], 1e-8, "dλmin/dA n=%d", n)
						}
					}
				}
			}
		}
	}
}

func TestMinEigShift(t *testing.T) {
	in := [][]float64{{1, -2, 1e-3}, {3, 0.5, 0}, {3, 0.5, 0}, {2, -1, 1e-3}}
	outs, _ := evalBatch(t, in, false, func(x []S) []S {
		H := MinEigShift(matFromInputs(x, 0, 2, 2), 1e-8)
		return flatten(H)
	})
	for b := range batch {
		var es mat.EigenSym
		require.True(t, es.Factorize(mat.NewSymDense(2, []float64{outs[0][b], outs[1][b], outs[2][b], outs[3][b]}), false))
		lo := es.Values(nil)[0]
		orig := mat.NewSymDense(2, []float64{in[0][b], in[1][b], in[2][b], in[3][b]})
		var es0 mat.EigenSym
		require.True(t, es0.Factorize(orig, false))
		if es0.Values(nil)[0] < 1e-8 {
			assert.InDelta(t, 1e-8, lo, 1e-12, "batch %d raised to eps", b)
		} else {
			assert.InDelta(t, es0.Values(nil)[0], lo, 1e-14, "batch %d unchanged", b)
		}
	}
}

// TestGradientsAgainstFiniteDifferences differentiates a scalar built from every matrix
// routine through GoMLX's reverse-mode autodiff and compares with central differences.
func TestGradientsAgainstFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 4
	in := randomSPD(r, n)
	in = append(in, randomBatch(n+4+9, func(int, int) float64 { return r.Float64()*2 - 1 })...)
	f := func(x []S) []S {
		A := matFromInputs(x, 0, n, n)
		v := Vec(x[n*n : n*n+n])
		H := matFromInputs(x, n*n+n, 2, 2)
		H3 := matFromInputs(x, n*n+n+4, 3, 3)
		L := Chol(A)
		inv := SPDInverse(A)
		val := Add(LogDetChol(L), Dot(v, MatVec(inv, v)))
		val = Add(val, GaussLogDensity(v, L))
		val = Add(val, Sum(flatten(Sandwich(T(L), Eye(n)))...))
		val = Add(val, MinEig(MinEigShift(H, 0.3)))
		val = Add(val, MinEig(H3))
		val = Add(val, Atan2(v[0], v[1]))
		return []S{val}
	}
	_, grads := evalBatch(t, in, true, f)
	const h = 1e-6
	for i := range in {
		plus := make([][]float64, len(in))
		minus := make([][]float64, len(in))
		for k := range in {
			plus[k] = slices.Clone(in[k])
			minus[k] = slices.Clone(in[k])
		}
		for b := range batch {
			plus[i][b] += h
			minus[i][b] -= h
		}
		op, _ := evalBatch(t, plus, false, f)
		om, _ := evalBatch(t, minus, false, f)
		for b := range batch {
			fd := (op[0][b] - om[0][b]) / (2 * h)
			assert.InDelta(t, fd, grads[i][b], 1e-6*math.Max(1, math.Abs(fd)), "input %d batch %d", i, b)
		}
	}
}

func TestAtan2(t *testing.T) {
	var ys, xs []float64
	for _, y := range []float64{-2, -1, -1e-3, 0, 1e-3, 0.5, 1, 3} {
		for _, x := range []float64{-2, -1, -1e-3, 0, 1e-3, 0.5, 1, 3} {
			ys, xs = append(ys, y), append(xs, x)
		}
	}
	outs, grads := evalBatch(t, [][]float64{ys, xs}, true, func(x []S) []S { return []S{Atan2(x[0], x[1])} })
	for b := range ys {
		y, x := ys[b], xs[b]
		assert.InDelta(t, math.Atan2(y, x), outs[0][b], 4e-16*math.Max(1, math.Abs(math.Atan2(y, x))), "atan2(%g, %g)", y, x)
		if r2 := x*x + y*y; r2 > 0 {
			assert.InDelta(t, x/r2, grads[0][b], 1e-12*math.Max(1, 1/r2), "d/dy at (%g,%g)", y, x)
			assert.InDelta(t, -y/r2, grads[1][b], 1e-12*math.Max(1, 1/r2), "d/dx at (%g,%g)", y, x)
		}
	}
}

// TestWrapAngle checks the value of WrapAngle on the graph and for constants, in [−π, π) and
// equal to its argument modulo 2π, and that its gradient is 1.
func TestWrapAngle(t *testing.T) {
	cases := []struct{ a, want float64 }{
		{0, 0}, {1, 1}, {-1, -1}, {3, 3}, {-3, -3},
		{math.Pi + 0.1, -math.Pi + 0.1}, {-math.Pi - 0.1, math.Pi - 0.1},
		{2 * math.Pi, 0}, {-2 * math.Pi, 0}, {5 * math.Pi / 2, math.Pi / 2}, {-7, -7 + 2*math.Pi},
		{math.Pi, -math.Pi}, {100, 100 - 16*2*math.Pi},
	}
	as := make([]float64, len(cases))
	for i, c := range cases {
		as[i] = c.a
	}
	outs, grads := evalBatch(t, [][]float64{as}, true, func(x []S) []S { return []S{WrapAngle(x[0])} })
	for i, c := range cases {
		assert.InDelta(t, c.want, outs[0][i], 1e-13, "wrap(%g) on the graph", c.a)
		assert.InDelta(t, c.want, WrapAngle(C(c.a)).Const(), 1e-13, "wrap(%g) of a constant", c.a)
		assert.Equal(t, 1.0, grads[0][i], "d wrap/da at %g", c.a)
	}
}
