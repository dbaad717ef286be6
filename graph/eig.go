package graph

import "fmt"

// jacobiSweeps is the number of cyclic Jacobi sweeps used for matrices larger than 2×2;
// convergence is quadratic, so this is ample for the n ≤ 8 matrices used here.
const jacobiSweeps = 10

// SymEigvals returns the eigenvalues of the symmetric matrix A (its symmetric part is used),
// in no particular order. 1×1 and 2×2 matrices use closed forms; larger ones a fixed number of
// cyclic Jacobi sweeps, unrolled into the graph. Gradients are exact derivatives of the
// computed values and stay finite at repeated eigenvalues.
func SymEigvals(A Mat) Vec {
	n, c := A.Dims()
	if n != c {
		panic(fmt.Sprintf("graph: SymEigvals of a %dx%d matrix", n, c))
	}
	A = Symmetrize(A)
	if isDiagonal(A) {
		d := make(Vec, n)
		for i := range n {
			d[i] = A[i][i]
		}
		return d
	}
	switch n {
	case 1:
		return Vec{A[0][0]}
	case 2:
		lo, hi := eig2(A[0][0], A[0][1], A[1][1])
		return Vec{lo, hi}
	}
	return jacobiEigvals(A)
}

func isDiagonal(A Mat) bool {
	for i := range A {
		for j := range A[i] {
			if i != j && !A[i][j].IsZero() {
				return false
			}
		}
	}
	return true
}

// eig2 returns the eigenvalues (lo ≤ hi) of [[a, b], [b, d]].
func eig2(a, b, d S) (lo, hi S) {
	mean := Scale(0.5, Add(a, d))
	half := Scale(0.5, Sub(a, d))
	disc := Add(Square(half), Square(b))
	// "Double where": √disc has an infinite derivative at disc = 0 (a double eigenvalue).
	pos := GreaterThan(disc, C(0))
	root := Select(pos, Sqrt(Select(pos, disc, C(1))), C(0))
	return Sub(mean, root), Add(mean, root)
}

// jacobiEigvals diagonalizes a symmetric A by cyclic Jacobi rotations.
func jacobiEigvals(A Mat) Vec {
	n, _ := A.Dims()
	A = MatScale(C(1), A) // copy
	for range jacobiSweeps {
		for p := 0; p < n; p++ {
			for q := p + 1; q < n; q++ {
				apq := A[p][q]
				if apq.IsZero() {
					continue
				}
				rotate := GreaterThan(Abs(apq), C(1e-100))
				safe := Select(rotate, apq, C(1))
				theta := Div(Sub(A[q][q], A[p][p]), Scale(2, safe))
				sgn := Select(GreaterThan(C(0), theta), C(-1), C(1))
				t := Div(sgn, Add(Abs(theta), Sqrt(Add(Square(theta), C(1)))))
				t = Select(rotate, t, C(0))
				cs := Recip(Sqrt(Add(Square(t), C(1))))
				sn := Mul(t, cs)
				B := MatScale(C(1), A)
				B[p][p] = Sub(A[p][p], Mul(t, apq))
				B[q][q] = Add(A[q][q], Mul(t, apq))
				B[p][q], B[q][p] = C(0), C(0)
				for r := range n {
					if r == p || r == q {
						continue
					}
					arp, arq := A[r][p], A[r][q]
					B[r][p] = Sub(Mul(cs, arp), Mul(sn, arq))
					B[p][r] = B[r][p]
					B[r][q] = Add(Mul(sn, arp), Mul(cs, arq))
					B[q][r] = B[r][q]
				}
				A = B
			}
		}
	}
	d := make(Vec, n)
	for i := range n {
		d[i] = A[i][i]
	}
	return d
}

// MinEig returns the smallest eigenvalue of the symmetric matrix A.
func MinEig(A Mat) S {
	if n, _ := A.Dims(); n == 2 && !isDiagonal(Symmetrize(A)) {
		B := Symmetrize(A)
		lo, _ := eig2(B[0][0], B[0][1], B[1][1])
		return lo
	}
	ev := SymEigvals(A)
	m := ev[0]
	for _, e := range ev[1:] {
		m = Min(m, e)
	}
	return m
}

// MinEigShift returns H + max(0, eps − λ_min(H))·I: the symmetric matrix H with its smallest
// eigenvalue raised to at least eps, as the iLQG backward pass does with the control Hessian
// (Li 2006, Sec. 5.4.1; the reference uses eps = 1e-8).
func MinEigShift(H Mat, eps float64) Mat {
	shift := Max(C(0), Sub(C(eps), MinEig(H)))
	return AddDiag(H, shift)
}
