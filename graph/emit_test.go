package graph

import (
	"fmt"
	"math"
	"slices"
	"testing"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmitJacobian evaluates a symbolic Jacobian as graph operations, compares it with the
// float64 evaluation, and differentiates a function of the Jacobian through the graph
// (a second derivative of the model) against central differences.
func TestEmitJacobian(t *testing.T) {
	x := sym.NewVars("x", 3)
	f := sym.Vec{
		sym.Mul(x[0], sym.Sin(x[1]), sym.Atan2(x[2], sym.Add(sym.C(2), x[0]))),
		sym.Div(sym.Exp(sym.Scale(0.5, x[2])), sym.Add(sym.C(3), sym.Square(x[1]))),
		sym.Wrap(sym.Add(x[0], sym.Scale(7, x[1]))),
	}
	J := sym.Jacobian(f, x)
	build := func(in []S) []S {
		ev := NewEvaluator(sym.Bind(nil, x, in))
		jac := ev.EvalMat(J)
		out := []S{Sum(flatten(Sandwich(jac, Eye(3)))...)} // Σ (J Jᵀ)_ij
		for _, row := range jac {
			out = append(out, row...)
		}
		return out
	}
	in := [][]float64{{0.3, -0.7, 1.1}, {0.2, 0.4, -2.0}, {-0.5, 0.9, 0.25}}
	outs, grads := evalBatch(t, in, true, build)
	for b := range batch {
		bind := sym.Bind(nil, x, []float64{in[0][b], in[1][b], in[2][b]})
		for i := range 3 {
			for j := range 3 {
				want := sym.Eval(J[i][j], bind)
				assert.InDelta(t, want, outs[1+3*i+j][b], 1e-14*math.Max(1, math.Abs(want)))
			}
		}
	}
	const h = 1e-6
	for i := range in {
		plus, minus := make([][]float64, 3), make([][]float64, 3)
		for k := range in {
			plus[k], minus[k] = slices.Clone(in[k]), slices.Clone(in[k])
		}
		for b := range batch {
			plus[i][b] += h
			minus[i][b] -= h
		}
		op, _ := evalBatch(t, plus, false, build)
		om, _ := evalBatch(t, minus, false, build)
		for b := range batch {
			fd := (op[0][b] - om[0][b]) / (2 * h)
			assert.InDelta(t, fd, grads[i][b], 1e-6*math.Max(1, math.Abs(fd)), "input %d batch %d", i, b)
		}
	}
}

// TestSliceGradientOnSimpleGo checks the Pad-free Slice VJP that this package installs.
func TestSliceGradientOnSimpleGo(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	prog := NewProgram(b, "slice", func(g *G.Graph, in []*G.Node) []*G.Node {
		x := in[0] // [3, 4]
		s := G.Slice(x, G.AxisRange(1, 3), G.AxisRange(1, 3))
		loss := G.ReduceAllSum(G.Mul(s, s))
		return []*G.Node{loss, G.Gradient(loss, x)[0]}
	})
	data := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	res, err := prog.Run(tensors.FromFlatDataAndDimensions(data, 3, 4))
	require.NoError(t, err)
	assert.Equal(t, 5.0*5+6*6+9*9+10*10, res[0].Data[0])
	assert.Equal(t, []float64{0, 0, 0, 0, 0, 10, 12, 0, 0, 18, 20, 0}, res[1].Data)
}

// TestProgramConcurrentRuns runs one compiled graph from many goroutines at once.
func TestProgramConcurrentRuns(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	prog := NewProgram(b, "concurrent", func(g *G.Graph, in []*G.Node) []*G.Node {
		x := in[0]
		y := G.Mul(G.Sin(x), G.Exp(x))
		return []*G.Node{y, G.Gradient(G.ReduceAllSum(y), x)[0]}
	})
	const workers = 8
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			data := make([]float64, 1000)
			for i := range data {
				data[i] = float64(w) + float64(i)/1000
			}
			for range 20 {
				out, err := prog.Run(tensors.FromFlatDataAndDimensions(slices.Clone(data), 1000))
				if err != nil {
					errs <- err
					return
				}
				for i, x := range data {
					if out[0].Data[i] != math.Sin(x)*math.Exp(x) {
						errs <- fmt.Errorf("worker %d: wrong value at %d", w, i)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
}
