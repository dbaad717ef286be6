package graph

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fusedProgram has runs of maps between recursions that read each other's outputs (a shared
// value, a sequence from its second step, one step of it, a constant entry), a differentiated input read as shared by
// several of them, and a differentiated sequence read cut two ways (which no fused call may
// hold twice).
func fusedProgram(f Flow, ab *Value, xs, gs []*Value) *Value {
	T := len(xs)
	nat := f.Map("nat", func(in [][]S) [][]S {
		return [][]S{{Exp(in[0][0]), in[0][1], C(3)}}
	}, ab)[0]
	ys := f.MapSteps("ys", func(in [][]S) [][]S {
		return [][]S{{Sin(Mul(in[1][0], in[0][0])), Mul(in[1][2], in[0][0])}}
	}, [][]*Value{xs}, nat)[0]
	zs := f.MapSteps("zs", func(in [][]S) [][]S { // the steps after the first, and the first
		return [][]S{{Add(Mul(in[0][0], in[1][1]), in[2][1])}}
	}, [][]*Value{ys[1:]}, ys[0], ab)[0]
	ws := f.MapSteps("ws", func(in [][]S) [][]S {
		return [][]S{{Add(Mul(in[0][0], in[1][0]), Mul(in[2][0], in[2][0]))}}
	}, [][]*Value{zs, gs[:T-1]}, ab)[0]
	vs := f.MapSteps("vs", func(in [][]S) [][]S { // gs read again, cut the other way
		return [][]S{{Mul(in[0][0], Cos(in[1][0]))}}
	}, [][]*Value{ws, gs[1:]})[0]
	init := f.Map("init", func(in [][]S) [][]S { return [][]S{{in[0][1], C(0)}} }, nat)[0]
	last, _ := f.Scan("sum", func(c []S, x, p [][]S) ([]S, []S) {
		return []S{Add(Mul(c[0], p[0][1]), x[0][0]), Add(c[1], x[0][0])}, nil
	}, init, [][]*Value{vs}, []*Value{nat}, false)
	return f.Map("out", func(in [][]S) [][]S {
		return [][]S{{Add(Mul(in[0][0], in[1][0]), in[0][1])}}
	}, last, ab)[0]
}

// TestFusedCalls checks the maps between recursions run as one program (and their
// vector–Jacobian products as one more) against each map a program of its own, on XLA's CPU
// plugin, and both against the Go backend: values and gradients, every program compiled by the
// dry run, and the calls an evaluation makes. It runs where a plugin is installed (make
// xla-cpu) and is skipped otherwise.
func TestFusedCalls(t *testing.T) {
	bx, bg := xlaAndGo(t)
	const B = 3
	ab := []float64{0.7, 0.8, 0.9, -0.3, 0.95, 0.5}
	// T = 2: the recursion over vs has one step, a block of the fused call, not a while loop.
	for _, T := range []int{6, 2} {
		x := make([]float64, T*B)
		gv := make([]float64, T*B)
		for i := range x {
			x[i] = 0.25 * float64(i%5)
			gv[i] = 0.1 * float64(i%7)
		}
		type result struct {
			val, gradAB, gradG []float64
			calls              int
		}
		// fetchFirst: Fetch before Backward, without a dry run (out's map then runs alone).
		eval := func(e *Engine, fetchFirst bool) result {
			flow := func(tp *Tape) (*Value, *Value, []*Value) {
				abv := tp.Input(ab, 2, []int{B}, true)
				gs := tp.Series(gv, T, 1, []int{B}, true)
				return fusedProgram(tp, abv, tp.Series(x, T, 1, []int{B}, false), gs), abv, gs
			}
			tp := e.NewTape(true)
			defer tp.Release()
			if !fetchFirst {
				require.NoError(t, tp.Precompile("fused", func(dry *Tape) {
					out, _, _ := flow(dry)
					dry.Backward(out)
				}))
			}
			before := e.Calls()
			out, abv, gs := flow(tp)
			var r result
			if fetchFirst {
				r.val = tp.Fetch(out)
			}
			tp.Backward(out) // before Fetch, as the dry run: out's map runs with its product
			if !fetchFirst {
				r.val = tp.Fetch(out)
			}
			r.gradAB = tp.Grad(abv)
			for _, g := range gs {
				r.gradG = append(r.gradG, tp.Grad(g)...)
			}
			r.calls = e.Calls() - before
			if !fetchFirst {
				assert.Zero(t, e.Stats().Late, "the dry run compiled every program")
			}
			return r
		}
		want := eval(NewEngine(bg), false)
		runs := map[string]result{}
		for _, c := range []struct{ fused, fetchFirst bool }{{false, false}, {true, false}, {true, true}} {
			e := NewEngine(bx)
			e.SetWhileLoops(true)
			e.SetFusedCalls(c.fused)
			r := eval(e, c.fetchFirst)
			name := fmt.Sprintf("T=%d fused=%v fetch first=%v", T, c.fused, c.fetchFirst)
			runs[name] = r
			assert.InDeltaSlice(t, want.val, r.val, 1e-13, name)
			assert.InDeltaSlice(t, want.gradAB, r.gradAB, 1e-12, name)
			assert.InDeltaSlice(t, want.gradG, r.gradG, 1e-12, name)
			assert.NotZero(t, r.gradG[B], "the sequence read twice has a gradient")
		}
		if T < 6 {
			continue // the recursion of one step runs as a block, not as a while loop
		}
		// Each map its own program: nat, ys, zs, ws, vs, init, the recursion's carry made dense,
		// the recursion, out, and each one's product. Fused: nat…ws (vs reads gs cut the other
		// way: a fused call of its own with init and the carry), the recursion, out with its
		// product; and the products of the other three.
		assert.Equal(t, 9+9, runs["T=6 fused=false fetch first=false"].calls)
		assert.Equal(t, 4+3, runs["T=6 fused=true fetch first=false"].calls)
		assert.Equal(t, 4+4, runs["T=6 fused=true fetch first=true"].calls, "out's map and its product apart")
	}
}

// TestFusedCallRefusesAValueReadTwice: a call that reads a differentiated value two ways (here
// one step of a sequence it also reads whole) joins no fused call, and Backward refuses it as
// it does without fusion, rather than giving it one of the two cotangents.
func TestFusedCallRefusesAValueReadTwice(t *testing.T) {
	cpuPlugin(t)
	bx, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	for _, fused := range []bool{false, true} {
		e := NewEngine(bx)
		e.SetWhileLoops(true)
		e.SetFusedCalls(fused)
		tp := e.NewTape(true)
		gs := tp.Series([]float64{1, 2, 3, 4, 5, 6}, 3, 1, []int{2}, true)
		out := tp.MapSteps("twice", func(in [][]S) [][]S {
			return [][]S{{Mul(in[0][0], in[1][0])}}
		}, [][]*Value{gs}, gs[0])[0]
		sum := tp.Map("sum", func(in [][]S) [][]S { return [][]S{{Add(in[0][0], in[1][0])}} }, out[0], out[1])[0]
		assert.PanicsWithValue(t, "graph: twice takes the same differentiated value twice", func() { tp.Backward(sum) }, "fused=%v", fused)
		tp.Release()
	}
}
