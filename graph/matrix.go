package graph

import (
	"fmt"
	"math"
)

// Vec is a vector of batched scalars.
type Vec []S

// Mat is a small matrix of batched scalars, row-major: A[i][j] is row i, column j. All rows
// have the same length. Matrices are values built once while the graph is built; no function
// here modifies its arguments.
type Mat [][]S

// NewMat returns the r×c zero matrix.
func NewMat(r, c int) Mat {
	A := make(Mat, r)
	for i := range A {
		A[i] = make([]S, c)
	}
	return A
}

// Eye returns the n×n identity.
func Eye(n int) Mat {
	A := NewMat(n, n)
	for i := range n {
		A[i][i] = C(1)
	}
	return A
}

// ConstMat returns the constant matrix with the given rows.
func ConstMat(rows [][]float64) Mat {
	A := NewMat(len(rows), len(rows[0]))
	for i, r := range rows {
		for j, v := range r {
			A[i][j] = C(v)
		}
	}
	return A
}

// Dims returns the numbers of rows and columns of A.
func (A Mat) Dims() (r, c int) {
	if len(A) == 0 {
		return 0, 0
	}
	return len(A), len(A[0])
}

// Col returns x as an n×1 matrix.
func Col(x Vec) Mat {
	A := NewMat(len(x), 1)
	for i := range x {
		A[i][0] = x[i]
	}
	return A
}

// ColVec returns column j of A.
func (A Mat) ColVec(j int) Vec {
	v := make(Vec, len(A))
	for i := range A {
		v[i] = A[i][j]
	}
	return v
}

// T returns the transpose of A.
func T(A Mat) Mat {
	r, c := A.Dims()
	B := NewMat(c, r)
	for i := range r {
		for j := range c {
			B[j][i] = A[i][j]
		}
	}
	return B
}

// Sub returns the block A[r0:r1][c0:c1].
func (A Mat) Sub(r0, r1, c0, c1 int) Mat {
	B := NewMat(r1-r0, c1-c0)
	for i := r0; i < r1; i++ {
		copy(B[i-r0], A[i][c0:c1])
	}
	return B
}

// Blocks assembles a matrix from a grid of blocks; a nil block is zero. The blocks of a row
// must have equal heights and those of a column equal widths. It panics otherwise.
func Blocks(grid [][]Mat) Mat {
	heights := make([]int, len(grid))
	widths := make([]int, len(grid[0]))
	for i, row := range grid {
		for j, b := range row {
			if b == nil {
				continue
			}
			r, c := b.Dims()
			if (heights[i] != 0 && heights[i] != r) || (widths[j] != 0 && widths[j] != c) {
				panic("graph: Blocks with inconsistent block sizes")
			}
			heights[i], widths[j] = r, c
		}
	}
	rows, cols := 0, 0
	for _, h := range heights {
		rows += h
	}
	for _, w := range widths {
		cols += w
	}
	A := NewMat(rows, cols)
	r0 := 0
	for i, row := range grid {
		c0 := 0
		for j, b := range row {
			for bi := range b {
				copy(A[r0+bi][c0:c0+widths[j]], b[bi])
			}
			c0 += widths[j]
		}
		r0 += heights[i]
	}
	return A
}

func mustSameDims(op string, A, B Mat) {
	ra, ca := A.Dims()
	rb, cb := B.Dims()
	if ra != rb || ca != cb {
		panic(fmt.Sprintf("graph: %s of %dx%d and %dx%d matrices", op, ra, ca, rb, cb))
	}
}

// MatAdd returns A + B. It panics if the dimensions differ.
func MatAdd(A, B Mat) Mat {
	mustSameDims("MatAdd", A, B)
	r, c := A.Dims()
	out := NewMat(r, c)
	for i := range r {
		for j := range c {
			out[i][j] = Add(A[i][j], B[i][j])
		}
	}
	return out
}

// MatSub returns A − B. It panics if the dimensions differ.
func MatSub(A, B Mat) Mat {
	mustSameDims("MatSub", A, B)
	r, c := A.Dims()
	out := NewMat(r, c)
	for i := range r {
		for j := range c {
			out[i][j] = Sub(A[i][j], B[i][j])
		}
	}
	return out
}

// MatScale returns s·A.
func MatScale(s S, A Mat) Mat {
	r, c := A.Dims()
	out := NewMat(r, c)
	for i := range r {
		for j := range c {
			out[i][j] = Mul(s, A[i][j])
		}
	}
	return out
}

// dot returns Σ_k a(k)·b(k) over k < n, skipping structural zeros.
func dot(n int, a, b func(k int) S) S {
	r := C(0)
	for k := range n {
		r = Add(r, Mul(a(k), b(k)))
	}
	return r
}

