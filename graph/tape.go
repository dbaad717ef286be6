package graph

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"sync"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// A tape runs a built GoMLX graph on the CPU in place of the simplego backend's executor: the
// graph's nodes, in order, become a flat list of instructions over float64 buffers whose
// places are planned once (a buffer is reused as soon as the last instruction that reads it
// has run), so that a run touches a small, contiguous working set. simplego's executor
// visits the graph's node structures and asks a buffer pool for every op; on the graphs of
// this tool (hundreds of thousands of small element-wise ops) that walk is bound by memory
// latency, not by arithmetic (README, "Speed"). The numbers computed are the same operations
// in the same order, so a tape's results equal simplego's to the last bit on every test
// (TestTapeEqualsSimplego).
//
// Only the operations that this tool's graphs use are supported, in float64 (booleans held as
// 0 and 1); compileTape reports any other and the Program falls back to simplego. The
// environment variable NIOC_TAPE=off turns tapes off.
type tape struct {
	code    []instr
	nvals   int
	consts  map[int32][]float64 // value → constant data
	params  []int32             // value of each graph parameter, by handle
	outputs []int32
	outDims [][]int
	slotOf  []int32 // value → slot; -1 for constants and parameters
	sizes   []int   // elements per slot
	strided []stridedSpec
	reduces []reduceSpec
	pool    sync.Pool // *tapeRun
}

// EnvTape is the environment variable that turns tapes off ("off").
const EnvTape = "NIOC_TAPE"

func tapesEnabled() bool { return os.Getenv(EnvTape) != "off" }

type opcode uint8

const (
	opAdd opcode = iota
	opSub
	opMul
	opDiv
	opMax
	opMin
	opPow
	opGT
	opGE
	opLT
	opLE
	opEq
	opNe
	opAnd
	opOr
	opNeg
	opAbs
	opSqrt
	opExp
	opLog
	opLog1p
	opExpm1
	opSin
	opCos
	opTanh
	opLogistic
	opSign
	opNot
	opFloor
	opCeil
	opRound
	opToBool
	opCopy    // Identity, Reshape, ConvertDType
	opGather  // strided copy: BroadcastInDim, Slice, Transpose (strided[aux])
	opWhere   // in[0] ? in[1] : in[2], operands broadcast by strided[aux]
	opReduce  // ReduceSum by reduces[aux]
	opConcat  // concatenate: reduces[aux] describes the operands
	opBinaryS // binary with strided operands: strided[aux], op in sub
	opMulAdd  // in[0]·in[1] + in[2]
	opMulSub  // in[0]·in[1] − in[2]
	opSubMul  // in[2] − in[0]·in[1]
)

// instr is one instruction: out = op(in...). mode says how the operands of an element-wise
// binary op line up: 0 same size, 1 the second is one value, 2 the first is one value.
type instr struct {
	op   opcode
	sub  opcode // opBinaryS: the binary op
	mode uint8
	out  int32
	in   [3]int32
	n    int32 // output elements
	aux  int32
}

// stridedSpec maps an output multi-index to input offsets: out dims and, per operand, one
// stride per output axis (0 along broadcast axes), plus a start offset.
type stridedSpec struct {
	dims    []int
	strides [][]int
	offsets []int
	// The same padded to rank 3 (leading dims of 1), when the rank is at most 3: the loops
	// that run nearly all of these ops.
	small bool
	d3    [3]int
	s3    [][3]int
}

// reduceSpec: ReduceSum of an input of dims in, keeping out strides per input axis (0 for
// reduced axes); for opConcat, the operands' sizes along the axis and the outer/inner sizes.
type reduceSpec struct {
	inDims     []int
	outStrides []int
	parts      []int   // opConcat: each operand's extent along the axis
	operands   []int32 // opConcat: the operands' values
	outer      int     // opConcat
	inner      int     // opConcat
}

type tapeRun struct {
	slots [][]float64
	vals  [][]float64
}

