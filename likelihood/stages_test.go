package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GraphSizes counts the graph that Eval runs: its total equals the node count of the
// evaluator's own graph for the same shapes, and the stages are the pipeline's, in order.
func TestGraphSizesCountTheEvaluatedGraph(t *testing.T) {
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, opts := range []Options{{FitTemperature: true}, {NominalFilter: true, IgnoreGaps: true, FirstOrderNoise: true}} {
		e, err := New(m, b, opts)
		require.NoError(t, err)
		natural, _ := testTheta(m.Spec())
		const steps, trials = 12, 3
		data := simulateTrials(t, m, control.ObservePartial, natural, trials, steps, 1)
		d, err := e.Prepare([][][][]float64{data}, trials)
		require.NoError(t, err)
		_, _, err = e.Eval(d, [][]float64{withTemperature(m.Spec(), opts)})
		require.NoError(t, err)

		sizes, total, err := e.GraphSizes(steps, 1, trials)
		require.NoError(t, err)
		assert.Equal(t, e.Stats().Nodes, total, "GraphSizes builds the graph Eval runs")
		var names []string
		forward := 0
		for _, s := range sizes {
			names = append(names, s.Name)
			forward += s.Nodes
		}
		assert.Subset(t, names, []string{"controls", "linearize", "backward", "tracking"})
		assert.Less(t, forward, total, "the gradient adds nodes")
		if opts.NominalFilter {
			assert.Contains(t, names, "kalman")
		} else {
			assert.NotContains(t, names, "kalman", "the tracked filter runs inside the tracking step")
		}
	}
}
