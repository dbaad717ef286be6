package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlatChunksEqualRows: rows of different numbers of trials and different θ, evaluated as
// flat chunks of single-trial rows in TrialScores' graph (the last chunk padded), give each
// row's log-likelihood and gradient as the rows evaluated whole, to the bit, with a
// fitted temperature and with trials of their own length, in the graph TrialScores then uses.
func TestFlatChunksEqualRows(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	same := simulateTrials(t, m, control.ObservePartial, natural, 4, 30, 11)
	varying := simulateLengths(t, m, natural, []int{30, 22, 30, 25}, 12)
	for _, c := range []struct {
		name   string
		m      models.Model
		opts   Options
		trials [][][]float64
	}{
		{"data", m, Options{}, same},
		{"data/fit-temperature", m, Options{FitTemperature: true}, same},
		{"data/own lengths", m, Options{}, varying},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(c.m, b, c.opts)
			require.NoError(t, err)
			theta := withTemperature(c.m.Spec(), c.opts)
			other := append([]float64(nil), theta...)
			other[0] += 0.1
			rows := [][][][]float64{c.trials, c.trials[1:3], c.trials[:3]}
			thetas := [][]float64{theta, other, theta}
			steps := len(c.trials[0]) - 1

			require.NoError(t, e.FlatChunks(c.trials))
			require.Len(t, e.flat.graphs, 1)
			g := e.flat.graphs[0]
			ownLengths := len(c.trials[1]) != len(c.trials[0])
			assert.Equal(t, flatGraph{F: 4, Steps: steps, explicit: ownLengths}, g)
			ds, ths, owner, ok := e.flatChunks(rows, thetas, g)
			require.True(t, ok)
			require.Len(t, ds, 3, "9 trials in chunks of 4")
			assert.Equal(t, []int{2, -1, -1, -1}, owner[2], "the last chunk is padded")
			ll, grad, err := e.runFlat(ds, ths, owner, len(rows), 2)
			require.NoError(t, err)
			// The flat graph is TrialScores': it computes the trials' own scores.
			tl, _, err := e.TrialScores(c.trials, theta)
			require.NoError(t, err)
			assert.Equal(t, 1, e.Stats().Builds, "TrialScores ran the flat chunks' graph")
			assertSums(t, tl, ll[0], "row 0 is the subject's trials")

			d, err := e.Prepare(rows, 0)
			require.NoError(t, err)
			want, wantGrad, err := e.Eval(d, thetas)
			require.NoError(t, err)
			assert.NotEqual(t, want[0], want[1], "the rows differ")
			assert.Equal(t, want, ll, "the rows' log-likelihoods, to the bit")
			assert.Equal(t, wantGrad, grad, "the rows' gradients, to the bit")
		})
	}
}

// TestEvalRowsIndependentOfTheCall: a row's log-likelihood and gradient from EvalRows are the
// same bits alone and among 1 to 39 other rows (a fit's restarts, other subjects' in a
// queue), whatever chunks and flat chunks the call runs in, under each linearization, so that
// a fit gives the same estimates whenever it runs and a subject fitted among others gets those
// of the subject fitted alone. Under LinearizeMean rows do not run flat (FlatChunks declares
// nothing): in flat chunks they differed in the gradient's last bits at 3 and 16 rows, which
// changed fits' evaluations from run to run.
func TestEvalRowsIndependentOfTheCall(t *testing.T) {
	b, m, trials := goFixture(t, "reaching", 20, 30, 4)
	for _, lin := range []Linearization{LinearizeData, LinearizeMean, LinearizeILQG} {
		t.Run(string(lin), func(t *testing.T) {
			opts := Options{Linearize: lin, FitTemperature: true}
			e, err := New(m, b, opts)
			require.NoError(t, err)
			require.NoError(t, e.FlatChunks(trials))
			assert.Equal(t, lin == LinearizeData, len(e.flat.graphs) == 1, "flat chunks under LinearizeData alone")
			theta := withTemperature(m.Spec(), opts)
			other := append([]float64(nil), theta...)
			other[1] += 0.05
			want, wantGrad, err := e.EvalRows([][][][]float64{trials}, [][]float64{theta}, Batching{Keep: true})
			require.NoError(t, err)
			for _, P := range []int{2, 3, 7, 16, 40} {
				rows := make([][][][]float64, P)
				thetas := make([][]float64, P)
				for i := range rows {
					rows[i], thetas[i] = trials[i%4:], other
				}
				rows[P-1], thetas[P-1] = trials, theta
				ll, grad, err := e.EvalRows(rows, thetas, Batching{Keep: true})
				require.NoError(t, err)
				assert.Equal(t, want[0], ll[P-1], "%d rows: log-likelihood", P)
				assert.Equal(t, wantGrad[0], grad[P-1], "%d rows: gradient", P)
			}
		})
	}
}

// flatPays: flat chunks when they need fewer (element-weighted) rounds than the padded chunks,
// from the call's shape alone.
func TestFlatPays(t *testing.T) {
	rows := func(n, trials int) [][][][]float64 {
		out := make([][][][]float64, n)
		for i := range out {
			out[i] = make([][][]float64, trials)
		}
		return out
	}
	tests := []struct {
		name                         string
		rows                         [][][][]float64
		chunk, n, trials, F, workers int
		want                         bool
	}{
		{"10 rows: two chunks of 5 in one round", rows(10, 50), 5, 2, 50, 50, 2, false},
		{"9 rows: one round of chunks", rows(9, 50), 5, 2, 50, 50, 2, false},
		{"6 rows: 3 flat rounds of 50 against one of 250", rows(6, 50), 5, 2, 50, 50, 2, true},
		{"3 rows: one core idle", rows(3, 50), 5, 1, 50, 50, 2, true},
		{"rows padded to 50 trials hold 10", rows(5, 10), 5, 1, 50, 50, 2, true},
		{"one core, 5 rows", rows(5, 50), 5, 1, 50, 50, 1, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, flatPays(tc.rows, tc.chunk, tc.n, tc.trials, tc.F, tc.workers), tc.name)
	}
}
