package graph

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// NIOC_XLA_FUSION set leaves XLA's fusion on with barriers (FusionBarriers) and turns its
// parallel task assigner off (CPUFlags), that XLA_FLAGS the user set are left as they are,
// and that the graphs it compiles still compute the Go backend's values.
func TestXLACPUFusion(t *testing.T) {
	cpuPlugin(t)
	t.Setenv("XLA_FLAGS", "--xla_cpu_enable_fast_min_max=false")
	t.Setenv(EnvXLAFusion, "")
	_, err := newXLA("cpu")
	require.NoError(t, err)
	assert.Equal(t, "--xla_cpu_enable_fast_min_max=false", os.Getenv("XLA_FLAGS"), "the user's flags")
	t.Setenv("XLA_FLAGS", "")
	bx, err := newXLA("cpu")
	require.NoError(t, err)
	assert.Equal(t, FusionBarriers, FusionModeOf(bx))
	assert.Equal(t, "--xla_disable_hlo_passes=cpu-parallel-task-assigner --xla_backend_optimization_level=2", os.Getenv("XLA_FLAGS"),
		"fusion stays on; no kernel is split into parts for XLA's thread pool; optimization level 2")
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

// TestCPUFlags: the passes nioc-gpu turns off on the CPU plugin, by fusion mode, its
// optimization level, and the processor's instructions it caps where rows must keep their bits
// (on amd64).
func TestCPUFlags(t *testing.T) {
	const lanes = "--xla_disable_hlo_passes=cpu-parallel-task-assigner --xla_backend_optimization_level=2"
	exact := lanes
	if runtime.GOARCH == "amd64" {
		exact += " --xla_cpu_max_isa=AVX2"
	}
	for _, tc := range []struct {
		fusion    string
		exactRows bool
		want      string
	}{
		{FusionBarriers, false, lanes},
		{FusionXLA, false, lanes},
		{FusionOff, false, "--xla_disable_hlo_passes=cpu-parallel-task-assigner,fusion --xla_backend_optimization_level=2"},
		{FusionBarriers, true, exact},
	} {
		assert.Equal(t, tc.want, CPUFlags(tc.fusion, tc.exactRows), "%s %t", tc.fusion, tc.exactRows)
	}
}

func TestGoBackendCompilesQuickly(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	assert.False(t, CompilesSlowly(b), "backend %q", b.Name())
}

// TestAgentBackend checks where a likelihood's agents are planned and simulated
// (AgentBackend): on the Go backend for XLA's CPU plugin unless $NIOC_AGENT_BACKEND says
// "same", on the likelihood's own elsewhere, and an error for a value it does not know.
func TestAgentBackend(t *testing.T) {
	bg, err := NewBackend(BackendGo)
	require.NoError(t, err)
	type row struct {
		name, env string
		b, want   backends.Backend // want nil: an error
	}
	rows := []row{
		{"Go backend, unset", "", bg, bg},
		{"Go backend, same", "same", bg, bg},
		{"Go backend, go", "go", bg, bg},
		{"Go backend, unknown", "xla", bg, nil},
	}
	if HasXLA {
		if _, err := FindPlugin("cpu"); err == nil {
			bx, err := NewBackend(BackendXLA)
			require.NoError(t, err)
			rows = append(rows,
				row{"CPU plugin, unset", "", bx, bg},
				row{"CPU plugin, same", "same", bx, bx},
				row{"CPU plugin, go", "go", bx, bg},
				row{"CPU plugin, unknown", "gpu", bx, nil})
		} else {
			t.Log("no XLA CPU plugin (make xla-cpu): the Go backend's rows only")
		}
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Setenv(EnvAgentBackend, r.env)
			got, err := AgentBackend(r.b)
			if r.want == nil {
				require.Error(t, err)
				assert.Contains(t, err.Error(), EnvAgentBackend)
				return
			}
			require.NoError(t, err)
			assert.Same(t, r.want, got, "got %s, want %s", got.Name(), r.want.Name())
		})
	}
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

// TestCPUFlagsKeepKernelsWhole: XLA's CPU plugin splits a large element-wise kernel into parts
// for its thread pool (outer_dimension_partitions in the optimized program), unless the pass
// CPUFlags turns off is off: a check that the plugin still knows the pass by that name. XLA
// reads XLA_FLAGS once a process, so each case compiles in a process of its own (this test
// binary, running compileLargeKernel).
func TestCPUFlagsKeepKernelsWhole(t *testing.T) {
	cpuPlugin(t)
	if os.Getenv("NIOC_TEST_COMPILE_LARGE") == "1" {
		compileLargeKernel(t)
		return
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one core: XLA's thread pool has nothing to split a kernel over")
	}
	split := func(flags string) bool {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCPUFlagsKeepKernelsWhole$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NIOC_TEST_COMPILE_LARGE=1", EnvXLACache+"=off", EnvXLAFusion+"=",
			"XLA_FLAGS="+flags+" --xla_dump_to="+dir+" --xla_dump_hlo_as_text")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		dumps, err := filepath.Glob(filepath.Join(dir, "*large*after_optimizations.txt"))
		require.NoError(t, err)
		require.NotEmpty(t, dumps, "%s", out)
		for _, f := range dumps {
			text, err := os.ReadFile(f)
			require.NoError(t, err)
			if strings.Contains(string(text), "outer_dimension_partitions") {
				return true
			}
		}
		return false
	}
	assert.True(t, split(""), "XLA's own passes split the kernel")
	assert.False(t, split(CPUFlags(FusionBarriers, false)), "with %s they do not", CPUFlags(FusionBarriers, false))
}

// compileLargeKernel compiles and runs a program of one element-wise kernel over 512 × 512
// values on the CPU plugin.
func compileLargeKernel(t *testing.T) {
	b, err := newXLA("cpu")
	require.NoError(t, err)
	prog := NewProgram(b, "large", func(g *G.Graph, in []*G.Node) []*G.Node {
		s := N(in[0])
		return []*G.Node{Add(Mul(s, s), Sqrt(Square(s))).Node(g)}
	})
	_, err = prog.Run(NewTensor(make([]float64, 512*512), 512, 512))
	require.NoError(t, err)
}
