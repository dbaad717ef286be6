package likelihood

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLanesEqualRows: on XLA's CPU plugin, EvalRows runs LinearizeData's trials as lanes
// (chunks of LaneWidth single-trial rows), and each row's log-likelihood and gradient equal
// those of the row evaluated whole in the usual [rows, trials] layout, to 1e-12 (lanes sum
// a row's trials on the host, the usual layout in its program), for rows of different θ and numbers of
// trials (with a fitted temperature), trials of their own length, the MCE baseline, full
// observability and value only. Under LinearizeMean, with forward-mode gradients, in the unrolled
// form and with NIOC_LANES=off nothing runs as lanes, nor on an accelerator unless NIOC_LANES=on.
func TestLanesEqualRows(t *testing.T) {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	same := simulateTrials(t, m, control.ObservePartial, natural, 5, 8, 21)
	varying := simulateLengths(t, m, natural, []int{8, 6, 8, 7, 5}, 22)
	for _, o := range []Options{{Linearize: LinearizeMean}, {ForwardGradient: true}, {Form: FormUnrolled}} {
		e, err := New(m, bx, o)
		require.NoError(t, err)
		assert.False(t, e.lanes(), "%+v: no lanes", o)
	}
	t.Setenv(EnvLanes, "off")
	e, err := New(m, bx, Options{})
	require.NoError(t, err)
	assert.False(t, e.lanes(), "NIOC_LANES=off")
	defer func(f func(backends.Backend) bool) { runsOnHost = f }(runsOnHost)
	runsOnHost = func(backends.Backend) bool { return false } // as on a GPU
	t.Setenv(EnvLanes, "")
	assert.False(t, e.lanes(), "not on an accelerator by default")
	t.Setenv(EnvLanes, "on")
	assert.True(t, e.lanes(), "NIOC_LANES=on")
	runsOnHost = graph.RunsOnHost
	t.Setenv(EnvLanes, "")
	for _, c := range []struct {
		name   string
		opts   Options
		trials [][][]float64
	}{
		{"data/fit-temperature", Options{FitTemperature: true}, same},
		{"data/own lengths", Options{}, varying},
		{"data/baseline", Options{Method: MCEBaseline}, same},
		{"data/full", Options{Observe: control.ObserveFull}, same},
		{"data/value only", Options{ValueOnly: true}, same},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(m, bx, c.opts)
			require.NoError(t, err)
			require.True(t, e.lanes())
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
			assert.True(t, ran, "chunks of lanes ran")
		})
	}
}

