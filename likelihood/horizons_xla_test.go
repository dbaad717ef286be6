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

// TestSimulateHorizonsXLA: on XLA's CPU plugin an agent whose trials have lengths of their own
// is solved for all of them at once, padded to control.PadHorizon of the longest (one solve,
// as on the Go backend, whose padded solve gives each length's policy to the bit:
// control.TestSolveHorizons), and its trials equal the Go backend's, for the
// likelihood's agent, one without policy noise, one stopped after two iterations, and the
// likelihood's again with trials of their own starts (the agents on the plugin itself,
// $NIOC_AGENT_BACKEND=same: by default they run on the Go backend, graph.AgentBackend), and by
// default the evaluator's agents are the Go backend's. Skipped without a plugin.
func TestSimulateHorizonsXLA(t *testing.T) {
	bx, bg := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	byDefault, err := New(m, bx, Options{})
	require.NoError(t, err)
	assert.Same(t, bg, byDefault.agent, "the CPU plugin's agents by default")
	t.Setenv(graph.EnvAgentBackend, "same")
	lengths := []int{6, 9, 7, 9, 12}
	var es [2]*Evaluator
	for i, b := range []backends.Backend{bg, bx} {
		es[i], err = New(m, b, Options{FitTemperature: true})
		require.NoError(t, err)
	}
	natural, _ := testTheta(m.Spec())
	th := append(append([]float64(nil), natural...), 3*m.Spec().Temperature)
	th2 := append([]float64(nil), th...)
	th2[0] *= 2
	starts := make([][]float64, len(lengths)) // each trial its own start, planned from their mean
	for j := range starts {
		starts[j] = append([]float64(nil), m.Spec().X0...)
		starts[j][0] += 0.05 * float64(j)
	}
	for c, v := range []AgentVariant{{}, {NoPolicyNoise: true}, {PlannerIterations: 2}, {}} {
		var from [][]float64
		if c == 3 {
			from = starts
		}
		var out [2][][][][]float64
		for i, e := range es {
			out[i], err = e.SimulateVariantTrials([][]float64{th, th2}, lengths, from, 4, v)
			require.NoError(t, err)
		}
		for p := range out[0] {
			for j, tr := range out[0][p] {
				require.Len(t, out[1][p][j], lengths[j]+1, "%s: θ %d trial %d", v, p, j)
				for s, x := range tr {
					for i := range x {
						assert.InDelta(t, x[i], out[1][p][j][s][i], 1e-9*math.Max(1, math.Abs(x[i])), "%s: θ %d trial %d step %d", v, p, j, s)
					}
				}
			}
		}
	}
	for i := range es { // on either backend one padded solve for every length
		assert.Equal(t, 3, es[i].plans.solves, "backend %d: ours and ours without noise share a plan", i)
		require.Len(t, es[i].plans.entries, 3)
		for _, en := range es[i].plans.entries {
			require.Len(t, en.pols, 4, "backend %d: horizons 6, 7, 9, 12", i)
			for h, pol := range en.pols {
				assert.Equal(t, control.PadHorizon(12), pol.Steps, "backend %d, horizon %d", i, h)
			}
		}
	}
}
