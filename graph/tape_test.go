package graph

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every operation the tape supports, with the operand shapes and broadcasts that occur,
// gives what simplego's executor gives, bit for bit, values and gradients (the gradient
// graphs add ReduceSum, BroadcastInDim and the ops' derivatives).
func TestTapeEqualsSimplego(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	x := []float64{0.3, -1.2, 2.5, 0.0, -0.7, 1.9, 3.1, -2.2, 0.05, 1.0, -40.4, 0.8} // [3, 4]
	y := []float64{1.5, -0.25, 0.6}                                                  // [3, 1]
	z := []float64{0.9, -1.1, 0.2, 2.0}                                              // [1, 4]
	cases := []struct {
		name string
		f    func(x, y, z *G.Node) *G.Node
	}{
		{"arithmetic", func(x, y, z *G.Node) *G.Node {
			return G.Div(G.Sub(G.Mul(x, x), G.Add(x, G.Scalar(x.Graph(), x.DType(), 2))), G.AddScalar(G.Abs(x), 1))
		}},
		{"broadcast rows and columns", func(x, y, z *G.Node) *G.Node { return G.Mul(G.Add(x, y), G.Sub(z, x)) }},
		{"explicit broadcast", func(x, y, z *G.Node) *G.Node {
			return G.Add(G.BroadcastToDims(y, 3, 4), G.Add(G.BroadcastToDims(z, 3, 4), G.BroadcastPrefix(G.Reshape(z, 4), 3)))
		}},
		{"unary", func(x, y, z *G.Node) *G.Node {
			a := G.Add(G.Sin(x), G.Cos(x))
			a = G.Add(a, G.Tanh(x))
			a = G.Add(a, G.Exp(G.Neg(G.Abs(x))))
			a = G.Add(a, G.Log(G.AddScalar(G.Abs(x), 1)))
			a = G.Add(a, G.Sqrt(G.AddScalar(G.Mul(x, x), 1)))
			a = G.Add(a, G.Logistic(x))
			return G.Add(a, G.Log1p(G.Abs(x)))
		}},
		{"max min pow", func(x, y, z *G.Node) *G.Node {
			return G.Add(G.Max(x, y), G.Mul(G.Min(x, z), G.Pow(G.AddScalar(G.Abs(x), 1), G.AddScalar(G.Abs(y), 0.5))))
		}},
		{"where and comparisons", func(x, y, z *G.Node) *G.Node {
			w := G.Where(G.GreaterThan(x, y), G.Mul(x, z), G.Sub(y, x))
			w = G.Add(w, G.Where(G.LessOrEqual(x, z), x, G.Neg(x)))
			return G.Add(w, G.Where(G.LogicalAnd(G.GreaterOrEqual(x, y), G.NotEqual(x, z)), G.Sign(x), G.Square(x)))
		}},
		{"reductions", func(x, y, z *G.Node) *G.Node {
			r := G.Add(G.ReduceSum(G.Mul(x, x), 1), G.ReduceSum(G.Mul(x, y), 1)) // [3]
			c := G.ReduceSum(G.Mul(x, z), 0)                                     // [4]
			return G.Add(G.Reshape(r, 3, 1), G.Add(G.Reshape(c, 1, 4), G.ReduceAllSum(x)))
		}},
		{"slice concatenate transpose", func(x, y, z *G.Node) *G.Node {
			s := G.Slice(x, G.AxisRange(), G.AxisRange(1, 3))                    // [3, 2]
			u := G.Concatenate([]*G.Node{s, y, G.Mul(s, s), y}, 1)               // [3, 6]
			v := G.Transpose(G.Slice(x, G.AxisRange(), G.AxisRange(0, 3)), 0, 1) // [3, 3]
			return G.Add(G.ReduceSum(G.Mul(u, u), 1), G.ReduceSum(G.Mul(v, v), 0))
		}},
		{"repeats", func(x, y, z *G.Node) *G.Node { // computed once each; a − b and b − a twice
			a := G.Add(G.Sin(x), G.Sin(x))
			b, c := G.Mul(a, x), G.Mul(x, a)
			d, e := G.Sub(b, G.Exp(x)), G.Sub(G.Exp(x), c)
			f := G.Add(G.BroadcastToDims(y, 3, 4), G.BroadcastToDims(y, 3, 4))
			return G.Add(G.Add(d, e), G.Add(f, G.Add(G.MulScalar(x, 2), G.MulScalar(x, 2))))
		}},
		{"in place", func(x, y, z *G.Node) *G.Node { // temporaries read once: outputs over their slots
			g := x.Graph()
			two := G.Scalar(g, x.DType(), 2)
			a := G.Add(G.Sin(x), x)                                      // over the first operand
			a = G.Mul(x, G.Cos(a))                                       // over the second
			a = G.Div(G.MulScalar(a, 3), G.Add(x, G.Cos(x)))             // one value second; Div over the first
			a = G.Sin(G.Sub(G.Cos(a), G.Div(x, G.Exp(G.Neg(G.Abs(x)))))) // Sub over the first; Div not over the second
			a = G.Div(G.MulScalar(a, 3), G.Sub(x, G.Sin(x)))             // one value second; Sub not over the second
			a = G.Add(G.Sub(two, G.Sin(a)), G.Div(two, G.Cos(a)))        // one value first, Sub and Div over the second
			a = G.Add(G.Mul(G.Sin(a), G.Cos(a)), x)                      // fused, over the product's operands
			a = G.Sub(x, G.Mul(x, G.Tanh(a)))                            // fused other − product, over the second
			s := G.Logistic(a)
			a = G.Add(G.Mul(s, s), G.Neg(a))    // the same temporary twice: not in place
			return G.Max(G.Sin(a), G.Add(a, y)) // loops in place
		}},
		{"views", views},
	}
	for _, tc := range cases {
		build := func(g *G.Graph, in []*G.Node) []*G.Node {
			out := tc.f(in[0], in[1], in[2])
			loss := G.ReduceAllSum(G.Mul(out, out))
			grads := G.Gradient(loss, in...)
			return append([]*G.Node{out, loss}, grads...)
		}
		run := func(tapes bool) ([]Tensor, ProgramStats) {
			if tapes {
				t.Setenv(EnvTape, "")
			} else {
				t.Setenv(EnvTape, "off")
			}
			p := NewProgram(b, "tape_"+tc.name, build)
			out, err := p.Run(NewTensor(x, 3, 4), NewTensor(y, 3, 1), NewTensor(z, 1, 4))
			require.NoError(t, err, tc.name)
			return out, p.Stats()
		}
		got, st := run(true)
		if tc.name == "repeats" {
			counts := tapeOps(t, b, func(g *G.Graph, in []*G.Node) []*G.Node { return []*G.Node{tc.f(in[0], in[1], in[2])} })
			assert.Equal(t, 1, counts[opSin], "Sin(x) once")
			assert.Equal(t, 1, counts[opExp], "Exp(x) once")
			assert.Equal(t, 1, counts[opGather], "y broadcast once")
			assert.Equal(t, 2, counts[opSub]+counts[opMulSub]+counts[opSubMul], "a − b and b − a are two values")
		}
		if tc.name == "views" {
			counts := tapeOps(t, b, func(g *G.Graph, in []*G.Node) []*G.Node { return []*G.Node{tc.f(in[0], in[1], in[2])} })
			assert.Equal(t, 0, counts[opCopy], "no copies: reshapes of a parameter's part or of a value read once")
			assert.Equal(t, 2, counts[opGather], "the columns' slice and the slice of a temporary alone: the rows of x, of x reshaped and of the constant are their memory")
		}
		if tc.name == "in place" {
			assertInPlace(t, b, func(g *G.Graph, in []*G.Node) []*G.Node { return []*G.Node{tc.f(in[0], in[1], in[2])} })
		}
		want, _ := run(false)
		assert.Equal(t, 1, st.Tapes, "%s: runs as a tape", tc.name)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].Dims, got[i].Dims, "%s output %d", tc.name, i)
			for k := range want[i].Data {
				if !(math.IsNaN(want[i].Data[k]) && math.IsNaN(got[i].Data[k])) {
					assert.Equal(t, want[i].Data[k], got[i].Data[k], "%s output %d[%d]", tc.name, i, k)
				}
			}
		}
	}
}

