package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the Go backend the unrolled likelihood runs as a tape (graph.Program), and its values
// and gradients equal simplego's executor's bit for bit, for every task, observability,
// method and linearization the tape sees in a fit.
func TestTapeEqualsSimplego(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	configs := []Options{
		{FitTemperature: true},
		{NominalFilter: true, IgnoreGaps: true, FirstOrderNoise: true},
		{Observe: control.ObserveFull},
		{Method: MCEBaseline},
		{Linearize: LinearizeMean},
	}
	for _, task := range []string{"pendulum", "navigation", "reaching", "cartpole", "lightdark"} {
		m, err := models.Get(task)
		require.NoError(t, err)
		natural, _ := testTheta(m.Spec())
		const steps, trials = 8, 3
		data := simulateTrials(t, m, control.ObservePartial, natural, trials, steps, 7)
		for _, opts := range configs {
			theta := withTemperature(m.Spec(), opts)
			eval := func(tapes bool) ([]float64, [][]float64, graph.ProgramStats) {
				if !tapes {
					t.Setenv(graph.EnvTape, "off")
				} else {
					t.Setenv(graph.EnvTape, "")
				}
				e, err := New(m, b, opts)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{data, data}, trials)
				require.NoError(t, err)
				ll, g, err := e.Eval(d, [][]float64{theta, theta})
				require.NoError(t, err)
				return ll, g, e.Stats()
			}
			llT, gT, st := eval(true)
			llS, gS, stS := eval(false)
			assert.Equal(t, 1, st.Tapes, "%s %+v: the likelihood runs as a tape", task, opts)
			assert.Equal(t, 0, stS.Tapes, "NIOC_TAPE=off")
			assert.Equal(t, llS, llT, "%s %+v: log-likelihoods", task, opts)
			assert.Equal(t, gS, gT, "%s %+v: gradients", task, opts)
		}
	}
}
