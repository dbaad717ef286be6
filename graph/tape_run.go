package graph

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/viterin/vek"
)

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
		// The product is rounded first (no fused multiply-add): the same bits as Mul and
		// then Add or Sub.
		vek.Mul_Into(out, a[:len(out)], b)
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
		vek.Neg_Into(out, a[:len(out)])
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

// binaryFast runs the four arithmetic operations on whole slices, with SIMD instructions where
// the CPU has them (github.com/viterin/vek: AVX2 on x86-64, pure Go elsewhere). Each element is
// the one IEEE operation, so the bits are those of a loop (and of simplego).
func binaryFast(op opcode, mode uint8, out, a, b []float64) {
	switch mode {
	case 0:
		a, b = a[:len(out)], b[:len(out)]
		switch op {
		case opAdd:
			vek.Add_Into(out, a, b)
		case opSub:
			vek.Sub_Into(out, a, b)
		case opMul:
			vek.Mul_Into(out, a, b)
		case opDiv:
			vek.Div_Into(out, a, b)
		}
	case 1:
		a, y := a[:len(out)], b[0]
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
			vek.AddNumber_Into(out, b, x)
		case opMul:
			vek.MulNumber_Into(out, b, x)
		case opSub:
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
