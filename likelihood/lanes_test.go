package likelihood

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLanesEqualRows: on XLA's CPU plugin, EvalRows runs LinearizeData's trials as lanes
// (chunks of LaneWidth single-trial rows), and each row's log-likelihood and gradient equal
// those of the row evaluated whole in the usual [rows, trials] layout, to 1e-12 (the trials
// are summed on the host there, in the graph here), for rows of different θ and numbers of
// trials (with a fitted temperature), trials of their own length, the MCE baseline, full
// observability and value only. Under LinearizeMean nothing runs as lanes.
func TestLanesEqualRows(t *testing.T) {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	same := simulateTrials(t, m, control.ObservePartial, natural, 5, 8, 21)
	varying := simulateLengths(t, m, natural, []int{8, 6, 8, 7, 5}, 22)
	for _, c := range []struct {
		name   string
		opts   Options
		trials [][][]float64
		lanes  bool
	}{
		{"data/fit-temperature", Options{FitTemperature: true}, same, true},
		{"data/own lengths", Options{}, varying, true},
		{"data/baseline", Options{Method: MCEBaseline}, same, true},
		{"data/full", Options{Observe: control.ObserveFull}, same, true},
		{"data/value only", Options{ValueOnly: true}, same, true},
		{"mean", Options{Linearize: LinearizeMean}, same, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(m, bx, c.opts)
			require.NoError(t, err)
			require.Equal(t, c.lanes, e.lanes())
			theta := withTemperature(m.Spec(), c.opts)
			other := append([]float64(nil), theta...)
			other[0] += 0.1
			rows := [][][][]float64{c.trials, c.trials[1:3], c.trials[:4]}
			thetas := [][]float64{theta, other, theta}
			ll, grad, err := e.EvalRows(rows, thetas, Batching{Keep: true})
			require.NoError(t, err)

			d, err := e.Prepare(rows, 0)
			require.NoError(t, err)
			want, wantGrad, err := e.Eval(d, thetas)
			require.NoError(t, err)
			assert.NotEqual(t, want[0], want[1], "the rows differ")
			for r := range rows {
				assert.InDelta(t, want[r], ll[r], 1e-12*math.Abs(want[r]), "row %d: log-likelihood", r)
				if c.opts.ValueOnly {
					assert.Nil(t, grad[r])
					continue
				}
				for i := range wantGrad[r] {
					assert.InDelta(t, wantGrad[r][i], grad[r][i], 1e-12*math.Max(1, math.Abs(wantGrad[r][i])), "row %d: gradient %d", r, i)
				}
			}
			ran := false
			for k := range e.chunks.sizes {
				ran = ran || (k.trials == 1 && k.rows%LaneWidth == 0)
			}
			assert.Equal(t, c.lanes, ran, "chunks of lanes ran")
		})
	}
}

// TestLanesBitsIndependentOfChunk: a row's log-likelihood and gradient from EvalRows in lanes
// are the same bits alone and among other rows, in chunks of 1, 2 and 4 array rows of lanes
// (Batching.Most sets the size) and at other positions in them, so that a subject fitted in a
// queue gets the estimates of the subject fitted alone; the trial scores are the lanes' values
// and run in a compiled chunk. A kernel compiled for another inner
// length changes the last bits; the outer length does not.
func TestLanesBitsIndependentOfChunk(t *testing.T) {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, theta := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 4, 8, 23)
	e, err := New(m, bx, Options{})
	require.NoError(t, err)
	require.True(t, e.lanes())
	other := append([]float64(nil), theta...)
	other[1] += 0.05
	want, wantGrad, err := e.EvalRows([][][][]float64{trials}, [][]float64{theta}, Batching{Most: 1})
	require.NoError(t, err)
	sizes := map[int]bool{}
	for _, c := range []struct{ rows, most int }{
		{2, 1},     // Most below the call: small chunks
		{7, 40},    // 28 trials
		{40, 200},  // 160 trials, rows of others first
		{70, 200},  // 280 trials: the row in a later chunk
		{16, 400},  // the row's trials at other lanes
		{3, 0},     // Most unknown
		{33, 40},   // the row's trials over two chunks
		{1, 2000},  // alone, as in a large queue
		{5, 1},     // back to the smallest
		{20, 400},  // the row's trials straddle two array rows
		{12, 1000}, // as above, another Most
	} {
		rows := make([][][][]float64, c.rows)
		thetas := make([][]float64, c.rows)
		for i := range rows {
			rows[i], thetas[i] = trials[i%4:], other
		}
		rows[c.rows*3/4], thetas[c.rows*3/4] = trials, theta
		ll, grad, err := e.EvalRows(rows, thetas, Batching{Most: c.most})
		require.NoError(t, err)
		assert.Equal(t, want[0], ll[c.rows*3/4], "%d rows, Most %d: log-likelihood", c.rows, c.most)
		assert.Equal(t, wantGrad[0], grad[c.rows*3/4], "%d rows, Most %d: gradient", c.rows, c.most)
		_, _, _, ideal := e.plan(singleRows(rows), Batching{Trials: 1, Most: c.most * 4, lanes: true})
		assert.Zero(t, ideal%LaneWidth, "whole array rows of lanes")
		sizes[ideal] = true
	}
	assert.GreaterOrEqual(t, len(sizes), 3, "chunks of several sizes: %v", sizes)

	// The trial scores are the lanes' own values, summed above in trial order, in a chunk
	// size already compiled.
	builds := e.Stats().Builds
	scores, scoreGrad, err := e.TrialScores(trials, theta)
	require.NoError(t, err)
	assert.Equal(t, builds, e.Stats().Builds, "no program built for the trial scores")
	sum, sumGrad := 0.0, make([]float64, len(theta))
	for r := range scores {
		sum += scores[r]
		for i := range sumGrad {
			sumGrad[i] += scoreGrad[r][i]
		}
	}
	assert.Equal(t, want[0], sum, "the trial scores sum to the row's log-likelihood")
	assert.Equal(t, wantGrad[0], sumGrad, "and gradient")
}

// singleRows returns the trials of rows as rows of one trial each (evalLanes).
func singleRows(rows [][][][]float64) [][][][]float64 {
	var out [][][][]float64
	for _, row := range rows {
		for j := range row {
			out = append(out, row[j:j+1])
		}
	}
	return out
}

// laneChunk rounds chunk sizes up to whole array rows of lanes.
func TestLaneChunk(t *testing.T) {
	for _, c := range []struct{ in, want int }{{1, 64}, {64, 64}, {65, 128}, {250, 256}, {256, 256}} {
		assert.Equal(t, c.want, laneChunk(c.in), "%d", c.in)
	}
}
