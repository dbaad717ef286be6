package graph

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flowProgram is a small computation with every kind of stage: a step map (x_t → sin(a·x_t),
// a constant), a forward recursion c' = c·b + y_t with a constant carry entry, a reverse one
// over its outputs, and a final map; a, b are differentiated parameters.
func flowProgram(f Flow, ab *Value, xs []*Value) *Value {
	ys := f.MapSteps("map", func(in [][]S) [][]S {
		return [][]S{{Sin(Mul(in[1][0], in[0][0])), C(2)}}
	}, [][]*Value{xs}, ab)[0]
	init := f.Map("init", func(in [][]S) [][]S { return [][]S{{C(1), C(0)}} })[0]
	_, zs := f.Scan("fwd", func(c []S, x, p [][]S) ([]S, []S) {
		next := Add(Mul(c[0], p[0][1]), Mul(x[0][0], x[0][1]))
		return []S{next, Add(c[1], Square(next))}, []S{next}
	}, init, [][]*Value{ys}, []*Value{ab}, false)
	last, _ := f.Scan("rev", func(c []S, x, p [][]S) ([]S, []S) {
		return []S{Add(Mul(c[0], Cos(p[0][0])), x[0][0])}, nil
	}, f.Map("zero", func([][]S) [][]S { return [][]S{{C(0)}} })[0], [][]*Value{zs}, []*Value{ab}, true)
	return last
}

// TestLoopedFlowEqualsUnrolled checks the looped form's values and reverse-mode gradient
// against the unrolled graph differentiated by GoMLX, and that gradient against central
// differences.
func TestLoopedFlowEqualsUnrolled(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	const T, B = 5, 3
	ab := []float64{0.7, 0.8, 0.9, -0.3, -0.2, 0.1} // [2][B]
	x := make([]float64, T*B)
	for i := range x {
		x[i] = 0.3 * float64(i%7)
	}
	unrolled := func(ab []float64) (val, grad []float64) {
		p := NewProgram(b, "flow", func(g *G.Graph, in []*G.Node) []*G.Node {
			abv := Values(Unstack(in[0], 1))[0]
			xv := make([]*Value, T)
			for t, s := range Unstack(in[1], 1) {
				xv[t] = Values([]S{s})[0]
			}
			out := flowProgram(Unrolled{}, abv, xv).Scalars()[0].Node(g)
			return []*G.Node{out, G.Gradient(G.ReduceAllSum(out), in[0])[0]}
		})
		out, err := p.Run(NewTensor(ab, 2, B), NewTensor(x, T, B))
		require.NoError(t, err)
		return out[0].Data, out[1].Data
	}
	wantVal, wantGrad := unrolled(ab)

	e := NewEngine(b)
	for i := range 4 { // reverse mode, forward mode; the second evaluation of each reuses the programs
		tp := e.NewTape(true)
		if i >= 2 {
			tp = e.NewForwardTape(2)
		}
		abv := tp.Input(ab, 2, []int{B}, true)
		xv := make([]*Value, T)
		for t := range T {
			xv[t] = tp.Input(x[t*B:(t+1)*B], 1, []int{B}, false)
		}
		out := flowProgram(tp, abv, xv)
		val := tp.Fetch(out)
		tp.Backward(out)
		grad := tp.Grad(abv)
		tp.Release()
		assert.InDeltaSlice(t, wantVal, val, 1e-12)
		assert.InDeltaSlice(t, wantGrad, grad, 1e-12)
	}
	builds := e.Stats().Builds
	assert.Less(t, builds, 24, "one program per stage and per step function, not per step")

	const h = 1e-6
	for i := range ab {
		up, down := append([]float64(nil), ab...), append([]float64(nil), ab...)
		up[i] += h
		down[i] -= h
		vu, _ := unrolled(up)
		vd, _ := unrolled(down)
		fd := (vu[i%B] - vd[i%B]) / (2 * h)
		assert.InDelta(t, fd, wantGrad[i], 1e-6*math.Max(1, math.Abs(fd)), "parameter %d", i)
	}
}

// TestDryRunCompilesEverything checks that a dry run of a Flow and its Backward builds and
// compiles every program that the real run then uses (reverse mode, forward mode and value
// only), and that the real run gives what it gives without the dry run.
func TestDryRunCompilesEverything(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	const T, B = 4, 2
	ab := []float64{0.7, 0.8, -0.3, -0.2}
	x := make([]float64, T*B)
	for i := range x {
		x[i] = 0.2 * float64(i%5)
	}
	eval := func(tp *Tape, grad bool) (val, g []float64) {
		abv := tp.Input(ab, 2, []int{B}, true)
		xv := tp.Series(x, T, 1, []int{B}, false)
		out := flowProgram(tp, abv, xv)
		val = tp.Fetch(out)
		if grad {
			tp.Backward(out)
			g = tp.Grad(abv)
		}
		return val, g
	}
	for _, tc := range []struct {
		name string
		tape func(e *Engine) *Tape
		grad bool
	}{
		{"reverse", func(e *Engine) *Tape { return e.NewTape(true) }, true},
		{"forward", func(e *Engine) *Tape { return e.NewForwardTape(2) }, true},
		{"value", func(e *Engine) *Tape { return e.NewTape(false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantVal, wantGrad := eval(tc.tape(NewEngine(b)), tc.grad)

			e := NewEngine(b)
			dry := tc.tape(e).Dry()
			val, grad := eval(dry, tc.grad)
			assert.Equal(t, make([]float64, len(wantVal)), val, "a dry tape's values are zeros")
			if tc.grad {
				assert.Equal(t, make([]float64, len(wantGrad)), grad)
			}
			assert.Zero(t, e.Stats().Compiles, "a dry run compiles nothing before Compile")
			require.NoError(t, dry.Compile())
			before := e.Stats()
			assert.Positive(t, before.Builds)
			assert.Equal(t, before.Builds, before.Compiles, "Compile compiles every program built")
			assert.Zero(t, e.Calls(), "a dry run runs nothing")

			val, grad = eval(tc.tape(e), tc.grad)
			after := e.Stats()
			assert.Equal(t, before.Builds, after.Builds, "the real run needs no program the dry run missed")
			assert.Equal(t, before.Compiles, after.Compiles)
			assert.Zero(t, after.Late, "nothing compiled one at a time")
			assert.Positive(t, before.Waited, "the dry run's building and compiling is waited for")
			assert.Equal(t, before.Waited, after.Waited, "the real run waits for no build or compile")
			assert.Positive(t, e.Calls())
			assert.Equal(t, wantVal, val)
			assert.Equal(t, wantGrad, grad)
		})
	}
}

// TestScanOneProgramPerStep checks that a recursion whose first carry is made by a stage (its
// entries all nodes) runs every step with one program: such a carry and a step's output are
// the same layout.
func TestScanOneProgramPerStep(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	e := NewEngine(b)
	tp := e.NewTape(false)
	defer tp.Release()
	x0 := []float64{0.3, 0.5}
	x := tp.Input(x0, 1, []int{2}, false)
	xs := tp.Series([]float64{1, 2, 3, 4, 5, 6}, 3, 1, []int{2}, false)
	init := tp.Map("init", func(in [][]S) [][]S { return [][]S{{Square(in[0][0]), Sin(in[0][0])}} }, x)[0]
	last, _ := tp.Scan("step", func(c []S, x, _ [][]S) ([]S, []S) {
		return []S{Add(c[0], x[0][0]), Mul(c[0], c[1])}, nil
	}, init, [][]*Value{xs}, nil, false)
	assert.Equal(t, 2, e.Stats().Builds, "the init stage and one step program")
	got := tp.Fetch(last) // [2 entries][2 batch]
	for j, v := range x0 {
		c0, c1 := v*v, math.Sin(v)
		for step := range 3 {
			c0, c1 = c0+float64(2*step+j+1), c0*c1
		}
		assert.InDelta(t, c0, got[j], 1e-12)
		assert.InDelta(t, c1, got[2+j], 1e-12)
	}
}

// TestScanBlocksEqualSteps checks that recursions run k steps per call (Engine.SetStepsPerCall)
// give the one-step form's values and gradients, in reverse and forward mode, for k dividing T
// and not (a last, shorter block), k = T and k > T, with the calls each takes.
func TestScanBlocksEqualSteps(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	const T, B = 7, 3
	ab := []float64{0.7, 0.8, 0.9, -0.3, -0.2, 0.1}
	x := make([]float64, T*B)
	for i := range x {
		x[i] = 0.25 * float64(i%5)
	}
	eval := func(e *Engine, fwd bool) (val, grad []float64, calls int) {
		tp := e.NewTape(true)
		if fwd {
			tp = e.NewForwardTape(2)
		}
		defer tp.Release()
		abv := tp.Input(ab, 2, []int{B}, true)
		out := flowProgram(tp, abv, tp.Series(x, T, 1, []int{B}, false))
		val = tp.Fetch(out)
		tp.Backward(out)
		return val, tp.Grad(abv), e.Calls()
	}
	for _, fwd := range []bool{false, true} {
		wantVal, wantGrad, oneCalls := eval(NewEngine(b), fwd)
		for _, k := range []int{1, 2, 3, 7, 10} {
			e := NewEngine(b)
			e.SetStepsPerCall(k)
			val, grad, calls := eval(e, fwd)
			assert.InDeltaSlice(t, wantVal, val, 1e-13, "k=%d forward=%v", k, fwd)
			assert.InDeltaSlice(t, wantGrad, grad, 1e-13, "k=%d forward=%v", k, fwd)
			// Two recursions of T steps: each step call (and in reverse mode its
			// vector–Jacobian product) becomes one call per block.
			perStep := 2
			if fwd {
				perStep = 1
			}
			blocks := (T + k - 1) / k
			assert.Equal(t, oneCalls-2*perStep*(T-blocks), calls, "k=%d forward=%v", k, fwd)
		}
	}
}

// TestWhileLoopsEqualSteps checks recursions run as while loops (Engine.SetWhileLoops, on XLA's
// CPU plugin) against one step per call on the Go backend: a step map, a recursion forward and
// one in reverse, values and gradients, compiled by a dry run, each recursion two calls
// whatever T. It runs where a plugin is installed (make xla-cpu) and is skipped otherwise.
func TestWhileLoopsEqualSteps(t *testing.T) {
	bx, bg := xlaAndGo(t)
	const B = 3
	ab := []float64{0.7, 0.8, 0.9, -0.3, -0.2, 0.1}
	eval := func(e *Engine, T int) (val, grad []float64, calls int) {
		x := make([]float64, T*B)
		for i := range x {
			x[i] = 0.25 * float64(i%5)
		}
		flow := func(tp *Tape) *Value {
			return flowProgram(tp, tp.Input(ab, 2, []int{B}, true), tp.Series(x, T, 1, []int{B}, false))
		}
		tp := e.NewTape(true)
		defer tp.Release()
		require.NoError(t, tp.Precompile(fmt.Sprint(T), func(dry *Tape) { dry.Backward(flow(dry)) }))
		abv := tp.Input(ab, 2, []int{B}, true)
		out := flowProgram(tp, abv, tp.Series(x, T, 1, []int{B}, false))
		val = tp.Fetch(out)
		tp.Backward(out)
		return val, tp.Grad(abv), e.Calls()
	}
	for _, T := range []int{7, 12} {
		wantVal, wantGrad, stepCalls := eval(NewEngine(bg), T)
		e := NewEngine(bx)
		e.SetWhileLoops(true)
		e.SetFusedCalls(false) // the maps' calls as with one step per call (TestFusedCalls)
		require.True(t, e.WhileLoops())
		val, grad, calls := eval(e, T)
		assert.InDeltaSlice(t, wantVal, val, 1e-13, "T=%d", T)
		assert.InDeltaSlice(t, wantGrad, grad, 1e-13, "T=%d", T)
		assert.Zero(t, e.Stats().Late, "the dry run compiled every program")
		// Two recursions of T steps: 2T calls forward and 2T VJPs with one step per call, 2
		// and 2 as while loops.
		assert.Equal(t, stepCalls-4*T+4, calls, "T=%d", T)
	}
	e := NewEngine(bg)
	e.SetWhileLoops(true)
	assert.False(t, e.WhileLoops(), "the Go backend runs no while loops")
}

// TestTraceCall: a traced call (EnvTraceCalls) is one line with the program's name, its first
// input's dimensions and its wall time.
func TestTraceCall(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = w
	traceCall("tracking", []*tensors.Tensor{tensors.FromFlatDataAndDimensions(make([]float64, 6), 3, 2)}, time.Now().Add(-1500*time.Microsecond))
	traceCall("theta", nil, time.Now())
	os.Stderr = stderr
	require.NoError(t, w.Close())
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2)
	f := strings.Fields(lines[0])
	require.Len(t, f, 6)
	assert.Equal(t, []string{"nioc", "call", "tracking", "3×2", "ms"}, []string{f[0], f[1], f[2], f[3], f[5]})
	ms, err := strconv.ParseFloat(f[4], 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, 1.5)
	assert.Contains(t, lines[1], "theta")
	assert.Contains(t, lines[1], " - ")
}
