package likelihood

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

func TestDistinctRows(t *testing.T) {
	a := [][][]float64{{{1}, {2}}}
	b := [][][]float64{{{1}, {2}}, {{3}, {4}}}
	aCopy := append([][][]float64(nil), a...) // the same trials in a new slice: another row
	for _, tc := range []struct {
		name      string
		rows      [][][][]float64
		distinct  int
		wantIndex []int
	}{
		{"one row", [][][][]float64{a}, 1, []int{0}},
		{"restarts side by side", [][][][]float64{a, a, a, b, b}, 2, []int{0, 0, 0, 1, 1}},
		{"interleaved", [][][][]float64{b, a, b, a}, 2, []int{0, 1, 0, 1}},
		{"a copy is its own row", [][][][]float64{a, aCopy, a}, 2, []int{0, 1, 0}},
		{"a shorter view is its own row", [][][][]float64{b, b[:1]}, 2, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			distinct, index := distinctRows(tc.rows)
			assert.Len(t, distinct, tc.distinct)
			assert.Equal(t, tc.wantIndex, index)
			for i, k := range index {
				assert.Same(t, &tc.rows[i][0], &distinct[k][0])
			}
		})
	}
}

func TestDistinctBucket(t *testing.T) {
	for _, tc := range [][2]int{{1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {50, 64}, {64, 64}, {65, 128}} {
		assert.Equal(t, tc[1], distinctBucket(tc[0]), "%d distinct rows", tc[0])
	}
}

// TestPrepareChunkGathers: on XLA's CPU plugin a chunk of few distinct rows is packed once per
// distinct row and gathered on the device, and evaluates to the same bits as the chunk packed
// row by row, for each linearization; EvalRows with Batching.Keep keeps the chunk and reuses
// it. Chunks of many distinct rows and trials of their own length are packed as before.
// It runs where a plugin is installed (make xla-cpu) and is skipped otherwise.
func TestPrepareChunkGathers(t *testing.T) {
	if _, err := graph.FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	bx, err := graph.NewBackend(graph.BackendXLA)
	require.NoError(t, err)
	t.Setenv(EnvLanes, "off") // lanes (LinearizeData here) pack single trials, never gather
	// One core: EvalRows then runs all rows as one chunk, the shape Eval runs below (XLA's
	// code for another shape may differ in the last bits).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	a := simulateTrials(t, m, control.ObservePartial, natural, 3, 6, 2)
	b := simulateTrials(t, m, control.ObservePartial, natural, 2, 6, 3)
	c := simulateTrials(t, m, control.ObservePartial, natural, 3, 6, 4)
	short := [][][]float64{b[0], b[1][:4]}
	for _, tc := range []struct {
		name     string
		opts     Options
		rows     [][][][]float64
		gathered bool
	}{
		{"restarts of two subjects", Options{}, [][][][]float64{a, a, a, b, b, b, b, b}, true},
		{"interleaved, linearize mean", Options{Linearize: LinearizeMean}, [][][][]float64{b, a, b, a, a, a, a, b}, true},
		{"linearize ilqg", Options{Linearize: LinearizeILQG}, [][][][]float64{a, a, a, a, b, b, b, b}, true},
		{"three distinct in four rows", Options{}, [][][][]float64{a, b, c, c}, false},
		{"trials of their own length", Options{}, [][][][]float64{a, a, short, short}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Form = FormLooped
			e, err := New(m, bx, opts)
			require.NoError(t, err)
			require.True(t, e.engine.WhileLoops())
			theta := withTemperature(m.Spec(), opts)
			thetas := make([][]float64, len(tc.rows))
			for i := range thetas {
				thetas[i] = append([]float64(nil), theta...)
				thetas[i][0] += 0.03 * float64(i)
			}
			packed, err := e.prepare(tc.rows, 0, 0)
			require.NoError(t, err)
			wantLL, wantGrad, err := e.Eval(packed, thetas)
			require.NoError(t, err)
			calls := e.engine.Calls()
			d, err := e.prepareChunk(tc.rows, 0, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.gathered, d.dev != nil)
			if tc.gathered {
				assert.Nil(t, d.states, "the states are only on the device")
				assert.Equal(t, calls+1, e.engine.Calls(), "one call gathers the chunk")
				assert.Equal(t, packed.mask, d.mask)
				assert.Equal(t, packed.initial, d.initial)
			}
			ll, grad, err := e.Eval(d, thetas)
			require.NoError(t, err)
			assert.Equal(t, wantLL, ll)
			assert.Equal(t, wantGrad, grad)
			for i := range 2 { // EvalRows keeps the chunk and reuses it
				ll, grad, err := e.EvalRows(tc.rows, thetas, Batching{MaxBatch: len(tc.rows) * 3, Most: len(tc.rows), Keep: true})
				require.NoError(t, err)
				assert.Equal(t, wantLL, ll, fmt.Sprint("call ", i))
				assert.Equal(t, wantGrad, grad, fmt.Sprint("call ", i))
			}
			_, reused, _ := e.Kept()
			assert.Positive(t, reused)
		})
	}
}

// BenchmarkPrepareChunk times what the host does to put a GPU-sized chunk on the device: 50
// reaching subjects × 50 restarts side by side, 50 trials of 50 steps (2,500 rows, 204 MB of
// states), packed row by row and uploaded ("packed"), or packed once per subject, uploaded and
// gathered on the device ("gathered", prepareChunk). On XLA's CPU plugin the gather itself is
// a copy by one core; on a GPU it is the device's. It runs on $NIOC_PJRT's plugin (the CPU
// plugin by default: make xla-cpu; bench/gpu/run.sh prepare on a GPU) and is skipped where
// that is not installed.
func BenchmarkPrepareChunk(b *testing.B) {
	bx, err := graph.NewBackend(graph.BackendXLA)
	if err != nil {
		b.Skip(err)
	}
	m, err := models.Get("reaching")
	require.NoError(b, err)
	e, err := New(m, bx, Options{Form: FormLooped})
	require.NoError(b, err)
	rows := randomRows(m, 50, 50, 50, 50, 50, 1)
	n := len(m.Spec().States)
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			d, err := e.prepare(rows, 50, 0)
			require.NoError(b, err)
			data, release := d.tensors(n, true)
			require.NoError(b, data.X[0].MaterializeOnDevice(bx, false, 0))
			require.NoError(b, data.mask.MaterializeOnDevice(bx, false, 0))
			release()
		}
	})
	b.Run("gathered", func(b *testing.B) {
		for b.Loop() {
			d, err := e.prepareChunk(rows, 50, 0)
			require.NoError(b, err)
			require.NotNil(b, d.dev)
			require.NoError(b, d.dev.mask.MaterializeOnDevice(bx, false, 0))
			d.dev.release()
		}
	})
}
