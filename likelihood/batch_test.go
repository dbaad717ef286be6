package likelihood

import (
	"slices"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvalRows: rows of different numbers of trials at different θ, evaluated in chunks
// (MaxBatch forcing several graph runs), with rows split into parts of fewer trials (MaxBatch
// below a row's trials) or all in one, give each row's own log-likelihood and gradient, the
// same as evaluating it alone.
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
	for _, batching := range []Batching{{}, {Trials: 5, MaxBatch: 10}, {Trials: 5, MaxBatch: 1, Most: 3}, {Trials: 5, MaxBatch: 2}, {MaxBatch: 3}} {
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

// TestNominalStartsAtCommonInitialState: LinearizeILQG's nominal starts at the trials' mean
// initial state, which must be exactly their common one: from π + 3e-14 (a plain mean of 500
// copies of π) the pendulum's iLQG swings up the other way than from π, the way the agent did.
func TestNominalStartsAtCommonInitialState(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	trial := make([][]float64, spec.Steps+1)
	for i := range trial {
		trial[i] = slices.Clone(spec.X0)
	}
	trials := make([][][]float64, 500)
	for i := range trials {
		trials[i] = trial
	}
	e, err := New(m, b, Options{Observe: control.ObserveFull, Linearize: LinearizeILQG, Temperature: spec.Temperature})
	require.NoError(t, err)
	d, err := e.Prepare([][][][]float64{trials}, 0)
	require.NoError(t, err)
	natural := []float64{0.00356, 0.04353, 0.9851, 0.8356}
	theta := make([]float64, len(natural))
	for i, v := range natural {
		theta[i] = spec.Params[i].ToScale(v)
	}
	pol, err := e.Nominal(d, [][]float64{theta})
	require.NoError(t, err)
	require.Equal(t, spec.X0[0], pol.Xbar[0], "the nominal starts at the common initial state")
	sv, err := control.NewSolver(m, spec.Steps, b, control.SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	want, err := sv.Solve([][]float64{natural}, nil)
	require.NoError(t, err)
	T := spec.Steps
	assert.InDelta(t, want.Xbar[T*2], pol.Xbar[T*2], 1e-9, "same swing-up as the agent from the task's x0")
}
