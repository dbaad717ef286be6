package graph

import (
	"fmt"
	"reflect"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// A tape's instructions from the graph's nodes: which operations it runs, and how.

func checkDType(n *G.Node) error {
	if d := n.DType(); d != dtypes.Float64 && d != dtypes.Bool {
		return fmt.Errorf("tape: node %s has dtype %s", n.Type(), d)
	}
	return nil
}

func constantData(n *G.Node) ([]float64, error) {
	v := n.ConstantValue()
	var out []float64
	err := v.ConstFlatData(func(flat any) {
		switch f := flat.(type) {
		case []float64:
			out = append([]float64(nil), f...)
		case []bool:
			out = make([]float64, len(f))
			for i, b := range f {
				if b {
					out[i] = 1
				}
			}
		}
	})
	if err == nil && out == nil {
		err = fmt.Errorf("tape: constant of dtype %s", v.DType())
	}
	return out, err
}

// field reads the unexported parameter name of node n's operation (GoMLX keeps them in the
// node's inputs struct; reflection reads them without changing anything).
func field(n *G.Node, name string) reflect.Value {
	return reflect.ValueOf(n).Elem().FieldByName("inputs").Elem().Elem().FieldByName(name)
}

func intsField(n *G.Node, name string) []int {
	v := field(n, name)
	out := make([]int, v.Len())
	for i := range out {
		out[i] = int(v.Index(i).Int())
	}
	return out
}

var binaryOps = map[G.NodeType]opcode{
	G.NodeTypeAdd: opAdd, G.NodeTypeSub: opSub, G.NodeTypeMul: opMul, G.NodeTypeDiv: opDiv,
	G.NodeTypeMax: opMax, G.NodeTypeMin: opMin, G.NodeTypePow: opPow,
	G.NodeTypeGreaterThan: opGT, G.NodeTypeGreaterOrEqual: opGE, G.NodeTypeLessThan: opLT,
	G.NodeTypeLessOrEqual: opLE, G.NodeTypeEqual: opEq, G.NodeTypeNotEqual: opNe,
	G.NodeTypeLogicalAnd: opAnd, G.NodeTypeLogicalOr: opOr,
}

var unaryOps = map[G.NodeType]opcode{
	G.NodeTypeNeg: opNeg, G.NodeTypeAbs: opAbs, G.NodeTypeSqrt: opSqrt, G.NodeTypeExp: opExp,
	G.NodeTypeLog: opLog, G.NodeTypeLog1p: opLog1p, G.NodeTypeExpm1: opExpm1, G.NodeTypeSin: opSin,
	G.NodeTypeCos: opCos, G.NodeTypeTanh: opTanh, G.NodeTypeLogistic: opLogistic,
	G.NodeTypeSign: opSign, G.NodeTypeLogicalNot: opNot,
	G.NodeTypeFloor: opFloor, G.NodeTypeCeil: opCeil, G.NodeTypeRound: opRound,
	G.NodeTypeIdentity: opCopy, G.NodeTypeReshape: opCopy,
}

// instruction returns n's instruction (without out and n).
func (t *tape) instruction(n *G.Node, index func(*G.Node) int32) (instr, error) {
	ins := n.Inputs()
	var in instr
	for k, x := range ins {
		if k < len(in.in) {
			in.in[k] = index(x)
		}
	}
	if n.NumOutputs() != 1 {
		return in, fmt.Errorf("tape: %s has %d outputs", n.Type(), n.NumOutputs())
	}
	out := n.Shape()
	if n.Type() == G.NodeTypeConvertDType {
		in.op = opCopy
		if n.DType() == dtypes.Bool && ins[0].DType() != dtypes.Bool {
			in.op = opToBool
		}
		return in, nil
	}
	if op, ok := unaryOps[n.Type()]; ok && len(ins) == 1 {
		in.op = op
		if ins[0].Shape().Size() != out.Size() {
			return in, fmt.Errorf("tape: %s changes the size", n.Type())
		}
		return in, nil
	}
	if op, ok := binaryOps[n.Type()]; ok && len(ins) == 2 {
		a, b := ins[0].Shape().Size(), ins[1].Shape().Size()
		switch {
		case a == out.Size() && b == out.Size() && alignsWith(ins[0], n) && alignsWith(ins[1], n):
			in.op, in.mode = op, 0
		case a == out.Size() && b == 1 && alignsWith(ins[0], n):
			in.op, in.mode = op, 1
		case b == out.Size() && a == 1 && alignsWith(ins[1], n):
			in.op, in.mode = op, 2
		default:
			in.op, in.sub = opBinaryS, op
			in.aux = t.addStrided(out.Dimensions, broadcastStrides(ins[0], out.Dimensions), broadcastStrides(ins[1], out.Dimensions))
		}
		return in, nil
	}
	switch n.Type() {
	case G.NodeTypeWhere:
		in.op = opWhere
		in.aux = t.addStrided(out.Dimensions, broadcastStrides(ins[0], out.Dimensions),
			broadcastStrides(ins[1], out.Dimensions), broadcastStrides(ins[2], out.Dimensions))
		return in, nil
	case G.NodeTypeBroadcastInDim:
		axes := intsField(n, "broadcastAxes")
		inDims := ins[0].Shape().Dimensions
		if len(axes) != len(inDims) {
			return in, fmt.Errorf("tape: BroadcastInDim with %d axes for rank %d", len(axes), len(inDims))
		}
		strides := make([]int, out.Rank())
		st := rowMajorStrides(inDims)
		for k, ax := range axes {
			if inDims[k] != 1 {
				strides[ax] = st[k]
			}
		}
		in.op = opGather
		in.aux = t.addStrided(out.Dimensions, strides)
		return in, nil
	case G.NodeTypeSlice:
		starts, strides := intsField(n, "starts"), intsField(n, "strides")
		st := rowMajorStrides(ins[0].Shape().Dimensions)
		s := make([]int, out.Rank())
		off := 0
		for k := range s {
			step := 1
			if k < len(strides) && strides[k] > 0 {
				step = strides[k]
			}
			s[k] = st[k] * step
			off += st[k] * starts[k]
		}
		in.op = opGather
		in.aux = t.addStrided(out.Dimensions, s)
		t.strided[in.aux].offsets[0] = off
		t.strided[in.aux].dense = off == 0 && t.strided[in.aux].dense
		return in, nil
	case G.NodeTypeTranspose:
		perm := intsField(n, "permutation")
		st := rowMajorStrides(ins[0].Shape().Dimensions)
		s := make([]int, out.Rank())
		for k, p := range perm {
			s[k] = st[p]
		}
		in.op = opGather
		in.aux = t.addStrided(out.Dimensions, s)
		return in, nil
	case G.NodeTypeReduceSum:
		axes := intsField(n, "axes")
		inDims := ins[0].Shape().Dimensions
		if len(axes) == 0 { // GoMLX: no axes means all
			for k := range inDims {
				axes = append(axes, k)
			}
		}
		reduced := make([]bool, len(inDims))
		for _, a := range axes {
			reduced[a] = true
		}
		var kept []int
		for k, d := range inDims {
			if !reduced[k] {
				kept = append(kept, d)
			}
		}
		ost := rowMajorStrides(kept)
		rs := reduceSpec{inDims: inDims, outStrides: make([]int, len(inDims))}
		j := 0
		for k := range inDims {
			if !reduced[k] {
				rs.outStrides[k] = ost[j]
				j++
			}
		}
		in.op = opReduce
		in.aux = int32(len(t.reduces))
		t.reduces = append(t.reduces, rs)
		return in, nil
	case G.NodeTypeConcatenate:
		axis := int(field(n, "axis").Int())
		dims := out.Dimensions
		rs := reduceSpec{outer: 1, inner: 1}
		for k := range axis {
			rs.outer *= dims[k]
		}
		for k := axis + 1; k < len(dims); k++ {
			rs.inner *= dims[k]
		}
		for _, x := range ins {
			rs.parts = append(rs.parts, x.Shape().Dimensions[axis])
			rs.operands = append(rs.operands, index(x))
		}
		in.op = opConcat
		in.aux = int32(len(t.reduces))
		t.reduces = append(t.reduces, rs)
		return in, nil
	}
	return in, fmt.Errorf("tape: unsupported node %s", n.Type())
}

// alignsWith reports whether a's elements line up one to one with b's when a has b's size:
// a has b's rank (and so, with its size, its dimensions), or a is a single value.
func alignsWith(a, b *G.Node) bool {
	return a.Shape().Rank() == b.Shape().Rank() || a.Shape().Size() == 1
}

func rowMajorStrides(dims []int) []int {
	st := make([]int, len(dims))
	s := 1
	for k := len(dims) - 1; k >= 0; k-- {
		st[k] = s
		s *= dims[k]
	}
	return st
}

// broadcastStrides returns x's strides along the output axes for implicit broadcasting: x of
// the output's rank with dims 1 where it broadcasts, or a scalar.
func broadcastStrides(x *G.Node, out []int) []int {
	dims := x.Shape().Dimensions
	s := make([]int, len(out))
	if len(dims) != len(out) {
		return s // a scalar
	}
	st := rowMajorStrides(dims)
	for k := range out {
		if dims[k] != 1 {
			s[k] = st[k]
		}
	}
	return s
}

func (t *tape) addStrided(dims []int, strides ...[]int) int32 {
	sp := stridedSpec{dims: dims, strides: strides, offsets: make([]int, len(strides)), dense: true}
	row := rowMajorStrides(dims)
	for _, st := range strides {
		for k, d := range dims {
			if d != 1 && st[k] != row[k] {
				sp.dense = false
			}
		}
	}
	if len(dims) <= 3 {
		sp.small = true
		pad := 3 - len(dims)
		sp.d3 = [3]int{1, 1, 1}
		copy(sp.d3[pad:], dims)
		sp.s3 = make([][3]int, len(strides))
		for k, st := range strides {
			copy(sp.s3[k][pad:], st)
		}
	}
	t.strided = append(t.strided, sp)
	return int32(len(t.strided) - 1)
}
