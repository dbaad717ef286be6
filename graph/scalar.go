// Package graph holds the numerics of nioc-gpu on GoMLX computation graphs: the choice of
// backend, batched scalars and small matrices with their algebra (products, Cholesky,
// triangular solves, SPD inverse, log-determinants, eigenvalue regularisation), a
// differentiable atan2, the evaluation of symbolic model expressions (package sym) as graph
// operations, and the fixes GoMLX v0.26's simplego backend needs for reverse-mode autodiff.
//
// # Representation
//
// Everything is float64. A batched scalar S is either a constant known when the graph is built
// or a graph node holding one value per batch element. All nodes of a computation share one
// rank (typically 2, e.g. [parameter vectors, trials]) and broadcast against each other along
// axes of size 1, so a quantity that depends on the parameters only is computed once per
// parameter vector, not once per trial. Small matrices are "scalarized": a Mat is a Go slice of
// S entries. Constant entries (structural zeros and ones of Jacobians, identities) are folded
// while the graph is built and cost nothing when it runs; on the simplego backend this is much
// faster than batched [B, n, n] tensors (see shared/notes/gomlx-v026.md).
package graph

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// S is a batched scalar: a constant known when the graph is built, or a graph node.
// The zero value is the constant 0.
type S struct {
	n *G.Node
	c float64
}

// C returns the constant c.
func C(c float64) S { return S{c: c} }

// N wraps a float64 graph node.
func N(n *G.Node) S {
	if n == nil {
		panic("graph: N(nil)")
	}
	return S{n: n}
}

// IsConst reports whether s is a constant.
func (s S) IsConst() bool { return s.n == nil }

// Const returns the value of a constant. It panics if s is a node.
func (s S) Const() float64 {
	if s.n != nil {
		panic("graph: Const of a node")
	}
	return s.c
}

// IsZero reports whether s is the constant 0.
func (s S) IsZero() bool { return s.n == nil && s.c == 0 }

// IsOne reports whether s is the constant 1.
func (s S) IsOne() bool { return s.n == nil && s.c == 1 }

// Node returns s as a node of graph g: a constant becomes a rank-0 constant node.
func (s S) Node(g *G.Graph) *G.Node {
	if s.n != nil {
		return s.n
	}
	return G.Scalar(g, dtypes.Float64, s.c)
}

// Graph returns the graph of the first node among xs, or nil if all are constants.
func Graph(xs ...S) *G.Graph {
	for _, x := range xs {
		if x.n != nil {
			return x.n.Graph()
		}
	}
	return nil
}

func (s S) String() string {
	if s.n == nil {
		return fmt.Sprintf("const(%g)", s.c)
	}
	return fmt.Sprintf("node#%d%v", s.n.Id(), s.n.Shape().Dimensions)
}

// Add returns a + b.
func Add(a, b S) S {
	switch {
	case a.n == nil && b.n == nil:
		return C(a.c + b.c)
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case a.n == nil:
		return N(G.AddScalar(b.n, a.c))
	case b.n == nil:
		return N(G.AddScalar(a.n, b.c))
	}
	return N(G.Add(a.n, b.n))
}

// Sum returns the sum of the terms (0 if none).
func Sum(terms ...S) S {
	r := C(0)
	for _, t := range terms {
		r = Add(r, t)
	}
	return r
}

// Sub returns a − b.
func Sub(a, b S) S {
	switch {
	case a.n == nil && b.n == nil:
		return C(a.c - b.c)
	case b.IsZero():
		return a
	case a.IsZero():
		return Neg(b)
	case b.n == nil:
		return N(G.AddScalar(a.n, -b.c))
	case a.n == nil:
		return N(G.AddScalar(G.Neg(b.n), a.c))
	}
	return N(G.Sub(a.n, b.n))
}

// Neg returns −a.
func Neg(a S) S {
	if a.n == nil {
		return C(-a.c)
	}
	return N(G.Neg(a.n))
}

// Mul returns a·b.
func Mul(a, b S) S {
	switch {
	case a.n == nil && b.n == nil:
		return C(a.c * b.c)
	case a.IsZero() || b.IsZero():
		return C(0)
	case a.IsOne():
		return b
	case b.IsOne():
		return a
	case a.n == nil:
		return scaleNode(a.c, b.n)
	case b.n == nil:
		return scaleNode(b.c, a.n)
	}
	return N(G.Mul(a.n, b.n))
}

func scaleNode(c float64, n *G.Node) S {
	if c == -1 {
		return N(G.Neg(n))
	}
	return N(G.MulScalar(n, c))
}

// Scale returns c·a.
func Scale(c float64, a S) S { return Mul(C(c), a) }

// Div returns a / b.
func Div(a, b S) S {
	switch {
	case a.n == nil && b.n == nil:
		return C(a.c / b.c)
	case a.IsZero():
		return C(0)
	case b.n == nil:
		return Scale(1/b.c, a)
	case a.n == nil:
		return Scale(a.c, Recip(b))
	}
	return N(G.Div(a.n, b.n))
}

// Recip returns 1/a.
func Recip(a S) S {
	if a.n == nil {
		return C(1 / a.c)
	}
	return N(G.Reciprocal(a.n))
}