// compileTape compiles the graph g, whose parameters are inputs, to a tape computing outputs.
// It returns an error naming the first node it does not support.
func compileTape(g *G.Graph, inputs, outputs []*G.Node) (*tape, error) {
	nodes := g.Nodes() // in creation order, a node's position is its Id
	// The nodes the outputs need.
	need := make([]bool, len(nodes))
	stack := append([]*G.Node(nil), outputs...)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i := x.Id(); !need[i] {
			need[i] = true
			stack = append(stack, x.Inputs()...)
		}
	}
	index := func(n *G.Node) int32 { return int32(n.Id()) }
	t := &tape{nvals: len(nodes), consts: map[int32][]float64{}, slotOf: make([]int32, len(nodes)), code: make([]instr, 0, len(nodes))}
	for i := range t.slotOf {
		t.slotOf[i] = -1
	}
	t.params = make([]int32, len(inputs))
	for i, in := range inputs {
		t.params[i] = index(in)
	}
	fused := fuseMulAdd(nodes, need, outputs)
	// The operands of every instruction: a node's inputs, a fused product's in place of it.
	operands := func(n *G.Node) []*G.Node {
		f, ok := fused[n.Id()]
		if !ok {
			return n.Inputs()
		}
		return []*G.Node{f.mul.Inputs()[0], f.mul.Inputs()[1], f.other}
	}
	// Last use of every value (outputs live to the end).
	lastUse := make([]int, len(nodes))
	for i, n := range nodes {
		if !need[i] {
			continue
		}
		for _, in := range operands(n) {
			lastUse[index(in)] = i
		}
	}
	for _, o := range outputs {
		lastUse[index(o)] = len(nodes)
	}
	skip := make([]bool, len(nodes)) // products computed by the instruction that adds them
	for _, f := range fused {
		skip[f.mul.Id()] = true
	}
	free := map[int][]int32{} // free slots by size
	for i, n := range nodes {
		if !need[i] || skip[i] {
			continue
		}
		if err := checkDType(n); err != nil {
			return nil, err
		}
		switch n.Type() {
		case G.NodeTypeParameter:
			continue
		case G.NodeTypeConstant:
			c, err := constantData(n)
			if err != nil {
				return nil, err
			}
			t.consts[int32(i)] = c
			continue
		}
		in, err := t.instruction(n, index)
		if err != nil {
			return nil, err
		}
		if f, ok := fused[n.Id()]; ok {
			in = instr{op: f.op, in: [3]int32{index(f.mul.Inputs()[0]), index(f.mul.Inputs()[1]), index(f.other)}}
		}
		// The output's slot: a free one of its size, else a new one. Inputs are released
		// only after, so an instruction never writes over its own operands.
		size := n.Shape().Size()
		if fs := free[size]; len(fs) > 0 {
			t.slotOf[i] = fs[len(fs)-1]
			free[size] = fs[:len(fs)-1]
		} else {
			t.slotOf[i] = int32(len(t.sizes))
			t.sizes = append(t.sizes, size)
		}
		in.out = int32(i)
		in.n = int32(size)
		t.code = append(t.code, in)
		for _, x := range operands(n) {
			j := index(x)
			if lastUse[j] == i && t.slotOf[j] >= 0 {
				s := t.slotOf[j]
				free[t.sizes[s]] = append(free[t.sizes[s]], s)
				lastUse[j] = -1 // released once, however often it is an operand
			}
		}
	}
	for _, o := range outputs {
		t.outputs = append(t.outputs, index(o))
		t.outDims = append(t.outDims, o.Shape().Dimensions)
	}
	return t, nil
}

// fusion is an Add or Sub node computed with the product it adds: op is opMulAdd (mul +
// other), opMulSub (mul − other) or opSubMul (other − mul).
type fusion struct {
	op    opcode
	mul   *G.Node
	other *G.Node
}

