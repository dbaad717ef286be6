package graph

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/nioc-gpu/nioc-gpu/internal/simd"
	"github.com/viterin/vek"
)

// run runs the tape on the inputs (float64 tensors, in parameter order) and returns the
// outputs. Runs may overlap: each uses its own memory.
func (t *tape) run(inputs []*tensors.Tensor) ([]Tensor, error) {
	out := make([]Tensor, len(t.outputs))
	err := t.runWith(inputs, func(i int, data []float64, dims []int) {
		out[i] = Tensor{Data: append([]float64(nil), data...), Dims: dims}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runTensors is run with the outputs as tensors, each copied once from the run's memory.
func (t *tape) runTensors(inputs []*tensors.Tensor) ([]*tensors.Tensor, error) {
	out := make([]*tensors.Tensor, len(t.outputs))
	err := t.runWith(inputs, func(i int, data []float64, dims []int) {
		out[i] = tensors.FromShape(shapes.Make(dtypes.Float64, dims...))
		tensors.MustMutableFlatData(out[i], func(flat []float64) { copy(flat, data) })
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runWith runs the tape on the inputs and hands emit each output's values in the run's
// memory (valid during the call only) and dimensions.
func (t *tape) runWith(inputs []*tensors.Tensor, emit func(i int, data []float64, dims []int)) error {
	if len(inputs) != len(t.params) {
		return fmt.Errorf("tape: %d inputs for %d parameters", len(inputs), len(t.params))
	}
	for i, in := range inputs {
		if n := in.Shape().Size(); n != t.psizes[i] {
			return fmt.Errorf("tape: input %d has %d elements, the tape %d", i, n, t.psizes[i])
		}
	}
	m, _ := t.pool.Get().(*[]float64)
	if m == nil {
		mem := make([]float64, t.memory)
		for _, c := range t.consts {
			copy(mem[c.off:], c.data)
		}
		m = &mem
	}
	defer t.pool.Put(m)
	mem := *m
	for i, p := range t.params {
		if err := tensors.ConstFlatData(inputs[i], func(x []float64) { copy(mem[p:int(p)+t.psizes[i]], x) }); err != nil {
			return fmt.Errorf("tape: input %d: %w", i, err)
		}
	}
	for k := range t.code {
		t.exec(&t.code[k], mem)
	}
	for i, o := range t.outputs {
		n := 1
		for _, d := range t.outDims[i] {
			n *= d
		}
		emit(i, mem[o:int(o)+n], t.outDims[i])
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// exec runs one instruction on the run's memory m. Operands are the memory from their offset
// on: each operation reads only its own elements.
func (t *tape) exec(in *instr, m []float64) {
	out := m[in.out : in.out+in.n]
	a := m[in.in[0]:]
	switch in.op {
	case opAdd, opSub, opMul, opDiv:
		binaryFast(in.op, in.mode, in.inplace, out, a, m[in.in[1]:])
	case opMax, opMin, opPow, opGT, opGE, opLT, opLE, opEq, opNe, opAnd, opOr:
		b := m[in.in[1]:]
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
		t.strided[in.aux].binary(out, a, m[in.in[1]:], in.sub)
	case opMulAdd, opMulSub, opSubMul:
		b, c := m[in.in[1]:][:len(out)], m[in.in[2]:][:len(out)]
		// The product is rounded first (no fused multiply-add): the same bits as Mul and
		// then Add or Sub.
		switch in.inplace {
		case 1: // out is a
			vek.Mul_Inplace(out, b)
		case 2: // out is b: a·b = b·a exactly
			vek.Mul_Inplace(out, a[:len(out)])
		default:
			simd.Mul(out, a, b)
		}
		switch in.op {
		case opMulAdd:
			vek.Add_Inplace(out, c)
		case opMulSub:
			vek.Sub_Inplace(out, c)
		default:
			for i := range out {
				out[i] = c[i] - out[i]
			}
		}
	case opNeg:
		if in.inplace == 1 {
			vek.Neg_Inplace(out)
		} else {
			vek.Neg_Into(out, a[:len(out)])
		}
	case opCopy:
		copy(out, a[:in.n])
	case opGather:
		t.strided[in.aux].gather(out, a)
	case opWhere:
		t.strided[in.aux].where(out, a, m[in.in[1]:], m[in.in[2]:])
	case opReduce:
		t.reduces[in.aux].reduce(out, a)
	case opConcat:
		rs := &t.reduces[in.aux]
		pos := 0
		for o := range rs.outer {
			for p, part := range rs.parts {
				src := m[rs.operands[p]:]
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

// binaryFast runs the four arithmetic operations on whole slices, with SIMD instructions where
// the CPU has them (github.com/viterin/vek: AVX2 on x86-64, pure Go elsewhere). Each element is
// the one IEEE operation, so the bits are those of a loop (and of simplego). inplace says that
// out is a's slot (1) or b's (2) (tape.inPlace chose it): the operation then runs in place.
func binaryFast(op opcode, mode, inplace uint8, out, a, b []float64) {
	switch mode {
	case 0:
		a, b = a[:len(out)], b[:len(out)]
		switch {
		case inplace == 1: // out is a: out op= b
			switch op {
			case opAdd:
				vek.Add_Inplace(out, b)
			case opSub:
				vek.Sub_Inplace(out, b)
			case opMul:
				vek.Mul_Inplace(out, b)
			case opDiv:
				vek.Div_Inplace(out, b)
			}
		case inplace == 2: // out is b, and op is Add or Mul: a + b = b + a exactly
			if op == opAdd {
				vek.Add_Inplace(out, a)
			} else {
				vek.Mul_Inplace(out, a)
			}
		default:
			switch op {
			case opAdd:
				vek.Add_Into(out, a, b)
			case opSub:
				vek.Sub_Into(out, a, b)
			case opMul:
				simd.Mul(out, a, b)
			case opDiv:
				vek.Div_Into(out, a, b)
			}
		}
	case 1:
		a, y := a[:len(out)], b[0]
		if inplace == 1 {
			switch op {
			case opAdd:
				vek.AddNumber_Inplace(out, y)
			case opSub:
				vek.SubNumber_Inplace(out, y)
			case opMul:
				vek.MulNumber_Inplace(out, y)
			case opDiv:
				vek.DivNumber_Inplace(out, y)
			}
			return
		}
		switch op {
		case opAdd:
			vek.AddNumber_Into(out, a, y)
		case opSub:
			vek.SubNumber_Into(out, a, y)
		case opMul:
			vek.MulNumber_Into(out, a, y)
		case opDiv:
			vek.DivNumber_Into(out, a, y)
		}
	default:
		x, b := a[0], b[:len(out)]
		switch op {
		case opAdd: // x + b = b + x, exactly
			if inplace == 2 {
				vek.AddNumber_Inplace(out, x)
			} else {
				vek.AddNumber_Into(out, b, x)
			}
		case opMul:
			if inplace == 2 {
				vek.MulNumber_Inplace(out, x)
			} else {
				vek.MulNumber_Into(out, b, x)
			}
		case opSub: // element by element: correct in place too
			for i := range out {
				out[i] = x - b[i]
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
		return func(a, b float64) float64 { return max(a, b) }
	case opMin:
		return func(a, b float64) float64 { return min(a, b) }
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
	case opLogistic: // as simplego computes it, stable for large |x|
		return func(x float64) float64 {
			if x >= 0 {
				return 1 / (1 + math.Exp(-x))
			}
			e := math.Exp(x)
			return e / (1 + e)
		}
	case opSign: // as simplego: 0 for ±0 and NaN
		return func(x float64) float64 {
			switch {
			case x < 0:
				return -1
			case x > 0:
				return 1
			}
			return 0
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
