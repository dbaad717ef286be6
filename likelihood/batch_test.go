package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvalRows: rows of different numbers of trials at different θ, evaluated in chunks
// (MaxBatch forcing several graph runs) or all in one, give each row's own log-likelihood and
// gradient, the same as evaluating it alone.
func TestEvalRows(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	e, err := New(m, b, Options{})
	require.NoError(t, err)
	spec := m.Spec()
	var rows [][][][]float64
	var thetas [][]float64
	for i, n := range []int{3, 5, 4, 2, 5} {
		rows = append(rows, simulateTrials(t, m, control.ObservePartial, spec.Defaults(), n, 6, uint64(i+1)))
		_, th := testTheta(spec)
		th[0] += 0.1 * float64(i)
		thetas = append(thetas, th)
	}
	alone := make([]float64, len(rows))
	aloneGrad := make([][]float64, len(rows))
	for i := range rows {
		d, err := e.Prepare(rows[i:i+1], 5)
		require.NoError(t, err)
		ll, g, err := e.Eval(d, thetas[i:i+1])
		require.NoError(t, err)
		alone[i], aloneGrad[i] = ll[0], g[0]
	}
	for _, batching := range []Batching{{}, {Trials: 5, MaxBatch: 10}, {Trials: 5, MaxBatch: 1, Most: 3}} {
		ll, grad, err := e.EvalRows(rows, thetas, batching)
		require.NoError(t, err, "%+v", batching)
		require.Len(t, ll, len(rows))
		for i := range rows {
			assert.InDelta(t, alone[i], ll[i], 1e-9, "row %d, %+v", i, batching)
			assert.InDeltaSlice(t, aloneGrad[i], grad[i], 1e-9, "row %d, %+v", i, batching)
		}
	}
	_, _, err = e.EvalRows(rows, thetas[:2], Batching{})
	assert.ErrorContains(t, err, "5 rows for 2 parameter vectors")
	ll, grad, err := e.EvalRows(nil, nil, Batching{})
	assert.NoError(t, err)
	assert.Empty(t, ll)
	assert.Empty(t, grad)
}
