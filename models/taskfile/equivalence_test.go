package taskfile

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulate solves m's problem at theta (natural units) by iLQG and simulates trials of it.
func simulate(t *testing.T, m models.Model, theta []float64, trials int, seed uint64) [][][]float64 {
	t.Helper()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	spec := m.Spec()
	sv, err := control.NewSolver(m, spec.Steps, b, control.SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	xs, err := control.Simulate(m, pol, [][]float64{theta}, b, control.SimOptions{Observe: control.ObservePartial, Trials: trials, Seed: seed})
	require.NoError(t, err)
	return xs[0]
}

// testTheta returns the task's defaults (Spec.ScalableDefaults).
func testTheta(spec models.Spec) (natural, scaled []float64) { return spec.ScalableDefaults() }

// TestExamplesSimulateAndLoglikLikeBuiltins: each paper task written as a file simulates the
// same trajectories as the built-in task for the same seed, and gives the same log-likelihood
// and gradient on them, to 1e-12 relative, at the task's full horizon, with the fitted
// temperature (the CLI's default). (Four of the six simulate bit for bit; reaching and
// cartpole differ by a few ulps because the files' expressions add and multiply some terms in
// another order.)
func TestExamplesSimulateAndLoglikLikeBuiltins(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, name := range paperTasks {
		t.Run(name, func(t *testing.T) {
			file := loadExample(t, name)
			builtin, err := models.Get(name)
			require.NoError(t, err)
			natural, scaled := testTheta(builtin.Spec())
			// The jitter barely moves a partially observed likelihood at the defaults, so the
			// comparison below would not see a file that forgot it.
			assert.Equal(t, builtin.Spec().Jitter, file.Spec().Jitter, "jitter")
			assert.Equal(t, builtin.Spec().Linearize, file.Spec().Linearize, "linearize")
			want := simulate(t, builtin, natural, 2, 7)
			got := simulate(t, file, natural, 2, 7)
			require.Len(t, got, len(want))
			for i := range want {
				require.Len(t, got[i], len(want[i]))
				for s := range want[i] {
					for j := range want[i][s] {
						assert.InDelta(t, want[i][s][j], got[i][s][j], 1e-12*math.Max(1, math.Abs(want[i][s][j])), "trial %d t %d state %d", i, s, j)
					}
				}
			}

			opts := likelihood.Options{FitTemperature: true}
			theta := append(scaled, math.Log10(10*builtin.Spec().Temperature))
			var ll [2]float64
			var grad [2][]float64
			for i, m := range []models.Model{builtin, file} {
				e, err := likelihood.New(m, b, opts)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{want}, 0)
				require.NoError(t, err)
				l, g, err := e.Eval(d, [][]float64{theta})
				require.NoError(t, err)
				ll[i], grad[i] = l[0], g[0]
			}
			require.False(t, math.IsInf(ll[0], 0) || math.IsNaN(ll[0]), "log-likelihood %g", ll[0])
			assert.InEpsilon(t, ll[0], ll[1], 1e-12, "log-likelihood")
			require.Len(t, grad[1], len(grad[0]))
			for j := range grad[0] {
				assert.InEpsilon(t, grad[0][j], grad[1][j], 1e-12, "gradient %d", j)
			}
		})
	}
}
