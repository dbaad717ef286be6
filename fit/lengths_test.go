package fit

import (
	"math"
	"slices"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecoveryVaryingLengths (issue 12's acceptance): pendulum trials of 30–50 steps, each
// planned over its own length, give parameter estimates (inside the search box) as good as
// trials of one length with about as many steps in all (40 each), and the fit's BIC counts
// every trial's own steps.
func TestRecoveryVaryingLengths(t *testing.T) {
	if testing.Short() {
		t.Skip("parameter recovery takes about half a minute")
	}
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	truth := map[string]float64{"action_cost": 0.01, "velocity_cost": 0.01, "motor_noise": 0.5, "obs_noise": 1}
	theta := make([]float64, len(spec.Params))
	for i, p := range spec.Params {
		theta[i] = truth[p.Name]
	}
	const trials, seed = 40, 21
	errs := map[string]float64{}
	for _, c := range []struct {
		name    string
		lengths []int
	}{
		{"equal", slices.Repeat([]int{40}, trials)},
		{"varying", control.DrawLengths(30, 50, trials, seed)},
	} {
		xs, _, err := control.SimulateLengths(m, theta, [][]int{c.lengths}, []uint64{seed}, b,
			control.SolverOptions{Planner: spec.Planner}, control.SimOptions{Temperature: spec.Temperature})
		require.NoError(t, err)
		steps := 0
		for r, tr := range xs[0] {
			require.Len(t, tr, c.lengths[r]+1)
			steps += c.lengths[r]
		}
		f := newFitter(t, "pendulum", likelihood.Options{}, Options{Restarts: 8, Seed: 1})
		res := fitAll(t, f, []Subject{{ID: "s", Trials: xs[0]}})["s"]
		require.Empty(t, res.Err)
		var rel []float64
		for _, name := range res.Fitted {
			rel = append(rel, math.Abs(res.Params[name]-truth[name])/truth[name])
			t.Logf("%s: %s true %g, estimate %g", c.name, name, truth[name], res.Params[name])
		}
		errs[c.name] = Median(rel)
		t.Logf("%s: %d steps in all, median |relative error| %.3f", c.name, steps, errs[c.name])
		assert.InDelta(t, res.AIC+float64(len(res.Fitted))*(math.Log(float64(steps))-2), res.BIC, 1e-6*max(1, res.BIC), "BIC counts every trial's own steps")
	}
	assert.Less(t, errs["varying"], 0.2)
	assert.Less(t, errs["varying"], errs["equal"]+0.1, "as good as equal lengths")
}
