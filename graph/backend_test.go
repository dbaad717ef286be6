package graph

import (
	"os"
	"testing"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestXLACPUFlags checks that loading the CPU plugin turns XLA's fusion pass off when the user
// set no XLA_FLAGS, and that the graphs it compiles then still compute the Go backend's values.
func TestXLACPUFlags(t *testing.T) {
	if _, err := FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	t.Setenv("XLA_FLAGS", "")
	bx, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	assert.Equal(t, CPUFlags, os.Getenv("XLA_FLAGS"))
	bg, err := NewBackend(BackendGo)
	require.NoError(t, err)
	assert.True(t, CompilesSlowly(bx))
	assert.False(t, CompilesSlowly(bg))
	x := []float64{0.3, -1.2, 2.5, 0.7}
	var got [2][]float64
	for i, b := range []backends.Backend{bg, bx} {
		prog := NewProgram(b, "flags", func(g *G.Graph, in []*G.Node) []*G.Node {
			s := N(in[0])
			return []*G.Node{Add(Mul(Sin(s), Exp(s)), Sqrt(Square(s))).Node(g)}
		})
		out, err := prog.Run(NewTensor(x, 4))
		require.NoError(t, err)
		got[i] = out[0].Data
	}
	for k := range x {
		assert.InEpsilon(t, got[0][k], got[1][k], 1e-12)
	}
}

func TestGoBackendCompilesQuickly(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	assert.False(t, CompilesSlowly(b), "backend %q", b.Name())
}
