package likelihood

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// TestEvalRowsKeep: with Batching.Keep, EvalRows gives the same bits as without, call after
// call at new parameters (the kept chunks reused, not packed again), for every form and for
// trials of different lengths (the kept steps observed and ends) and LinearizeMean's
// nominal; a call with other rows frees the chunks it does not use.
func TestEvalRowsKeep(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	subjA := simulateTrials(t, m, control.ObservePartial, natural, 3, 8, 2)
	subjB := simulateTrials(t, m, control.ObservePartial, natural, 3, 8, 3)
	short := [][][]float64{subjB[0], subjB[1][:5], subjB[2][:7]}
	for _, c := range []struct {
		name string
		opts Options
		b    [][][]float64
	}{
		{"looped", Options{Form: FormLooped}, subjB},
		{"looped, trials of their own length", Options{Form: FormLooped}, short},
		{"looped, linearize mean, own lengths", Options{Form: FormLooped, Linearize: LinearizeMean}, short},
		{"unrolled", Options{Form: FormUnrolled}, subjB},
		{"unrolled, own lengths", Options{Form: FormUnrolled}, short},
	} {
		t.Run(c.name, func(t *testing.T) {
			theta := withTemperature(m.Spec(), c.opts)
			call := func(e *Evaluator, rows [][][][]float64, shift float64, keep bool) ([]float64, [][]float64) {
				thetas := make([][]float64, len(rows))
				for i := range rows {
					thetas[i] = append([]float64(nil), theta...)
					thetas[i][0] += 0.05*float64(i) + shift
				}
				ll, grad, err := e.EvalRows(rows, thetas, Batching{MaxBatch: 3, Keep: keep}) // a row a chunk
				require.NoError(t, err)
				return ll, grad
			}
			rows := [][][][]float64{subjA, subjA, c.b, c.b, subjA}
			kept, err := New(m, b, c.opts)
			require.NoError(t, err)
			plain, err := New(m, b, c.opts)
			require.NoError(t, err)

			var first []*Data
			for i, shift := range []float64{0, 0.1, -0.07} {
				ll, grad := call(kept, rows, shift, true)
				wantLL, wantGrad := call(plain, rows, shift, false)
				assert.Equal(t, wantLL, ll, "call %d", i)
				assert.Equal(t, wantGrad, grad, "call %d", i)
				assert.Equal(t, 2, keptChunks(kept), "the call's chunks are kept, one for each subject's")
				assert.Zero(t, keptChunks(plain))
				var ds []*Data
				for _, k := range kept.kept.entries {
					ds = append(ds, k.d)
					assert.Zero(t, k.refs)
				}
				if first == nil {
					first = ds
				} else {
					assert.ElementsMatch(t, first, ds, "call %d reuses the chunks of the first", i)
				}
			}
			// Other rows: their chunks are packed and those of the first call that this one does
			// not use freed (none here); the same trials in new slices are other rows.
			copyB := append([][][]float64(nil), c.b...)
			other := [][][][]float64{c.b, c.b, copyB, subjA}
			ll, grad := call(kept, other, 0.02, true)
			wantLL, wantGrad := call(plain, other, 0.02, false)
			assert.Equal(t, wantLL, ll)
			assert.Equal(t, wantGrad, grad)
			assert.Equal(t, 3, keptChunks(kept))
			_, reused, packed := kept.Kept()
			assert.Equal(t, []int{3*5 - 2 + 3, 2 + 1}, []int{reused, packed}, "every chunk reused but the first of a, of b and of copyB")
			shared := 0
			for _, k := range kept.kept.entries {
				for _, d := range first {
					if k.d == d {
						shared++
					}
				}
			}
			assert.Equal(t, 2, shared, "the chunks of a and b are the first call's")
			call(kept, [][][][]float64{copyB}, 0, true)
			assert.Equal(t, 1, keptChunks(kept), "a call frees the chunks it does not use")
			// A chunk that cannot be prepared is an error each time, and never kept.
			bad := [][][]float64{subjA[0][:1]}
			for range 2 {
				_, _, err := kept.EvalRows([][][][]float64{bad, bad}, [][]float64{theta, theta}, Batching{MaxBatch: 3, Keep: true})
				assert.ErrorContains(t, err, "at least 2 states")
			}
			assert.Equal(t, 0, keptChunks(kept))
		})
	}
}

func keptChunks(e *Evaluator) int {
	n, _, _ := e.Kept()
	return n
}
