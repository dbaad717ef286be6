package graph

import (
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// A tape runs a built GoMLX graph on the CPU in place of the simplego backend's executor: the
// graph's nodes, in order, become a flat list of instructions over float64 buffers whose
// places are planned once (a buffer is reused as soon as the last instruction that reads it
// has run, and an element-wise operation writes over an operand it reads for the last time),
// all in one []float64 per run that instructions address by offset, so that a run touches a
// small, contiguous working set. simplego's executor
// visits the graph's node structures and asks a buffer pool for every op; on the graphs of
// this tool (hundreds of thousands of small element-wise ops) that walk is bound by memory
// latency, not by arithmetic (docs/benchmarks.md, "Speed"). The numbers computed are the same operations
// in the same order, so a tape's results equal simplego's to the last bit on every test
// (TestTapeEqualsSimplego).
//
// Only the operations that this tool's graphs use are supported, in float64 (booleans held as
// 0 and 1); compileTape reports any other and the Program falls back to simplego. The
// environment variable NIOC_TAPE=off turns tapes off.
type tape struct {
	code    []instr
	consts  []tapeConst // copied into every run's memory once
	params  []int32     // offset of each graph parameter, by handle
	psizes  []int       // its elements
	outputs []int32     // offset of each output
	outDims [][]int
	memory  int // elements of a run's memory: every slot, constant and parameter, one after another
	strided []stridedSpec
	reduces []reduceSpec
	pool    sync.Pool // *[]float64: a run's memory
}

// tapeConst is a constant's data and its offset in a run's memory.
type tapeConst struct {
	off  int32
	data []float64
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

// instr is one instruction: out = op(in...). out and in are offsets in the run's memory (one
// []float64 holding every slot, constant and parameter). mode says how the operands of an
// element-wise binary op line up: 0 same size, 1 the second is one value, 2 the first is one
// value.
type instr struct {
	op   opcode
	sub  opcode // opBinaryS: the binary op
	mode uint8
	// inplace: the output is written over the slot of operand 1 or 2 (in[0] or in[1]), whose
	// last use this is; 0 for a slot of its own.
	inplace uint8
	out     int32
	in      [3]int32
	n       int32 // output elements
	aux     int32
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
	// dense: no operand broadcasts, each walks its slots in the output's order (from offset 0,
	// as opWhere's do): the loop runs over the slots themselves.
	dense bool
}

// reduceSpec: ReduceSum of an input of dims in, keeping out strides per input axis (0 for
// reduced axes); for opConcat, the operands' sizes along the axis and the outer/inner sizes.
type reduceSpec struct {
	inDims     []int
	outStrides []int
	parts      []int   // opConcat: each operand's extent along the axis
	operands   []int32 // opConcat: the operands' offsets
	outer      int     // opConcat
	inner      int     // opConcat
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
	// Values computed twice are computed once: every use of a repeat reads the first.
	canon := commonSubexpressions(nodes, need)
	index := func(n *G.Node) int32 { return canon[n.Id()] }
	same := func(n *G.Node) *G.Node { return nodes[canon[n.Id()]] }
	inputsOf := func(n *G.Node) []*G.Node { return sameInputs(n, canon, nodes) }
	repeat := func(i int) bool { return canon[i] != int32(i) }
	t := &tape{code: make([]instr, 0, len(nodes))}
	// While compiling, instructions name values by node; each value is given a slot (a buffer
	// shared with values whose lives do not overlap) or, for constants and parameters, a
	// place of its own; a last pass turns values into offsets in the run's memory.
	slotOf := make([]int32, len(nodes)) // value → slot; -1 for constants and parameters
	for i := range slotOf {
		slotOf[i] = -1
	}
	var sizes []int        // elements per slot
	var consts []tapeConst // off holds the constant's node until the last pass
	fused := fuseMulAdd(nodes, need, repeat, inputsOf, same, outputs)
	// The operands of every instruction: a node's inputs, a fused product's in place of it.
	operands := func(n *G.Node) []*G.Node {
		f := fused[n.Id()]
		if f.mul == nil {
			return inputsOf(n)
		}
		mi := inputsOf(f.mul)
		return []*G.Node{mi[0], mi[1], f.other}
	}
	// Last use of every value (outputs live to the end).
	lastUse := make([]int, len(nodes))
	for i, n := range nodes {
		if !need[i] || repeat(i) {
			continue
		}
		for _, in := range operands(n) {
			lastUse[index(in)] = i
		}
	}
	for _, o := range outputs {
		lastUse[index(o)] = len(nodes)
	}
	skip := make([]bool, len(nodes)) // repeats, and products computed by the instruction that adds them
	for i := range nodes {
		skip[i] = repeat(i)
	}
	for _, f := range fused {
		if f.mul != nil {
			skip[f.mul.Id()] = true
		}
	}
	free := map[int][]int32{}    // free slots by size
	aliases := map[int32]alias{} // values that are part of a parameter's or constant's memory
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
			consts = append(consts, tapeConst{off: int32(i), data: c})
			continue
		}
		in, err := t.instruction(n, index)
		if err != nil {
			return nil, err
		}
		if f := fused[n.Id()]; f.mul != nil {
			mi := f.mul.Inputs()
			in = instr{op: f.op, in: [3]int32{index(mi[0]), index(mi[1]), index(f.other)}}
		}
		// The output's slot: that of an operand read here for the last time where the
		// operation allows it (inPlace), else a free one of its size, else a new one.
		// Other operands are released only after, so an instruction never writes over an
		// operand it still reads.
		size := n.Shape().Size()
		ops := operands(n)
		// A copy (Reshape, Identity, a conversion that keeps the values) of a value read here
		// for the last time is that value: the value's slot becomes the copy's and nothing
		// runs (the looped form's programs take each entry of a packed input as a slice
		// reshaped, and pack their outputs as a stack reshaped).
		if in.op == opCopy {
			if j := index(ops[0]); lastUse[j] == i && slotOf[j] >= 0 {
				slotOf[i] = slotOf[j]
				lastUse[j] = -1
				continue
			}
		}
		// A copy or a contiguous slice of a parameter or constant (whose memory no
		// instruction writes: only values in slots are written over, inPlace) is that
		// memory: the value has no slot of its own and nothing runs.
		if off, ok := contiguousPart(n, in); ok {
			if j := index(ops[0]); slotOf[j] < 0 {
				base := j
				if a, ok := aliases[j]; ok {
					base, off = a.base, off+a.off
				}
				aliases[int32(i)] = alias{base: base, off: off}
				continue
			}
		}
		if k := inPlace(in, ops, i, size, lastUse, slotOf, sizes); k > 0 {
			j := index(ops[k-1])
			in.inplace = uint8(k)
			slotOf[i] = slotOf[j]
			lastUse[j] = -1 // its slot is now the output's
		} else if fs := free[size]; len(fs) > 0 {
			slotOf[i] = fs[len(fs)-1]
			free[size] = fs[:len(fs)-1]
		} else {
			slotOf[i] = int32(len(sizes))
			sizes = append(sizes, size)
		}
		in.out = int32(i)
		in.n = int32(size)
		t.code = append(t.code, in)
		for _, x := range ops {
			j := index(x)
			if lastUse[j] == i && slotOf[j] >= 0 {
				s := slotOf[j]
				free[sizes[s]] = append(free[sizes[s]], s)
				lastUse[j] = -1 // released once, however often it is an operand
			}
		}
	}
	// The run's memory: the slots, then the constants, then the parameters.
	slotOff := make([]int, len(sizes))
	for s, n := range sizes {
		slotOff[s] = t.memory
		t.memory += n
	}
	ownOff := map[int32]int{} // constants' and parameters' offsets
	for _, c := range consts {
		ownOff[c.off] = t.memory
		t.memory += len(c.data)
	}
	for _, in := range inputs {
		ownOff[index(in)] = t.memory
		t.psizes = append(t.psizes, in.Shape().Size())
		t.memory += in.Shape().Size()
	}
	if t.memory > math.MaxInt32 {
		return nil, fmt.Errorf("tape: %d elements of memory, more than offsets hold", t.memory)
	}
	offset := func(v int32) int32 { // 0 for the operands an instruction does not have
		if s := slotOf[v]; s >= 0 {
			return int32(slotOff[s])
		}
		if a, ok := aliases[v]; ok {
			return int32(ownOff[a.base] + a.off)
		}
		return int32(ownOff[v])
	}
	for k := range t.code {
		in := &t.code[k]
		in.out = offset(in.out)
		for m := range in.in {
			in.in[m] = offset(in.in[m])
		}
	}
	for r := range t.reduces {
		for m, v := range t.reduces[r].operands {
			t.reduces[r].operands[m] = offset(v)
		}
	}
	for _, c := range consts {
		t.consts = append(t.consts, tapeConst{off: int32(ownOff[c.off]), data: c.data})
	}
	for _, in := range inputs {
		t.params = append(t.params, offset(index(in)))
	}
	for _, o := range outputs {
		t.outputs = append(t.outputs, offset(index(o)))
		t.outDims = append(t.outDims, o.Shape().Dimensions)
	}
	return t, nil
}

