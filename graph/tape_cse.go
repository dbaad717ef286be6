package graph

import (
	"math"
	"strconv"

	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// commonSubexpressions returns, for every node of the graph (nodes in creation order), the
// node that computes the same value first: itself, or an earlier needed node of the same
// operation, output shape and attributes on the same operands (after the same replacement),
// the two operands of a sum or product in either order. The tape computes each such value
// once. The same operation on the same operands gives the same bits, and a + b = b + a and
// a·b = b·a exactly in IEEE arithmetic, so the results do not change. GoMLX's graphs repeat
// much: the autodiff of the scalarized matrix algebra broadcasts the same value and forms
// the same products in many places (cart-pole: 10 % of the needed nodes).
//
// Nodes of kinds this does not know (and parameters) are their own.
func commonSubexpressions(nodes []*G.Node, need []bool) []int32 {
	// Element-wise operations (nearly all nodes) are keyed by their type and operands alone,
	// packed in two words; the others by a string of those and their attributes.
	canon := make([]int32, len(nodes))
	fast := newPackedTable(len(nodes))
	slow := map[string]int32{}
	var buf []byte
	for i, n := range nodes {
		canon[i] = int32(i)
		if !need[i] {
			continue
		}
		t := n.Type()
		ins := n.Inputs()
		if len(ins) > 3 {
			continue
		}
		var in [3]int32
		for j, x := range ins {
			in[j] = canon[x.Id()]
		}
		buf = buf[:0]
		switch t {
		case G.NodeTypeAdd, G.NodeTypeMul:
			if in[0] > in[1] {
				in[0], in[1] = in[1], in[0]
			}
		case G.NodeTypeConstant:
			c, err := constantData(n)
			if err != nil || len(c) > 16 {
				continue
			}
			buf = appendInts(append(buf, byte(n.DType())), n.Shape().Dimensions)
			for _, v := range c {
				buf = strconv.AppendUint(append(buf, ';'), math.Float64bits(v), 16)
			}
		case G.NodeTypeBroadcastInDim:
			buf = appendInts(appendInts(buf, n.Shape().Dimensions), intsField(n, "broadcastAxes"))
		case G.NodeTypeSlice:
			buf = appendInts(appendInts(appendInts(buf, n.Shape().Dimensions), intsField(n, "starts")), intsField(n, "strides"))
		case G.NodeTypeTranspose:
			buf = appendInts(buf, intsField(n, "permutation"))
		case G.NodeTypeReduceSum:
			buf = appendInts(appendInts(buf, n.Shape().Dimensions), intsField(n, "axes"))
		case G.NodeTypeWhere, G.NodeTypeReshape, G.NodeTypeIdentity, G.NodeTypeConvertDType:
			buf = appendInts(append(buf, byte(n.DType())), n.Shape().Dimensions)
		default: // element-wise: the operands' shapes fix the output's
			_, unary := unaryOps[t]
			_, binary := binaryOps[t]
			if !unary && !binary {
				continue
			}
		}
		if len(buf) == 0 {
			k0 := uint64(t)<<40 | uint64(len(ins))<<32 | uint64(uint32(in[0]))
			k1 := uint64(uint32(in[1]))<<32 | uint64(uint32(in[2]))
			canon[i] = fast.findOrAdd(k0, k1, int32(i))
			continue
		}
		for j := range len(ins) {
			buf = strconv.AppendInt(append(buf, ','), int64(in[j]), 10)
		}
		k := strconv.Itoa(int(t)) + string(buf)
		if j, ok := slow[k]; ok {
			canon[i] = j
		} else {
			slow[k] = int32(i)
		}
	}
	return canon
}

// appendInts appends the decimal values of v to b, each after a separator.
func appendInts(b []byte, v []int) []byte {
	b = append(b, '|')
	for _, x := range v {
		b = strconv.AppendInt(append(b, ','), int64(x), 10)
	}
	return b
}

// packedTable is an open-addressing hash table from two-word keys to node indices: a Go map
// with a 16-byte key hashes through the generic path, which cost a third of a second per
// cart-pole graph; this one hashes with two multiplications.
type packedTable struct {
	k0, k1 []uint64
	v      []int32 // -1: empty
	mask   uint64
}

func newPackedTable(n int) *packedTable {
	size := 16
	for size < 2*n {
		size *= 2
	}
	t := &packedTable{k0: make([]uint64, size), k1: make([]uint64, size), v: make([]int32, size), mask: uint64(size - 1)}
	for i := range t.v {
		t.v[i] = -1
	}
	return t
}

// findOrAdd returns the value stored under (k0, k1), storing v there first if there is none.
// The table never holds more than half its size (newPackedTable's n keys at most).
func (t *packedTable) findOrAdd(k0, k1 uint64, v int32) int32 {
	h := (k0*0x9E3779B97F4A7C15 ^ k1*0xC2B2AE3D27D4EB4F) >> 17
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		switch {
		case t.v[i] < 0:
			t.k0[i], t.k1[i], t.v[i] = k0, k1, v
			return v
		case t.k0[i] == k0 && t.k1[i] == k1:
			return t.v[i]
		}
	}
}

// sameInputs returns n's inputs with each replaced by the node that computes its value first
// (canon, from commonSubexpressions): n.Inputs() itself where none is a repeat.
func sameInputs(n *G.Node, canon []int32, nodes []*G.Node) []*G.Node {
	ins := n.Inputs()
	for k, x := range ins {
		if canon[x.Id()] != int32(x.Id()) {
			out := append([]*G.Node(nil), ins...)
			for m := k; m < len(out); m++ {
				out[m] = nodes[canon[out[m].Id()]]
			}
			return out
		}
	}
	return ins
}