// MatMul returns the product A·B. It panics if the inner dimensions differ.
func MatMul(A, B Mat) Mat {
	ra, ca := A.Dims()
	rb, cb := B.Dims()
	if ca != rb {
		panic(fmt.Sprintf("graph: MatMul of %dx%d and %dx%d matrices", ra, ca, rb, cb))
	}
	out := NewMat(ra, cb)
	for i := range ra {
		for j := range cb {
			out[i][j] = dot(ca, func(k int) S { return A[i][k] }, func(k int) S { return B[k][j] })
		}
	}
	return out
}

// MatMulT returns A·Bᵀ. It panics if the column counts differ.
func MatMulT(A, B Mat) Mat {
	ra, ca := A.Dims()
	rb, cb := B.Dims()
	if ca != cb {
		panic(fmt.Sprintf("graph: MatMulT of %dx%d and %dx%d matrices", ra, ca, rb, cb))
	}
	out := NewMat(ra, rb)
	for i := range ra {
		for j := range rb {
			out[i][j] = dot(ca, func(k int) S { return A[i][k] }, func(k int) S { return B[j][k] })
		}
	}
	return out
}

// TMatMul returns Aᵀ·B. It panics if the row counts differ.
func TMatMul(A, B Mat) Mat {
	ra, ca := A.Dims()
	rb, cb := B.Dims()
	if ra != rb {
		panic(fmt.Sprintf("graph: TMatMul of %dx%d and %dx%d matrices", ra, ca, rb, cb))
	}
	out := NewMat(ca, cb)
	for i := range ca {
		for j := range cb {
			out[i][j] = dot(ra, func(k int) S { return A[k][i] }, func(k int) S { return B[k][j] })
		}
	}
	return out
}

// MatVec returns A·x. It panics if the dimensions differ.
func MatVec(A Mat, x Vec) Vec {
	r, c := A.Dims()
	if c != len(x) {
		panic(fmt.Sprintf("graph: MatVec of a %dx%d matrix and a %d-vector", r, c, len(x)))
	}
	out := make(Vec, r)
	for i := range r {
		out[i] = dot(c, func(k int) S { return A[i][k] }, func(k int) S { return x[k] })
	}
	return out
}

// TMatVec returns Aᵀ·x. It panics if the dimensions differ.
func TMatVec(A Mat, x Vec) Vec { return MatVec(T(A), x) }

// Dot returns aᵀb. It panics if the lengths differ.
func Dot(a, b Vec) S {
	if len(a) != len(b) {
		panic(fmt.Sprintf("graph: Dot of %d- and %d-vectors", len(a), len(b)))
	}
	return dot(len(a), func(k int) S { return a[k] }, func(k int) S { return b[k] })
}

// VecAdd returns a + b.
func VecAdd(a, b Vec) Vec {
	if len(a) != len(b) {
		panic(fmt.Sprintf("graph: VecAdd of %d- and %d-vectors", len(a), len(b)))
	}
	out := make(Vec, len(a))
	for i := range a {
		out[i] = Add(a[i], b[i])
	}
	return out
}

// VecSub returns a − b.
func VecSub(a, b Vec) Vec {
	if len(a) != len(b) {
		panic(fmt.Sprintf("graph: VecSub of %d- and %d-vectors", len(a), len(b)))
	}
	out := make(Vec, len(a))
	for i := range a {
		out[i] = Sub(a[i], b[i])
	}
	return out
}

// VecScale returns s·a.
func VecScale(s S, a Vec) Vec {
	out := make(Vec, len(a))
	for i := range a {
		out[i] = Mul(s, a[i])
	}
	return out
}

// Sandwich returns A·Σ·Aᵀ for a symmetric Σ, computing only the upper triangle and mirroring
// it, so the result is exactly symmetric. It panics if the dimensions do not fit.
func Sandwich(A, Sigma Mat) Mat {
	r, c := A.Dims()
	rs, cs := Sigma.Dims()
	if c != rs || rs != cs {
		panic(fmt.Sprintf("graph: Sandwich of a %dx%d matrix and a %dx%d matrix", r, c, rs, cs))
	}
	M := MatMul(A, Sigma)
	out := NewMat(r, r)
	for i := range r {
		for j := i; j < r; j++ {
			out[i][j] = dot(c, func(k int) S { return M[i][k] }, func(k int) S { return A[j][k] })
			out[j][i] = out[i][j]
		}
	}
	return out
}

// Gram returns A·Aᵀ, exactly symmetric.
func Gram(A Mat) Mat {
	r, c := A.Dims()
	out := NewMat(r, r)
	for i := range r {
		for j := i; j < r; j++ {
			out[i][j] = dot(c, func(k int) S { return A[i][k] }, func(k int) S { return A[j][k] })
			out[j][i] = out[i][j]
		}
	}
	return out
}