// alias is a value that is part of the memory of the parameter or constant base (node
// index), from element off on.
type alias struct {
	base int32
	off  int
}

// contiguousPart reports whether node n, compiled to instruction in, takes a contiguous part of
// its operand's memory as it is, and from which element: a copy (Reshape, Identity, a
// conversion that keeps the values) from element 0, a Slice of one run of elements (every axis
// before the first it keeps more than one index of taken at one index, every axis after it
// whole, unit stride) from its first.
func contiguousPart(n *G.Node, in instr) (int, bool) {
	switch {
	case in.op == opCopy:
		return 0, true
	case n.Type() != G.NodeTypeSlice:
		return 0, false
	}
	dims, out := n.Inputs()[0].Shape().Dimensions, n.Shape().Dimensions
	starts, strides := intsField(n, "starts"), intsField(n, "strides")
	st := rowMajorStrides(dims)
	off, kept := 0, false
	for k := range out {
		off += st[k] * starts[k]
		switch {
		case kept && out[k] != dims[k]:
			return 0, false
		case out[k] > 1:
			if k < len(strides) && strides[k] > 1 {
				return 0, false
			}
			kept = true
		}
	}
	return off, true
}

// inPlace returns k > 0 when instruction in (the i-th node, of size elements, with operand
// nodes ops) may write its output over the slot of its k-th operand: an element-wise
// operation whose output element i depends only on the operands' elements i (or on a single
// value), reading that operand for the last time, where the operand is the same size and
// appears only once among ops. Commutative operations may take either operand's slot; Sub and
// Div only the first's when both are whole slices (tape_run.go computes them in place). The
// values computed are the same to the bit; fewer slots and no copies are written.
func inPlace(in instr, ops []*G.Node, i, size int, lastUse []int, slotOf []int32, sizes []int) int {
	var candidates []int
	switch in.op {
	case opAdd, opMul, opMax, opMin, opPow, opGT, opGE, opLT, opLE, opEq, opNe, opAnd, opOr:
		switch in.mode {
		case 0:
			candidates = []int{1, 2}
		case 1:
			candidates = []int{1}
		default:
			candidates = []int{2}
		}
	case opSub, opDiv:
		switch in.mode {
		case 0, 1:
			candidates = []int{1}
		default:
			candidates = []int{2}
		}
	case opMulAdd, opMulSub, opSubMul:
		candidates = []int{1, 2}
	case opCopy, opGather, opWhere, opReduce, opConcat, opBinaryS:
		return 0
	default: // the unary ops: out[i] = f(a[i])
		candidates = []int{1}
	}
	for _, k := range candidates {
		if k > len(ops) {
			continue
		}
		j := ops[k-1].Id()
		s := slotOf[j]
		if s < 0 || lastUse[j] != i || sizes[s] != size {
			continue
		}
		once := true
		for m, x := range ops {
			if m != k-1 && x.Id() == j {
				once = false
			}
		}
		if once {
			return k
		}
	}
	return 0
}

