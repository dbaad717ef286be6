package graph

import (
	"fmt"

	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// Unstack splits a node of dimensions [d_1, ..., d_k, batch...] into the d_1·…·d_k batched
// scalars of dimensions [batch...], in row-major order of the leading k axes. Use it for
// inputs that are not differentiated (data, nominal trajectories): slicing is cheap forward,
// but each slice's gradient costs as much as the whole input.
func Unstack(x *G.Node, k int) []S {
	dims := x.Shape().Dimensions
	if k > len(dims) {
		panic(fmt.Sprintf("graph: Unstack of %d leading axes of a rank-%d node", k, len(dims)))
	}
	count := 1
	for _, d := range dims[:k] {
		count *= d
	}
	rest := dims[k:]
	flat := G.Reshape(x, append([]int{count}, rest...)...)
	out := make([]S, count)
	for i := range count {
		out[i] = N(G.Reshape(G.Slice(flat, G.AxisRange(i, i+1)), rest...))
	}
	return out
}

// Stack materializes the scalars with dimensions batch and stacks them along a new leading
// axis, then reshapes to [lead..., batch...].
func Stack(g *G.Graph, xs []S, lead []int, batch []int) *G.Node {
	nodes := make([]*G.Node, len(xs))
	for i, x := range xs {
		nodes[i] = Materialize(g, x, batch...)
	}
	stacked := G.Stack(nodes, 0)
	return G.Reshape(stacked, append(append([]int{}, lead...), batch...)...)
}

// Series groups flat scalars [T][d] into T vectors of length d.
func Series(flat []S, T, d int) []Vec {
	if len(flat) != T*d {
		panic(fmt.Sprintf("graph: Series of %d scalars as %d×%d", len(flat), T, d))
	}
	out := make([]Vec, T)
	for t := range T {
		out[t] = Vec(flat[t*d : (t+1)*d])
	}
	return out
}

// MatSeries groups flat scalars [T][r][c] into T r×c matrices.
func MatSeries(flat []S, T, r, c int) []Mat {
	if len(flat) != T*r*c {
		panic(fmt.Sprintf("graph: MatSeries of %d scalars as %d×%d×%d", len(flat), T, r, c))
	}
	out := make([]Mat, T)
	for t := range T {
		m := NewMat(r, c)
		for i := range r {
			copy(m[i], flat[(t*r+i)*c:(t*r+i+1)*c])
		}
		out[t] = m
	}
	return out
}
