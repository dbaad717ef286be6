package graph

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// GoMLX v0.26 back-propagates through Slice with Pad, which the simplego backend lacks, so any
// gradient through a slice fails there. This package replaces the Slice VJP (for unit strides)
// with one that surrounds the incoming adjoint with zero blocks by concatenation, which every
// backend supports. The slice's start indices are read from the node's description, the only
// place GoMLX v0.26 exposes them.
func init() {
	original := G.VJPRegistration[G.NodeTypeSlice]
	G.VJPRegistration[G.NodeTypeSlice] = func(node *G.Node, vjpOutputs []*G.Node, outputShape shapes.Shape) []*G.Node {
		starts, strides, ok := sliceParams(node)
		if !ok {
			return original(node, vjpOutputs, outputShape)
		}
		for _, s := range strides {
			if s > 1 {
				return original(node, vjpOutputs, outputShape)
			}
		}
		return []*G.Node{padWithZeros(vjpOutputs[0], node.Inputs()[0].Shape(), starts)}
	}
}

var sliceParamsRE = regexp.MustCompile(`starts=\[([0-9 ]*)\], limits=\[([0-9 ]*)\], strides=\[([0-9 ]*)\]`)

// sliceParams reads the starts and strides of a Slice node.
func sliceParams(node *G.Node) (starts, strides []int, ok bool) {
	m := sliceParamsRE.FindStringSubmatch(node.String())
	if m == nil {
		return nil, nil, false
	}
	parse := func(s string) ([]int, bool) {
		var out []int
		for _, f := range strings.Fields(s) {
			v, err := strconv.Atoi(f)
			if err != nil {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	}
	starts, ok1 := parse(m[1])
	strides, ok2 := parse(m[3])
	rank := node.Inputs()[0].Rank()
	if !ok1 || !ok2 || len(starts) != rank || len(strides) != rank {
		return nil, nil, false
	}
	return starts, strides, true
}

// padWithZeros places v at offset starts inside a zero tensor of the given shape.
func padWithZeros(v *G.Node, full shapes.Shape, starts []int) *G.Node {
	g := v.Graph()
	cur := v
	for axis := range full.Rank() {
		before := starts[axis]
		after := full.Dimensions[axis] - before - cur.Shape().Dimensions[axis]
		if after < 0 {
			panic(fmt.Sprintf("graph: slice adjoint %s does not fit in %s at %v", cur.Shape(), full, starts))
		}
		parts := make([]*G.Node, 0, 3)
		zeros := func(n int) *G.Node {
			dims := cur.Shape().Clone().Dimensions
			dims[axis] = n
			return G.Zeros(g, shapes.Make(v.DType(), dims...))
		}
		if before > 0 {
			parts = append(parts, zeros(before))
		}
		parts = append(parts, cur)
		if after > 0 {
			parts = append(parts, zeros(after))
		}
		if len(parts) > 1 {
			cur = G.Concatenate(parts, axis)
		}
	}
	return cur
}
