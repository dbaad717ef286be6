package graph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFusionMode(t *testing.T) {
	for _, c := range []struct {
		env  string
		cpu  bool
		want string
		err  bool
	}{
		{"", true, FusionBarriers, false},
		{"", false, FusionXLA, false},
		{"barriers", false, FusionBarriers, false},
		{"xla", true, FusionXLA, false},
		{"off", true, FusionOff, false},
		{"on", true, "", true},
	} {
		t.Setenv(EnvXLAFusion, c.env)
		got, err := fusionMode(c.cpu)
		if c.err {
			assert.ErrorContains(t, err, "NIOC_XLA_FUSION=\"on\": use barriers, xla or off")
			continue
		}
		require.NoError(t, err, c.env)
		assert.Equal(t, c.want, got, "%q cpu=%v", c.env, c.cpu)
	}
}

// TestAddFusionBarriers checks the rewrite on programs as GoMLX and mlir.go write them: a
// barrier after each top-level value read twice or more (not constants, broadcasts, reshapes,
// multi-result operations or values inside regions), every later use reading the barrier.
func TestAddFusionBarriers(t *testing.T) {
	in := `module @m {
  func.func private @step(%in0: tensor<3xf64>) -> (tensor<3xf64>) {
    %0 = "stablehlo.sine"(%in0) : (tensor<3xf64>) -> tensor<3xf64>
    %1 = "stablehlo.multiply"(%0, %0) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    "func.return"(%1) : (tensor<3xf64>) -> ()
  }
  func.func @main(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<f64>) {
    %0 = "stablehlo.constant"() { value = dense<1.0> : tensor<3xf64> } : () -> tensor<3xf64>
    %1 = "stablehlo.add"(%x, %0) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %2 = "stablehlo.cosine"(%1) : (tensor<3xf64>) -> tensor<3xf64>
    %3 = "stablehlo.constant"() { value = dense<0.0> : tensor<f64> } : () -> tensor<f64>
    %4 = "stablehlo.reduce"(%1, %3) ({
      ^reductionFn(%lhs: tensor<f64>, %rhs: tensor<f64>) :
          %5 = "stablehlo.add"(%lhs, %rhs) : (tensor<f64>, tensor<f64>) -> tensor<f64>
          %6 = "stablehlo.multiply"(%5, %5) : (tensor<f64>, tensor<f64>) -> tensor<f64>
          "stablehlo.return"(%6) : (tensor<f64>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
    %7:2 = "func.call"(%2) { callee = @step } : (tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>)
    %8 = "stablehlo.multiply"(%7#0, %7#1) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %9 = "stablehlo.subtract"(%2, %0) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %10 = "stablehlo.negate"(%4) : (tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%8, %9, %10) : (tensor<3xf64>, tensor<3xf64>, tensor<f64>) -> ()
  }
}`
	out, err := AddFusionBarriers(in)
	require.NoError(t, err)
	// @step: %0 is read twice. @main: %1 (add) and %2 (cosine) are; the constants %0 and %3
	// get no barrier, nor %4 (a reduce: its operation spans lines), %5 (inside its region) or
	// %7 (two results). Each function is a scope of its own (both have a %0).
	want := `module @m {
  func.func private @step(%in0: tensor<3xf64>) -> (tensor<3xf64>) {
    %0 = "stablehlo.sine"(%in0) : (tensor<3xf64>) -> tensor<3xf64>
    %fb_0 = "stablehlo.optimization_barrier"(%0) : (tensor<3xf64>) -> tensor<3xf64>
    %1 = "stablehlo.multiply"(%fb_0, %fb_0) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    "func.return"(%1) : (tensor<3xf64>) -> ()
  }
  func.func @main(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<f64>) {
    %0 = "stablehlo.constant"() { value = dense<1.0> : tensor<3xf64> } : () -> tensor<3xf64>
    %1 = "stablehlo.add"(%x, %0) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %fb_1 = "stablehlo.optimization_barrier"(%1) : (tensor<3xf64>) -> tensor<3xf64>
    %2 = "stablehlo.cosine"(%fb_1) : (tensor<3xf64>) -> tensor<3xf64>
    %fb_2 = "stablehlo.optimization_barrier"(%2) : (tensor<3xf64>) -> tensor<3xf64>
    %3 = "stablehlo.constant"() { value = dense<0.0> : tensor<f64> } : () -> tensor<f64>
    %4 = "stablehlo.reduce"(%fb_1, %3) ({
      ^reductionFn(%lhs: tensor<f64>, %rhs: tensor<f64>) :
          %5 = "stablehlo.add"(%lhs, %rhs) : (tensor<f64>, tensor<f64>) -> tensor<f64>
          %6 = "stablehlo.multiply"(%5, %5) : (tensor<f64>, tensor<f64>) -> tensor<f64>
          "stablehlo.return"(%6) : (tensor<f64>) -> ()
    }) { dimensions = array<i64: 0> } : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
    %7:2 = "func.call"(%fb_2) { callee = @step } : (tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>)
    %8 = "stablehlo.multiply"(%7#0, %7#1) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %9 = "stablehlo.subtract"(%fb_2, %0) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %10 = "stablehlo.negate"(%4) : (tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%8, %9, %10) : (tensor<3xf64>, tensor<3xf64>, tensor<f64>) -> ()
  }
}`
	assert.Equal(t, want, out)
	assert.Equal(t, 3, strings.Count(out, "optimization_barrier"))

	_, err = AddFusionBarriers(out)
	assert.ErrorContains(t, err, "already has names starting %fb_")
	_, err = AddFusionBarriers("module @m {\n  func.func @main() -> () {\n")
	assert.ErrorContains(t, err, "unbalanced braces")
}

