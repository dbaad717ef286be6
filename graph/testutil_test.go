package graph

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/stretchr/testify/require"
)

// evalBatch evaluates fn on batched scalar inputs (inputs[i][b] is input i of batch element b)
// and returns outputs[k][b]. If grad is true it also returns the gradient of Σ_b outputs[0][b]
// with respect to each input, as grads[i][b].
func evalBatch(t testing.TB, inputs [][]float64, grad bool, fn func(in []S) []S) (outputs, grads [][]float64) {
	t.Helper()
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	B := len(inputs[0])
	nOut := 0
	prog := NewProgram(b, "test", func(g *G.Graph, in []*G.Node) []*G.Node {
		ins := make([]S, len(in))
		for i, n := range in {
			ins[i] = N(n)
		}
		outs := fn(ins)
		nOut = len(outs)
		nodes := make([]*G.Node, 0, len(outs)+len(in))
		for _, o := range outs {
			nodes = append(nodes, Materialize(g, o, B))
		}
		if grad {
			nodes = append(nodes, G.Gradient(G.ReduceAllSum(nodes[0]), in...)...)
		}
		return nodes
	})
	in := make([]*tensors.Tensor, len(inputs))
	for i, x := range inputs {
		in[i] = NewTensor(append([]float64(nil), x...), B)
	}
	res, err := prog.Run(in...)
	require.NoError(t, err)
	for k := range res {
		if k < nOut {
			outputs = append(outputs, res[k].Data)
		} else {
			grads = append(grads, res[k].Data)
		}
	}
	return outputs, grads
}

// xlaAndGo returns the XLA backend on the CPU plugin and the Go backend, to compare; it skips
// the test where no plugin is installed (make xla-cpu).
func xlaAndGo(t *testing.T) (bx, bg backends.Backend) {
	t.Helper()
	cpuPlugin(t)
	bx, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	bg, err = NewBackend(BackendGo)
	require.NoError(t, err)
	return bx, bg
}
