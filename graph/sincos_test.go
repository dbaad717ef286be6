package graph

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/stretchr/testify/require"
)

// sinCosInputs returns arguments in ranges of growing width, next to multiples of π/2 and at
// the edges of the float64 numbers.
func sinCosInputs() (xs []float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, width := range []float64{math.Pi / 4, math.Pi, 10, 1e3, 1e6, 1e9} {
		for range 2000 {
			xs = append(xs, width*(2*rng.Float64()-1))
		}
	}
	for k := -40; k <= 40; k++ {
		for _, d := range []float64{0, 1e-12, -1e-12, 1e-6} {
			xs = append(xs, float64(k)*math.Pi/2+d, float64(k*1000003)*math.Pi/2+d)
		}
	}
	return append(xs, 0, math.Copysign(0, -1), 1e-300, -1e-300, 1e-8, math.Pi/4, -math.Pi/4)
}

// TestExpandSinCos checks the sines and cosines of XLA's CPU plugin, written out by
// ExpandSinCos, and their gradients (GoMLX's: cos x and −sin x, written out too) against
// math.Sin and math.Cos: within 2.3e-16 (two ulps of a value in [½, 1]; math's own are within
// about one) for |x| up to 1e9, next to multiples of π/2 too, exactly x for normal |x| < 1e-8
// (XLA's CPU kernels flush subnormal numbers to zero), and NaN beyond ExpandSinCosLimit (where
// the C library's would not be: so the expansion ran) and at ±Inf and NaN.
func TestExpandSinCos(t *testing.T) {
	bx, _ := xlaAndGo(t)
	if !usesOwnSinCos(bx) {
		t.Skipf("the plugin's programs keep XLA's sine and cosine here (%s=%s, fusion %s)", EnvXLASinCos, os.Getenv(EnvXLASinCos), FusionModeOf(bx))
	}
	prog := NewProgram(bx, "sincos", func(g *G.Graph, in []*G.Node) []*G.Node {
		s, c := G.Sin(in[0]), G.Cos(in[0])
		return []*G.Node{s, c, G.Gradient(G.ReduceAllSum(s), in[0])[0], G.Gradient(G.ReduceAllSum(c), in[0])[0]}
	})
	run := func(xs []float64) [][]float64 {
		out, err := prog.Run(NewTensor(append([]float64(nil), xs...), len(xs)))
		require.NoError(t, err)
		return [][]float64{out[0].Data, out[1].Data, out[2].Data, out[3].Data}
	}

	xs := sinCosInputs()
	got := run(xs)
	const tol = 2.3e-16
	worst := 0.0
	for i, x := range xs {
		want := []float64{math.Sin(x), math.Cos(x), math.Cos(x), -math.Sin(x)}
		for j, name := range []string{"sin", "cos", "d sin", "d cos"} {
			d := math.Abs(got[j][i] - want[j])
			worst = max(worst, d/tol)
			require.LessOrEqualf(t, d, tol, "%s(%v) = %v, math: %v", name, x, got[j][i], want[j])
		}
		if math.Abs(x) < 1e-8 {
			require.Equalf(t, x, got[0][i], "sin(%v)", x)
		}
	}
	t.Logf("%d arguments, largest error %.2f of the tolerance", len(xs), worst)

	edge := []float64{ExpandSinCosLimit * 1.0001, -1e12, math.Inf(1), math.Inf(-1), math.NaN()}
	got = run(edge)
	for i, x := range edge {
		require.Truef(t, math.IsNaN(got[0][i]) && math.IsNaN(got[1][i]), "sin, cos(%v) = %v, %v: want NaN", x, got[0][i], got[1][i])
	}
}

// TestExpandSinCosText: every float64 sine and cosine, at the top level and in a loop's body,
// is replaced by lines that define its result once and names that are new; other lines and
// other types stay as they were, and a program that uses the expansion's names is refused.
func TestExpandSinCosText(t *testing.T) {
	text := strings.Join([]string{
		`module @m {`,
		`  func.func @main(%x: tensor<3x2xf64>, %s: tensor<f64>, %h: tensor<4xf32>) -> (tensor<3x2xf64>, tensor<f64>, tensor<4xf32>) {`,
		`    %0 = "stablehlo.sine"(%x) : (tensor<3x2xf64>) -> tensor<3x2xf64>`,
		`    %1 = "stablehlo.cosine"(%x) : (tensor<3x2xf64>) -> tensor<3x2xf64>`,
		`    %2 = "stablehlo.add"(%0, %1) : (tensor<3x2xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>`,
		`      %3 = "stablehlo.cosine"(%s) : (tensor<f64>) -> tensor<f64>`,
		`    %4 = "stablehlo.sine"(%h) : (tensor<4xf32>) -> tensor<4xf32>`,
		`    "stablehlo.return"(%2, %3, %4) : (tensor<3x2xf64>, tensor<f64>, tensor<4xf32>) -> ()`,
		`  }`,
		`}`,
	}, "\n")
	out, err := ExpandSinCos(text)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(out, `"stablehlo.sine"`), "only the float32 sine is left")
	require.NotContains(t, out, `"stablehlo.cosine"`)
	defined := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if m := ssaDefine.FindStringSubmatch(l); m != nil {
			defined[m[1]]++
			if strings.HasPrefix(m[1], sinCosPrefix+"3_") {
				require.True(t, strings.HasPrefix(l, "      "), "a line of the loop body's expansion keeps its indentation: %q", l)
				require.NotContains(t, l, "3x2", l)
			}
		}
	}
	for name, n := range defined {
		require.Equalf(t, 1, n, "%s defined %d times", name, n)
	}
	for _, name := range []string{"%0", "%1", "%2", "%3", "%4"} {
		require.Containsf(t, defined, name, "%s is still defined", name)
	}
	require.Contains(t, out, `"stablehlo.add"(%0, %1)`)

	_, err = ExpandSinCos(out)
	require.ErrorContains(t, err, sinCosPrefix)
}

// TestUsesOwnSinCos: programs of XLA's CPU plugin with fusion on (its default) take
// ExpandSinCos unless EnvXLASinCos says libm, those of the Go backend their own operations,
// and a value of EnvXLASinCos that names no mode is an error.
func TestUsesOwnSinCos(t *testing.T) {
	bg, err := NewBackend(BackendGo)
	require.NoError(t, err)
	require.False(t, usesOwnSinCos(bg))
	t.Setenv(EnvXLASinCos, "")
	bx, _ := xlaAndGo(t)
	require.Equal(t, FusionModeOf(bx) != FusionOff, usesOwnSinCos(bx), "fusion %q", FusionModeOf(bx))
	t.Setenv(EnvXLASinCos, SinCosLibm)
	require.False(t, usesOwnSinCos(bx))
	t.Setenv(EnvXLASinCos, "vectorized") // refused when a plugin loads (openXLA)
	_, err = sinCosMode()
	require.ErrorContains(t, err, EnvXLASinCos)
}