// fuseMulAdd finds the Add and Sub nodes (by Id) one of whose operands is a product of two
// values of the same shape that nothing else uses: one instruction then computes both,
// a·b ± c (Go rounds the product before the sum, as the two operations do; the result is the
// same to the bit). The scalarized matrix products of the likelihood are mostly such sums.
func fuseMulAdd(nodes []*G.Node, need []bool, outputs []*G.Node) map[G.NodeId]fusion {
	uses := make([]int, len(nodes))
	for i, n := range nodes {
		if need[i] {
			for _, in := range n.Inputs() {
				uses[in.Id()]++
			}
		}
	}
	for _, o := range outputs {
		uses[o.Id()] += 2 // an output is kept
	}
	size := func(n *G.Node) int { return n.Shape().Size() }
	product := func(x, n *G.Node) bool {
		if x.Type() != G.NodeTypeMul || uses[x.Id()] != 1 || x.DType() != dtypes.Float64 {
			return false
		}
		a, b := x.Inputs()[0], x.Inputs()[1]
		return size(a) == size(n) && size(b) == size(n) && a.Shape().Rank() == n.Shape().Rank() &&
			b.Shape().Rank() == n.Shape().Rank()
	}
	out := map[G.NodeId]fusion{}
	taken := map[G.NodeId]bool{}
	for i, n := range nodes {
		t := n.Type()
		if !need[i] || (t != G.NodeTypeAdd && t != G.NodeTypeSub) || n.DType() != dtypes.Float64 {
			continue
		}
		x, y := n.Inputs()[0], n.Inputs()[1]
		if x == y {
			continue
		}
		sameShape := func(c *G.Node) bool { return size(c) == size(n) && c.Shape().Rank() == n.Shape().Rank() }
		switch {
		case product(x, n) && sameShape(y) && !taken[x.Id()]:
			op := opMulAdd
			if t == G.NodeTypeSub {
				op = opMulSub
			}
			out[n.Id()], taken[x.Id()] = fusion{op: op, mul: x, other: y}, true
		case product(y, n) && sameShape(x) && !taken[y.Id()]:
			op := opMulAdd
			if t == G.NodeTypeSub {
				op = opSubMul
			}
			out[n.Id()], taken[y.Id()] = fusion{op: op, mul: y, other: x}, true
		}
	}
	return out
}

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
		case a == out.Size() && b == out.Size() && sameDims(ins[0], n) && sameDims(ins[1], n):
			in.op, in.mode = op, 0
		case a == out.Size() && b == 1 && sameDims(ins[0], n):
			in.op, in.mode = op, 1
		case b == out.Size() && a == 1 && sameDims(ins[1], n):
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