// views takes parts of its operands that are their memory as it is (a row of x, x
// reshaped, the constant's slice) and parts that are not (columns of x, a slice of a
// temporary), reshapes a value read once, and writes in place beside them; x is read again
// after all of it, unchanged.
func views(x, y, z *G.Node) *G.Node {
	g := x.Graph()
	row := G.Reshape(G.Slice(x, G.AxisRange(1, 2)), 4)                                   // x's second row: its memory
	flat := G.Reshape(x, 12)                                                             // x's memory
	c := G.Slice(G.Const(g, [][]float64{{1, 2, 3, 4}, {5, 6, 7, 8}}), G.AxisRange(1, 2)) // the constant's second row
	a := G.Add(G.Sin(row), row)                                                          // in place over Sin, not over x
	a = G.Add(a, G.Reshape(c, 4))
	cols := G.Slice(x, G.AxisRange(), G.AxisRange(1, 3))                   // not contiguous: copied
	tmp := G.Reshape(G.Slice(G.Exp(x), G.AxisRange(2, 3)), 4)              // a slice of a temporary (copied), reshaped in its slot
	sum := G.Add(G.Reshape(G.Add(a, tmp), 1, 4), G.ReduceSum(cols, 1, 0))  // [1, 4]
	rows := G.Slice(x, G.AxisRange(1, 3))                                  // rows 2 and 3: x's memory from element 4
	part := G.Reshape(G.Slice(x, G.AxisRange(1, 2), G.AxisRange(2, 4)), 2) // from element 6
	sum = G.Add(sum, G.Reshape(G.Concatenate([]*G.Node{part, G.Reshape(G.Slice(rows, G.AxisRange(1, 2), G.AxisRange(0, 2)), 2)}, 0), 1, 4))
	return G.Add(G.Add(sum, x), G.Add(G.Reshape(G.Slice(flat, G.AxisRange(4, 8)), 1, 4), y))
}