// Square returns a².
func Square(a S) S {
	if a.n == nil {
		return C(a.c * a.c)
	}
	return N(G.Mul(a.n, a.n))
}

func unary(a S, f func(float64) float64, op func(*G.Node) *G.Node) S {
	if a.n == nil {
		return C(f(a.c))
	}
	return N(op(a.n))
}

// Sqrt returns √a.
func Sqrt(a S) S { return unary(a, math.Sqrt, G.Sqrt) }

// Sin returns sin a.
func Sin(a S) S { return unary(a, math.Sin, G.Sin) }

// Cos returns cos a.
func Cos(a S) S { return unary(a, math.Cos, G.Cos) }

// Exp returns eᵃ.
func Exp(a S) S { return unary(a, math.Exp, G.Exp) }

// Log returns ln a.
func Log(a S) S { return unary(a, math.Log, G.Log) }

// Tanh returns tanh a.
func Tanh(a S) S { return unary(a, math.Tanh, G.Tanh) }

// Abs returns |a|.
func Abs(a S) S { return unary(a, math.Abs, G.Abs) }

// Sign returns the sign of a; no gradient flows through it.
func Sign(a S) S {
	return unary(a, sign, func(n *G.Node) *G.Node { return G.StopGradient(G.Sign(n)) })
}

// Floor returns ⌊a⌋; no gradient flows through it.
func Floor(a S) S {
	return unary(a, math.Floor, func(n *G.Node) *G.Node { return G.StopGradient(G.Floor(n)) })
}

// WrapAngle returns the angle a in radians taken modulo 2π into [−π, π): a − 2π·⌊(a + π)/2π⌋,
// sym.Wrap's formula for values that are not a model's expressions (the difference of two
// points' atan2 terms, say). Its gradient is 1 everywhere (the integer part carries none);
// the value jumps by 2π only where a crosses an odd multiple of π.
func WrapAngle(a S) S {
	turns := Floor(Scale(1/(2*math.Pi), Add(a, C(math.Pi))))
	return Sub(a, Scale(2*math.Pi, turns))
}

// Pow10 returns 10ᵃ.
func Pow10(a S) S { return Exp(Scale(math.Ln10, a)) }

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// Max returns max(a, b). The gradient goes to a where a ≥ b, else to b.
func Max(a, b S) S {
	switch {
	case a.n == nil && b.n == nil:
		return C(math.Max(a.c, b.c))
	case a.n == nil:
		return N(G.Max(b.n, G.Scalar(b.n.Graph(), dtypes.Float64, a.c)))
	case b.n == nil:
		return N(G.Max(a.n, G.Scalar(a.n.Graph(), dtypes.Float64, b.c)))
	}
	return N(G.Max(a.n, b.n))
}

// Cond is a batched boolean: a constant or a boolean graph node.
type Cond struct {
	n *G.Node
	c bool
}

// GreaterThan returns the condition a > b.
func GreaterThan(a, b S) Cond {
	if a.n == nil && b.n == nil {
		return Cond{c: a.c > b.c}
	}
	g := Graph(a, b)
	return Cond{n: G.GreaterThan(a.Node(g), b.Node(g))}
}

// Select returns onTrue where cond holds, else onFalse. Gradients flow only into the selected
// branch, but a non-finite derivative in the other branch still poisons the gradient: feed both
// branches safe values (the "double where" pattern).
func Select(cond Cond, onTrue, onFalse S) S {
	if cond.n == nil {
		if cond.c {
			return onTrue
		}
		return onFalse
	}
	g := cond.n.Graph()
	nodes := []*G.Node{cond.n, onTrue.Node(g), onFalse.Node(g)}
	dims := broadcastDims(nodes...)
	for i, x := range nodes {
		if !slices.Equal(x.Shape().Dimensions, dims) {
			nodes[i] = G.BroadcastToDims(x, dims...)
		}
	}
	return N(G.Where(nodes[0], nodes[1], nodes[2]))
}

// broadcastDims returns the dimensions of the implicit broadcast of the nodes: rank-0 nodes
// broadcast to anything, others must have equal ranks and dimensions equal or 1.
func broadcastDims(nodes ...*G.Node) []int {
	var dims []int
	for _, x := range nodes {
		d := x.Shape().Dimensions
		if len(d) == 0 {
			continue
		}
		if dims != nil && len(d) != len(dims) {
			panic(fmt.Sprintf("graph: cannot broadcast shapes of ranks %d and %d", len(dims), len(d)))
		}
		dims = broadcastInts(dims, d)
	}
	return dims
}

// Min returns min(a, b). The gradient goes to a where a ≤ b, else to b.
func Min(a, b S) S { return Neg(Max(Neg(a), Neg(b))) }

// Materialize returns s as a node of graph g with the given dimensions, broadcasting a
// constant or a node with size-1 axes.
func Materialize(g *G.Graph, s S, dims ...int) *G.Node {
	n := s.Node(g)
	if slices.Equal(n.Shape().Dimensions, dims) {
		return n
	}
	return G.BroadcastToDims(n, dims...)
}
