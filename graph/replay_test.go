package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayEqualsTape: an evaluation recorded once (Record, SaveRecording) replays at other
// inputs with the values and gradients of a tape to the last bit and the same program calls;
// an input given after a stage ran, or a stage run after a read, leaves its key without a
// replay, and SetReplays(false) replays nothing.
func TestReplayEqualsTape(t *testing.T) {
	b, err := NewBackend(BackendGo)
	require.NoError(t, err)
	const T, B = 5, 3
	x := make([]float64, T*B)
	for i := range x {
		x[i] = 0.3 * float64(i%7)
	}
	inputs := func(tp *Tape, ab []float64) (*Value, []*Value) {
		abv := tp.Input(ab, 2, []int{B}, true)
		xv := tp.Series(x, T, 1, []int{B}, false)
		return abv, xv
	}
	// evaluate runs the flow on a tape of e (recording it under key if key is not "") and
	// returns its value, gradient and calls.
	evaluate := func(e *Engine, key string, ab []float64) (val, grad []float64, calls int, why string) {
		c0 := e.Calls()
		tp := e.NewTape(true)
		defer tp.Release()
		if key != "" {
			tp.Record(key)
		}
		abv, xv := inputs(tp, ab)
		out := flowProgram(tp, abv, xv)
		tp.Backward(out)
		val, grad = tp.Fetch(out), tp.Grad(abv)
		return val, grad, e.Calls() - c0, tp.SaveRecording()
	}
	points := [][]float64{{0.7, 0.8, 0.9, -0.3, -0.2, 0.1}, {0.1, -0.5, 1.2, 0.4, 0.6, -0.9}}

	plain := NewEngine(b)
	plain.SetReplays(false)
	e := NewEngine(b)
	_, _, _, why := evaluate(e, "flow", points[0])
	require.Empty(t, why, "the flow's evaluation is replayable")
	for _, ab := range points {
		wantVal, wantGrad, wantCalls, _ := evaluate(plain, "", ab)
		rt := e.ReplayTape("flow")
		require.NotNil(t, rt)
		c0 := e.Calls()
		inputs(rt, ab)
		res := rt.Replay()
		rt.Release()
		require.Len(t, res, 2)
		assert.Equal(t, wantVal, res[0], "value at %v", ab)
		assert.Equal(t, wantGrad, res[1], "gradient at %v", ab)
		assert.Equal(t, wantCalls, e.Calls()-c0, "the same program calls")
	}
	assert.Equal(t, 2, e.Stats().Replays)
	rt := e.ReplayTape("flow")
	rt.Input(points[0][:4], 2, []int{2}, true) // other dimensions
	assert.False(t, rt.Replayable(), "inputs of other dimensions")
	assert.Panics(t, func() { rt.Replay() })
	rt.Release()
	assert.Nil(t, plain.ReplayTape("flow"), "SetReplays(false) keeps no replay")

	// An input given between stages cannot be given to a replay: no replay of the key.
	tp := e.NewTape(true)
	tp.Record("late")
	abv, xv := inputs(tp, points[0])
	out := flowProgram(tp, abv, xv)
	late := tp.Input([]float64{1, 2, 3}, 1, []int{B}, false)
	sum := tp.Map("sum", func(in [][]S) [][]S { return [][]S{{Add(in[0][0], in[1][0])}} }, out, late)[0]
	tp.Fetch(sum)
	assert.NotEmpty(t, tp.SaveRecording())
	tp.Release()
	assert.Nil(t, e.ReplayTape("late"))
	tp = e.NewTape(true)
	tp.Record("late")
	assert.Nil(t, tp.rec, "a key known not to replay is not recorded again")
	tp.Release()

	// A stage run after a read may have depended on the numbers read: no replay either.
	tp = e.NewTape(true)
	tp.Record("read")
	abv, xv = inputs(tp, points[0])
	out = flowProgram(tp, abv, xv)
	tp.Fetch(out)
	tp.Fetch(tp.Map("twice", func(in [][]S) [][]S { return [][]S{{Add(in[0][0], in[0][0])}} }, out)[0])
	assert.Equal(t, "a stage ran after a value was read", tp.SaveRecording())
	tp.Release()
	assert.Nil(t, e.ReplayTape("read"))
}