// TestLanesBitsIndependentOfChunk: a trial's log-likelihood and gradient in lanes are the same
// bits in chunks of 1, 2 and 4 array rows of lanes and at any lane, next to trials of other θ,
// so that a subject fitted in a queue gets the estimates of the subject fitted alone: a kernel
// compiled for another inner length changes the last bits, the outer length does not. EvalRows
// sums them in trial order, alone or among other rows, and TrialScores gives them, in a chunk
// size compiled for other calls.
func TestLanesBitsIndependentOfChunk(t *testing.T) {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, theta := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 4, 8, 23)
	filler := simulateTrials(t, m, control.ObservePartial, natural, 3, 8, 24)
	e, err := New(m, bx, Options{})
	require.NoError(t, err)
	require.True(t, e.lanes())
	other := append([]float64(nil), theta...)
	other[1] += 0.05

	var lanes []float64 // the trials' values in the first chunk
	var laneGrad [][]float64
	for _, c := range []struct{ size, at int }{{64, 0}, {64, 37}, {128, 62}, {256, 3}, {256, 200}} {
		rows := make([][][][]float64, c.size)
		thetas := make([][]float64, c.size)
		for i := range rows {
			rows[i], thetas[i] = filler[i%3:i%3+1], other
		}
		for j := range trials {
			rows[c.at+j], thetas[c.at+j] = trials[j:j+1], theta
		}
		d, err := e.prepareChunk(rows, 1, 0)
		require.NoError(t, err)
		require.True(t, d.lanes)
		require.Equal(t, c.size/LaneWidth, d.Rows)
		ll, grad, err := e.Eval(d, thetas)
		require.NoError(t, err)
		if lanes == nil {
			lanes, laneGrad = ll[c.at:c.at+4], grad[c.at:c.at+4]
			continue
		}
		assert.Equal(t, lanes, ll[c.at:c.at+4], "chunk of %d, lanes from %d: log-likelihoods", c.size, c.at)
		assert.Equal(t, laneGrad, grad[c.at:c.at+4], "chunk of %d, lanes from %d: gradients", c.size, c.at)
	}
	sum, sumGrad := 0.0, make([]float64, len(theta))
	for r := range lanes {
		sum += lanes[r]
		for i := range sumGrad {
			sumGrad[i] += laneGrad[r][i]
		}
	}

	for range 2 { // the planner pads into a size once it has run, not only compiled
		ll, grad, err := e.EvalRows([][][][]float64{trials}, [][]float64{theta}, Batching{Most: 2000})
		require.NoError(t, err)
		assert.Equal(t, sum, ll[0], "alone: the lanes' sum in trial order")
		assert.Equal(t, sumGrad, grad[0], "alone: gradient")
	}
	for _, c := range []struct{ rows, most int }{{7, 40}, {40, 200}, {3, 0}} {
		rows := make([][][][]float64, c.rows)
		thetas := make([][]float64, c.rows)
		for i := range rows {
			rows[i], thetas[i] = trials[i%4:], other
		}
		rows[c.rows*3/4], thetas[c.rows*3/4] = trials, theta
		ll, grad, err := e.EvalRows(rows, thetas, Batching{Most: c.most})
		require.NoError(t, err)
		assert.Equal(t, sum, ll[c.rows*3/4], "%d rows, Most %d: log-likelihood", c.rows, c.most)
		assert.Equal(t, sumGrad, grad[c.rows*3/4], "%d rows, Most %d: gradient", c.rows, c.most)
	}

	builds := e.Stats().Builds
	scores, scoreGrad, err := e.TrialScores(trials, theta)
	require.NoError(t, err)
	assert.Equal(t, builds, e.Stats().Builds, "no program built for the trial scores")
	assert.Equal(t, lanes, scores, "trial scores")
	assert.Equal(t, laneGrad, scoreGrad, "trial scores' gradients")
}

// laneChunk rounds chunk sizes up to whole array rows of lanes.
func TestLaneChunk(t *testing.T) {
	for _, c := range []struct{ in, want int }{{1, 64}, {64, 64}, {65, 128}, {250, 256}, {256, 256}} {
		assert.Equal(t, c.want, laneChunk(c.in), "%d", c.in)
	}
}

// TestLanesBadRows: rows that Prepare refuses are refused in lanes with Prepare's words, naming
// the caller's row, not a chunk's single-trial row.
func TestLanesBadRows(t *testing.T) {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, theta := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 3, 8, 25)
	e, err := New(m, bx, Options{})
	require.NoError(t, err)
	require.True(t, e.lanes())
	short := [][][]float64{trials[0], trials[1][:1]}
	for _, c := range []struct {
		name string
		rows [][][][]float64
		b    Batching
		want string
	}{
		{"no trials", [][][][]float64{trials, {}}, Batching{}, "row 1 has no trials"},
		{"more trials than padded to", [][][][]float64{trials[:1], trials}, Batching{Trials: 2}, "row 1 has 3 trials, more than 2"},
		{"a trial of one state", [][][][]float64{trials, trials, short}, Batching{}, "row 2 trial 1 has 1 state(s)"},
	} {
		thetas := make([][]float64, len(c.rows))
		for i := range thetas {
			thetas[i] = theta
		}
		_, _, err := e.EvalRows(c.rows, thetas, c.b)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}
