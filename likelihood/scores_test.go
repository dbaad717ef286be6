package likelihood

import (
	"fmt"
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrialScoresSumToTheSubjects: the per-trial log-likelihoods and scores of TrialScores
// sum to the log-likelihood and gradient of the trials evaluated together, to 1e-12, for each
// linearization (with LinearizeMean and LinearizeILQG every trial keeps the whole set's
// nominal), both observabilities, a fitted temperature, trials of their own length and both
// forms of the recursions (unrolled; looped, as XLA runs them); and
// with LinearizeMean a trial's score differs from that of the trial alone (its own mean),
// so the test sees whether the set's nominal is kept.
func TestTrialScoresSumToTheSubjects(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	same := simulateTrials(t, m, control.ObservePartial, natural, 6, 30, 3)
	varying := simulateLengths(t, m, natural, []int{30, 22, 30, 25, 22}, 5)
	for _, c := range []struct {
		opts   Options
		trials [][][]float64
	}{
		{Options{}, same},
		{Options{FitTemperature: true}, same},
		{Options{Observe: control.ObserveFull}, same},
		{Options{Linearize: LinearizeMean}, same},
		{Options{Linearize: LinearizeMean}, varying},
		{Options{Linearize: LinearizeMean, Observe: control.ObserveFull}, same},
		{Options{Linearize: LinearizeILQG}, same},
		{Options{Linearize: LinearizeMean, Form: FormLooped}, same}, // the form XLA runs
		{Options{Linearize: LinearizeMean, Form: FormLooped}, varying},
		{Options{Linearize: LinearizeILQG, Form: FormLooped}, same},
		{Options{Method: MCEBaseline}, same},
	} {
		name := fmt.Sprintf("%s/%s/%s/%s/fit-temperature=%v/trials=%d", c.opts.Method, c.opts.Observe, c.opts.Linearize, c.opts.Form, c.opts.FitTemperature, len(c.trials))
		t.Run(name, func(t *testing.T) {
			e, err := New(m, b, c.opts)
			require.NoError(t, err)
			theta := withTemperature(m.Spec(), c.opts)
			ll, grad, err := e.TrialScores(c.trials, theta)
			require.NoError(t, err)
			require.Len(t, ll, len(c.trials))
			total, totalGrad, err := e.EvalRows([][][][]float64{c.trials}, [][]float64{theta}, Batching{})
			require.NoError(t, err)
			assertSums(t, ll, total[0], "log-likelihood")
			for i := range theta {
				terms := make([]float64, len(grad))
				for r := range grad {
					terms[r] = grad[r][i]
				}
				assertSums(t, terms, totalGrad[0][i], "gradient %d", i)
			}
			if c.opts.Linearize == LinearizeMean {
				alone, _, err := e.EvalRows([][][][]float64{{c.trials[0]}}, [][]float64{theta}, Batching{})
				require.NoError(t, err)
				assert.Greater(t, math.Abs(alone[0]-ll[0]), 1e-6, "trial 0 alone has its own nominal")
			}
		})
	}
}