// A graph with an operation the tape lacks runs on simplego.
func TestTapeFallsBack(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	p := NewProgram(b, "argmax", func(g *G.Graph, in []*G.Node) []*G.Node {
		return []*G.Node{G.ConvertDType(G.ArgMax(in[0], 1), in[0].DType())}
	})
	out, err := p.Run(NewTensor([]float64{1, 5, 2, 7, 0, 3}, 2, 3))
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 0}, out[0].Data)
	assert.Equal(t, 0, p.Stats().Tapes)
}

// assertInPlace checks that the tape of build writes outputs over operands in every way
// binaryFast and exec know: over the first and the second operand of whole-slice ops, over
// the whole operand beside one value, over a product's operands, and the unary ops. (Values
// only: a gradient reads most temporaries again.)
func assertInPlace(t *testing.T, b backends.Backend, build BuildFunc) {
	t.Helper()
	p := NewProgram(b, "inplace", build)
	_, err := p.Run(NewTensor(make([]float64, 12), 3, 4), NewTensor(make([]float64, 3), 3, 1), NewTensor(make([]float64, 4), 1, 4))
	require.NoError(t, err)
	var tp *tape
	for _, cg := range p.compiled {
		tp = cg.tape
	}
	require.NotNil(t, tp)
	type kind struct {
		op            opcode
		mode, inplace uint8
	}
	seen := map[kind]bool{}
	for _, in := range tp.code {
		seen[kind{in.op, in.mode, in.inplace}] = true
	}
	for _, k := range []kind{{opAdd, 0, 1}, {opAdd, 0, 2}, {opMul, 0, 2}, {opSub, 0, 1}, {opSub, 0, 0},
		{opMul, 1, 1}, {opSub, 2, 2}, {opDiv, 2, 2}, {opMulAdd, 0, 1}, {opSubMul, 0, 2}, {opNeg, 0, 1}, {opExp, 0, 1}} {
		assert.True(t, seen[k], "an instruction %+v", k)
	}
}

// tapeOps returns how many instructions of each operation the tape of build has.
func tapeOps(t *testing.T, b backends.Backend, build BuildFunc) map[opcode]int {
	t.Helper()
	p := NewProgram(b, "ops", build)
	_, err := p.Run(NewTensor(make([]float64, 12), 3, 4), NewTensor(make([]float64, 3), 3, 1), NewTensor(make([]float64, 4), 1, 4))
	require.NoError(t, err)
	counts := map[opcode]int{}
	for _, cg := range p.compiled {
		require.NotNil(t, cg.tape)
		for _, in := range cg.tape.code {
			counts[in.op]++
		}
	}
	return counts
}