func sameDims(a, b *G.Node) bool {
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
	sp := stridedSpec{dims: dims, strides: strides, offsets: make([]int, len(strides))}
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

// gather runs out[i] = a[offset + Σ idx·stride] over the output's multi-indices.
func (s *stridedSpec) gather(out, a []float64) {
	if !s.small {
		s.each(func(i int, off []int) { out[i] = a[off[0]] })
		return
	}
	d, st, k := s.d3, s.s3[0], 0
	for i0 := range d[0] {
		o0 := s.offsets[0] + i0*st[0]
		for i1 := range d[1] {
			o1 := o0 + i1*st[1]
			if st[2] == 0 {
				v := a[o1]
				for range d[2] {
					out[k] = v
					k++
				}
				continue
			}
			for i2 := range d[2] {
				out[k] = a[o1+i2*st[2]]
				k++
			}
		}
	}
}

// binary runs out[i] = f(a[·], b[·]) over the output's multi-indices.
func (s *stridedSpec) binary(out, a, b []float64, f func(x, y float64) float64) {
	if !s.small {
		s.each(func(i int, off []int) { out[i] = f(a[off[0]], b[off[1]]) })
		return
	}
	d, sa, sb, k := s.d3, s.s3[0], s.s3[1], 0
	for i0 := range d[0] {
		for i1 := range d[1] {
			oa, ob := i0*sa[0]+i1*sa[1], i0*sb[0]+i1*sb[1]
			for i2 := range d[2] {
				out[k] = f(a[oa+i2*sa[2]], b[ob+i2*sb[2]])
				k++
			}
		}
	}
}

// where runs out[i] = c[·] ≠ 0 ? a[·] : b[·] over the output's multi-indices.
func (s *stridedSpec) where(out, c, a, b []float64) {
	if !s.small {
		s.each(func(i int, off []int) {
			if c[off[0]] != 0 {
				out[i] = a[off[1]]
			} else {
				out[i] = b[off[2]]
			}
		})
		return
	}
	d, sc, sa, sb, k := s.d3, s.s3[0], s.s3[1], s.s3[2], 0
	for i0 := range d[0] {
		for i1 := range d[1] {
			oc, oa, ob := i0*sc[0]+i1*sc[1], i0*sa[0]+i1*sa[1], i0*sb[0]+i1*sb[1]
			for i2 := range d[2] {
				if c[oc+i2*sc[2]] != 0 {
					out[k] = a[oa+i2*sa[2]]
				} else {
					out[k] = b[ob+i2*sb[2]]
				}
				k++
			}
		}
	}
}

// reduce adds a (of dims inDims) into out at the kept axes' strides.
func (rs *reduceSpec) reduce(out, a []float64) {
	clear(out)
	if len(rs.inDims) > 3 {
		eachIndex(rs.inDims, func(i int, idx []int) {
			o := 0
			for k, x := range idx {
				o += x * rs.outStrides[k]
			}
			out[o] += a[i]
		})
		return
	}
	pad := 3 - len(rs.inDims)
	d, st := [3]int{1, 1, 1}, [3]int{}
	copy(d[pad:], rs.inDims)
	copy(st[pad:], rs.outStrides)
	k := 0
	for i0 := range d[0] {
		for i1 := range d[1] {
			o := i0*st[0] + i1*st[1]
			if st[2] == 0 {
				sum := out[o]
				for range d[2] {
					sum += a[k]
					k++
				}
				out[o] = sum
				continue
			}
			for i2 := range d[2] {
				out[o+i2*st[2]] += a[k]
				k++
			}
		}
	}
}

// run runs the tape on the inputs (float64 tensors, in parameter order) and returns the
// outputs. Runs may overlap: each uses its own buffers.
func (t *tape) run(inputs []*tensors.Tensor) ([]Tensor, error) {
	if len(inputs) != len(t.params) {
		return nil, fmt.Errorf("tape: %d inputs for %d parameters", len(inputs), len(t.params))
	}
	r, _ := t.pool.Get().(*tapeRun)
	if r == nil {
		r = &tapeRun{slots: make([][]float64, len(t.sizes)), vals: make([][]float64, t.nvals)}
		for s, n := range t.sizes {
			r.slots[s] = make([]float64, n)
		}
		for v, s := range t.slotOf {
			if s >= 0 {
				r.vals[v] = r.slots[s]
			}
		}
		for v, c := range t.consts {
			r.vals[v] = c
		}
	}
	defer t.pool.Put(r)
	for i, p := range t.params {
		r.vals[p] = tensors.MustCopyFlatData[float64](inputs[i])
	}
	for k := range t.code {
		t.exec(&t.code[k], r.vals)
	}
	out := make([]Tensor, len(t.outputs))
	for i, o := range t.outputs {
		out[i] = Tensor{Data: append([]float64(nil), r.vals[o]...), Dims: t.outDims[i]}
	}
	return out, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (t *tape) exec(in *instr, vals [][]float64) {
	out := vals[in.out][:in.n]
	a := vals[in.in[0]]
	switch in.op {
	case opAdd, opSub, opMul, opDiv:
		binaryFast(in.op, in.mode, out, a, vals[in.in[1]])
	case opMax, opMin, opPow, opGT, opGE, opLT, opLE, opEq, opNe, opAnd, opOr:
		b := vals[in.in[1]]
		f := binaryFunc(in.op)
		switch in.mode {
		case 0:
			for i := range out {
				out[i] = f(a[i], b[i])
			}
		case 1:
			y := b[0]
			for i := range out {
				out[i] = f(a[i], y)
			}
		default:
			x := a[0]
			for i := range out {
				out[i] = f(x, b[i])
			}
		}
	case opBinaryS:
		t.strided[in.aux].binary(out, a, vals[in.in[1]], binaryFunc(in.sub))
	case opMulAdd, opMulSub, opSubMul:
		b, c := vals[in.in[1]][:len(out)], vals[in.in[2]][:len(out)]
		a = a[:len(out)]
		// float64(·) rounds the product first (no fused multiply-add): the same bits as Mul
		// and then Add or Sub.
		switch in.op {
		case opMulAdd:
			for i := range out {
				out[i] = float64(a[i]*b[i]) + c[i]
			}
		case opMulSub:
			for i := range out {
				out[i] = float64(a[i]*b[i]) - c[i]
			}
		default:
			for i := range out {
				out[i] = c[i] - float64(a[i]*b[i])
			}
		}
	case opNeg:
		for i := range out {
			out[i] = -a[i]
		}
	case opCopy:
		copy(out, a[:in.n])
	case opGather:
		t.strided[in.aux].gather(out, a)
	case opWhere:
		t.strided[in.aux].where(out, a, vals[in.in[1]], vals[in.in[2]])
	case opReduce:
		t.reduces[in.aux].reduce(out, a)
	case opConcat:
		rs := &t.reduces[in.aux]
		pos := 0
		for o := range rs.outer {
			for p, part := range rs.parts {
				src := vals[rs.operands[p]]
				w := part * rs.inner
				copy(out[pos:pos+w], src[o*w:(o+1)*w])
				pos += w
			}
		}
	default:
		f := unaryFunc(in.op)
		for i := range out {
			out[i] = f(a[i])
		}
	}
}

// binaryFast runs the four arithmetic operations without a call per element.
func binaryFast(op opcode, mode uint8, out, a, b []float64) {
	switch mode {
	case 0:
		a, b = a[:len(out)], b[:len(out)]
		switch op {
		case opAdd:
			for i := range out {
				out[i] = a[i] + b[i]
			}
		case opSub:
			for i := range out {
				out[i] = a[i] - b[i]
			}
		case opMul:
			for i := range out {
				out[i] = a[i] * b[i]
			}
		case opDiv:
			for i := range out {
				out[i] = a[i] / b[i]
			}
		}
	case 1:
		a, y := a[:len(out)], b[0]
		switch op {
		case opAdd:
			for i := range out {
				out[i] = a[i] + y
			}
		case opSub:
			for i := range out {
				out[i] = a[i] - y
			}
		case opMul:
			for i := range out {
				out[i] = a[i] * y
			}
		case opDiv:
			for i := range out {
				out[i] = a[i] / y
			}
		}
	default:
		x, b := a[0], b[:len(out)]
		switch op {
		case opAdd:
			for i := range out {
				out[i] = x + b[i]
			}
		case opSub:
			for i := range out {
				out[i] = x - b[i]
			}
		case opMul:
			for i := range out {
				out[i] = x * b[i]
			}
		case opDiv:
			for i := range out {
				out[i] = x / b[i]
			}
		}
	}
}

func binaryFunc(op opcode) func(a, b float64) float64 {
	switch op {
	case opAdd:
		return func(a, b float64) float64 { return a + b }
	case opSub:
		return func(a, b float64) float64 { return a - b }
	case opMul:
		return func(a, b float64) float64 { return a * b }
	case opDiv:
		return func(a, b float64) float64 { return a / b }
	case opMax:
		return func(a, b float64) float64 {
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.NaN()
			}
			return math.Max(a, b)
		}
	case opMin:
		return func(a, b float64) float64 {
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.NaN()
			}
			return math.Min(a, b)
		}
	case opPow:
		return math.Pow
	case opGT:
		return func(a, b float64) float64 { return b2f(a > b) }
	case opGE:
		return func(a, b float64) float64 { return b2f(a >= b) }
	case opLT:
		return func(a, b float64) float64 { return b2f(a < b) }
	case opLE:
		return func(a, b float64) float64 { return b2f(a <= b) }
	case opEq:
		return func(a, b float64) float64 { return b2f(a == b) }
	case opNe:
		return func(a, b float64) float64 { return b2f(a != b) }
	case opAnd:
		return func(a, b float64) float64 { return b2f(a != 0 && b != 0) }
	case opOr:
		return func(a, b float64) float64 { return b2f(a != 0 || b != 0) }
	}
	panic(fmt.Sprintf("tape: no binary op %d", op))
}