// TestFusionBarriersCompile compiles a GoMLX program with a reduction, and a while loop of
// mlir.go, through the barriers on the CPU plugin: each computes what it computes without.
func TestFusionBarriersCompile(t *testing.T) {
	cpuPlugin(t)
	b, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	x := NewTensor([]float64{0.5, -1, 3}, 3)
	var res [2][]float64
	var seen string
	for i, rw := range []rewriteFunc{
		func(t string) (string, error) { return t, nil },
		func(t string) (string, error) { out, err := AddFusionBarriers(t); seen = out; return out, err },
	} {
		g := G.NewGraph(b, "shared")
		p := G.Parameter(g, "x", shapes.Make(dtypes.Float64, 3))
		s := G.Mul(G.Sin(p), G.Exp(p))
		y := G.Add(G.Mul(s, s), G.Add(s, G.ReduceAllSum(s)))
		g.CompileRewritten(rw, y)
		res[i] = tensors.MustCopyFlatData[float64](g.Run(x)[0])
	}
	assert.Contains(t, seen, "optimization_barrier")
	assert.InDeltaSlice(t, res[0], res[1], 1e-14)
}

// TestFusionBarriersErrorNamesTheWayOut: a program text the barriers cannot read fails to
// compile with an error that names the mode that compiles without them.
func TestFusionBarriersErrorNamesTheWayOut(t *testing.T) {
	cpuPlugin(t)
	b, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	if FusionModeOf(b) != FusionBarriers {
		t.Skipf("the XLA backend of this process was loaded with %s=%s", EnvXLAFusion, FusionModeOf(b))
	}
	g := G.NewGraph(b, "unreadable")
	y := G.Neg(G.Parameter(g, "x", shapes.Make(dtypes.Float64, 3)))
	unbalanced := func(string) (string, error) { return "module @m {\n  func.func @main() -> () {\n", nil }
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		compileGraph(b, g, unbalanced, y)
	}()
	assert.Contains(t, msg, "unbalanced braces")
	assert.Contains(t, msg, "(NIOC_XLA_FUSION=off compiles without barriers)")
}
