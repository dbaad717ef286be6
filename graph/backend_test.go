package graph

import (
	"os"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpuPlugin returns the path of the XLA CPU plugin, and skips the test where there is none
// (make xla-cpu installs it) or the build has no XLA backend (-tags noxla).
func cpuPlugin(t *testing.T) string {
	t.Helper()
	if !HasXLA {
		t.Skip("built without the XLA backend (-tags noxla or CGO_ENABLED=0)")
	}
	path, err := FindPlugin("cpu")
	if err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	return path
}

// TestXLACPUFusion checks that loading the CPU plugin with neither XLA_FLAGS nor
// NIOC_XLA_FUSION set leaves XLA's fusion on with barriers (FusionBarriers), and that the
// graphs it compiles then still compute the Go backend's values.
func TestXLACPUFusion(t *testing.T) {
	cpuPlugin(t)
	t.Setenv("XLA_FLAGS", "")
	t.Setenv(EnvXLAFusion, "")
	bx, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	assert.Equal(t, FusionBarriers, FusionModeOf(bx))
	assert.Empty(t, os.Getenv("XLA_FLAGS"), "fusion stays on")
	bg, err := NewBackend(BackendGo)
	require.NoError(t, err)
	assert.Empty(t, FusionModeOf(bg))
	assert.True(t, CompilesSlowly(bx))
	assert.False(t, CompilesSlowly(bg))
	assert.True(t, RunsOnHost(bx), "the CPU plugin computes on the host's cores")
	assert.True(t, RunsOnHost(bg))
	x := []float64{0.3, -1.2, 2.5, 0.7}
	var got [2][]float64
	for i, b := range []backends.Backend{bg, bx} {
		prog := NewProgram(b, "flags", func(g *G.Graph, in []*G.Node) []*G.Node {
			s := N(in[0])
			e := Mul(Sin(s), Exp(s)) // read three times: a barrier on XLA
			return []*G.Node{Add(Add(e, Sqrt(Square(s))), Mul(e, e)).Node(g)}
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

// TestStableHLORewrite checks the vendored GoMLX's program access (third_party/README.md): a
// graph's StableHLO text names its computation, and a graph compiled with a rewrite computes
// the replaced program, here x + 2 in place of x + 1. It runs where a plugin is installed
// (make xla-cpu) and is skipped otherwise.
func TestStableHLORewrite(t *testing.T) {
	cpuPlugin(t)
	b, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	build := func() (*G.Graph, *G.Node) {
		g := G.NewGraph(b, "plus")
		x := G.Parameter(g, "x", shapes.Make(dtypes.Float64, 3))
		return g, G.AddScalar(x, 1)
	}
	g, y := build()
	require.True(t, g.HasStableHLO())
	text, err := g.StableHLO(y)
	require.NoError(t, err)
	assert.Contains(t, text, "func.func @main(")
	assert.Contains(t, text, "dense<1.0>")

	g, y = build()
	var seen string
	g.CompileRewritten(func(program string) (string, error) {
		seen = program
		return strings.Replace(program, "dense<1.0>", "dense<2.0>", 1), nil
	}, y)
	assert.Equal(t, text, seen, "the rewrite gets the program StableHLO gives")
	out := g.Run(NewTensor([]float64{0.5, -1, 3}, 3))
	assert.Equal(t, []float64{2.5, 1, 5}, tensors.MustCopyFlatData[float64](out[0]))

	bg, err := NewBackend(BackendGo)
	require.NoError(t, err)
	assert.False(t, G.NewGraph(bg, "go").HasStableHLO())
}