func unaryFunc(op opcode) func(float64) float64 {
	switch op {
	case opAbs:
		return math.Abs
	case opSqrt:
		return math.Sqrt
	case opExp:
		return math.Exp
	case opLog:
		return math.Log
	case opLog1p:
		return math.Log1p
	case opExpm1:
		return math.Expm1
	case opSin:
		return math.Sin
	case opCos:
		return math.Cos
	case opTanh:
		return math.Tanh
	case opLogistic:
		return func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	case opSign:
		return func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return x // ±0 and NaN
		}
	case opNot:
		return func(x float64) float64 { return b2f(x == 0) }
	case opFloor:
		return math.Floor
	case opCeil:
		return math.Ceil
	case opRound:
		return math.Round
	case opToBool:
		return func(x float64) float64 { return b2f(x != 0) }
	}
	panic(fmt.Sprintf("tape: no unary op %d", op))
}

// each calls f for every output element, in row-major order, with the operands' offsets.
func (s *stridedSpec) each(f func(i int, off []int)) {
	off := append([]int(nil), s.offsets...)
	eachIndex(s.dims, func(i int, idx []int) {
		for k, st := range s.strides {
			o := s.offsets[k]
			for ax, x := range idx {
				o += x * st[ax]
			}
			off[k] = o
		}
		f(i, off)
	})
}

// eachIndex calls f for every multi-index of dims in row-major order with its flat position.
func eachIndex(dims []int, f func(i int, idx []int)) {
	size := 1
	for _, d := range dims {
		size *= d
	}
	idx := make([]int, len(dims))
	for i := range size {
		f(i, idx)
		for k := len(dims) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < dims[k] {
				break
			}
			idx[k] = 0
		}
	}
}