// Symmetrize returns (A + Aᵀ)/2.
func Symmetrize(A Mat) Mat {
	n, _ := A.Dims()
	out := NewMat(n, n)
	for i := range n {
		out[i][i] = A[i][i]
		for j := i + 1; j < n; j++ {
			out[i][j] = Scale(0.5, Add(A[i][j], A[j][i]))
			out[j][i] = out[i][j]
		}
	}
	return out
}

// AddDiag returns A + s·I.
func AddDiag(A Mat, s S) Mat {
	n, _ := A.Dims()
	out := NewMat(n, n)
	for i := range n {
		copy(out[i], A[i])
		out[i][i] = Add(A[i][i], s)
	}
	return out
}

// Chol returns the lower-triangular Cholesky factor L of a symmetric positive-definite A
// (A = L·Lᵀ), reading only the lower triangle of A. Where A is not positive definite the
// result has NaN entries.
func Chol(A Mat) Mat {
	n, c := A.Dims()
	if n != c {
		panic(fmt.Sprintf("graph: Chol of a %dx%d matrix", n, c))
	}
	L := NewMat(n, n)
	for j := range n {
		d := Sub(A[j][j], dot(j, func(k int) S { return L[j][k] }, func(k int) S { return L[j][k] }))
		L[j][j] = Sqrt(d)
		inv := Recip(L[j][j])
		for i := j + 1; i < n; i++ {
			s := Sub(A[i][j], dot(j, func(k int) S { return L[i][k] }, func(k int) S { return L[j][k] }))
			L[i][j] = Mul(s, inv)
		}
	}
	return L
}

// SolveLower solves L·X = B for X, with L lower triangular.
func SolveLower(L, B Mat) Mat {
	n, _ := L.Dims()
	rb, cb := B.Dims()
	if rb != n {
		panic(fmt.Sprintf("graph: SolveLower with %dx%d L and %dx%d B", n, n, rb, cb))
	}
	X := NewMat(n, cb)
	inv := make([]S, n)
	for i := range n {
		inv[i] = Recip(L[i][i])
	}
	for j := range cb {
		for i := range n {
			s := Sub(B[i][j], dot(i, func(k int) S { return L[i][k] }, func(k int) S { return X[k][j] }))
			X[i][j] = Mul(s, inv[i])
		}
	}
	return X
}

// SolveLowerT solves Lᵀ·X = B for X, with L lower triangular.
func SolveLowerT(L, B Mat) Mat {
	n, _ := L.Dims()
	rb, cb := B.Dims()
	if rb != n {
		panic(fmt.Sprintf("graph: SolveLowerT with %dx%d L and %dx%d B", n, n, rb, cb))
	}
	X := NewMat(n, cb)
	inv := make([]S, n)
	for i := range n {
		inv[i] = Recip(L[i][i])
	}
	for j := range cb {
		for i := n - 1; i >= 0; i-- {
			s := B[i][j]
			for k := i + 1; k < n; k++ {
				s = Sub(s, Mul(L[k][i], X[k][j]))
			}
			X[i][j] = Mul(s, inv[i])
		}
	}
	return X
}

// CholSolve solves A·X = B given the Cholesky factor L of A.
func CholSolve(L, B Mat) Mat { return SolveLowerT(L, SolveLower(L, B)) }

// SPDSolve solves A·X = B for a symmetric positive-definite A.
func SPDSolve(A, B Mat) Mat { return CholSolve(Chol(A), B) }

// SPDInverse returns A⁻¹ of a symmetric positive-definite A, exactly symmetric.
func SPDInverse(A Mat) Mat {
	n, _ := A.Dims()
	Linv := SolveLower(Chol(A), Eye(n))
	// A⁻¹ = L⁻ᵀ·L⁻¹ = (L⁻¹)ᵀ·L⁻¹.
	out := NewMat(n, n)
	for i := range n {
		for j := i; j < n; j++ {
			out[i][j] = dot(n, func(k int) S { return Linv[k][i] }, func(k int) S { return Linv[k][j] })
			out[j][i] = out[i][j]
		}
	}
	return out
}

// LogDetChol returns log det A = 2·Σ log L_ii given the Cholesky factor L of A.
func LogDetChol(L Mat) S {
	r := C(0)
	for i := range L {
		r = Add(r, Log(L[i][i]))
	}
	return Scale(2, r)
}

// GaussLogDensity returns log N(r; 0, Σ) = −½ rᵀΣ⁻¹r − ½ log det Σ − (n/2) log 2π, given
// the Cholesky factor L of Σ.
func GaussLogDensity(r Vec, L Mat) S {
	z := SolveLower(L, Col(r)).ColVec(0)
	quad := Dot(z, z)
	n := float64(len(r))
	return Sub(Scale(-0.5, Add(quad, LogDetChol(L))), C(0.5*n*math.Log(2*math.Pi)))
}
