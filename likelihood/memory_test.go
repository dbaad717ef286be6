package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanMemory: a budget that holds the unrolled graph leaves the options as they are; one
// that does not chooses the looped form with as many trajectories per run as the rest of the
// budget holds (fewer for longer trials), and the fit's evaluations then give the same
// log-likelihood; a budget that holds no trajectory is an error that says what it needs.
func TestPlanMemory(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	opts := Options{}
	same, plan, err := PlanMemory(m, b, opts, 100, 64<<30)
	require.NoError(t, err)
	assert.Equal(t, opts, same)
	assert.Greater(t, plan.MaxTrajectories, 100000, "a large budget bounds the runs little")
	assert.Positive(t, plan.NodesPerStep)
	assert.Greater(t, plan.Unrolled, int64(processBytes))

	tight, _, err := PlanMemory(m, b, opts, 100, plan.Unrolled+int64(plan.NodesPerStep)*100*2*4)
	require.NoError(t, err)
	assert.Equal(t, opts, tight)
	budget := plan.Unrolled - 1 // the graph of 100 steps no longer fits
	looped, plan, err := PlanMemory(m, b, opts, 100, budget)
	require.NoError(t, err)
	assert.Equal(t, FormLooped, looped.Form)
	assert.Positive(t, plan.MaxTrajectories)
	_, longer, err := PlanMemory(m, b, opts, 200, budget)
	require.NoError(t, err)
	assert.Less(t, longer.MaxTrajectories, plan.MaxTrajectories, "longer trials, fewer at a time")

	spec := m.Spec()
	trials := simulateTrials(t, m, "partial", spec.Defaults(), 5, 100, 3)
	_, theta := testTheta(spec)
	var ll [2]float64
	for i, o := range []Options{opts, looped} {
		e, err := New(m, b, o)
		require.NoError(t, err)
		l, _, err := e.EvalRows([][][][]float64{trials}, [][]float64{theta}, Batching{MaxBatch: 2})
		require.NoError(t, err)
		ll[i] = l[0]
	}
	assert.InEpsilon(t, ll[0], ll[1], 1e-10)

	_, _, err = PlanMemory(m, b, opts, 100, processBytes+1)
	assert.ErrorContains(t, err, "holds no trajectory")
	_, _, err = PlanMemory(m, b, Options{Linearize: LinearizeILQG}, 100, 64<<30)
	require.NoError(t, err, "iLQG's linearization is planned too")
	kept, _, err := PlanMemory(m, b, Options{Form: FormUnrolled}, 100, processBytes+1)
	require.NoError(t, err, "an explicit form is kept")
	assert.Equal(t, FormUnrolled, kept.Form)
}