// fusion is an Add or Sub node computed with the product it adds: op is opMulAdd (mul +
// other), opMulSub (mul − other) or opSubMul (other − mul).
type fusion struct {
	op    opcode
	mul   *G.Node
	other *G.Node
}

// fuseMulAdd finds the Add and Sub nodes (indexed by Id; mul nil for the others) one of whose operands is a product of two
// values of the same shape that nothing else uses: one instruction then computes both,
// a·b ± c (Go rounds the product before the sum, as the two operations do; the result is the
// same to the bit). The scalarized matrix products of the likelihood are mostly such sums.
// Operands are read through same (commonSubexpressions), and repeats are not counted.
func fuseMulAdd(nodes []*G.Node, need []bool, repeat func(int) bool, inputs func(*G.Node) []*G.Node, same func(*G.Node) *G.Node, outputs []*G.Node) []fusion {
	uses := make([]int, len(nodes))
	for i, n := range nodes {
		if need[i] && !repeat(i) {
			for _, in := range inputs(n) {
				uses[in.Id()]++
			}
		}
	}
	for _, o := range outputs {
		uses[same(o).Id()] += 2 // an output is kept
	}
	size := func(n *G.Node) int { return n.Shape().Size() }
	product := func(x, n *G.Node) bool {
		if x.Type() != G.NodeTypeMul || uses[x.Id()] != 1 || x.DType() != dtypes.Float64 {
			return false
		}
		ab := inputs(x)
		a, b := ab[0], ab[1]
		return size(a) == size(n) && size(b) == size(n) && a.Shape().Rank() == n.Shape().Rank() &&
			b.Shape().Rank() == n.Shape().Rank()
	}
	out := make([]fusion, len(nodes))
	taken := make([]bool, len(nodes))
	for i, n := range nodes {
		t := n.Type()
		if !need[i] || repeat(i) || (t != G.NodeTypeAdd && t != G.NodeTypeSub) || n.DType() != dtypes.Float64 {
			continue
		}
		xy := inputs(n)
		x, y := xy[0], xy[1]
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
