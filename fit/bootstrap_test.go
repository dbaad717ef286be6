package fit

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBootstrapWhereTheLikelihoodIsExact: on the linear task, whose likelihood is exact and
// whose estimator is nearly unbiased, the bootstrap's spread agrees with the robust standard
// errors (within a factor 1.6 for 20 refits), its bias is within what 20 refits can resolve,
// and the record's standard errors and intervals are the bootstrap's: max(SD, robust SE) around
// the bias-corrected estimate.
func TestBootstrapWhereTheLikelihoodIsExact(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	truth, _ := spec.ScalableDefaults()
	trials := simulateAt(t, "linear", truth, 0, control.SimOptions{Observe: control.ObservePartial, Trials: 100, Seed: 4, Temperature: spec.Temperature})
	robust := fitAll(t, newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1}),
		[]Subject{{ID: "s", Trials: trials}})["s"]
	f := newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1, Uncertainty: UncertaintyBootstrap})
	res := fitAll(t, f, []Subject{{ID: "s", Trials: trials}})["s"]
	require.Empty(t, res.Err)
	require.Empty(t, res.BootstrapErr)
	require.NotNil(t, res.Bootstrap)
	assert.Equal(t, UncertaintyBootstrap, res.Uncertainty)
	assert.Equal(t, DefaultBootstrapDraws, res.Bootstrap.Draws)
	assert.GreaterOrEqual(t, res.Bootstrap.Refits, DefaultBootstrapDraws-1)
	for _, name := range res.Fitted {
		sd, bias, se := res.Bootstrap.SD[name], res.Bootstrap.Bias[name], robust.StdErr[name]
		t.Logf("%s: robust SE %.4f, bootstrap SD %.4f, bias %+.4f", name, se, sd, bias)
		assert.InDelta(t, 0, math.Log(sd/se), math.Log(1.6), "%s: bootstrap SD against the robust SE", name)
		assert.Less(t, math.Abs(bias), 4*sd/math.Sqrt(float64(res.Bootstrap.Refits)), "%s: bias", name)
		want := math.Max(sd, se)
		assert.InDelta(t, want, res.StdErr[name], 1e-12, name)
		centre := res.Scaled[name] - bias
		ci := res.CI95[name]
		assert.InDeltaSlice(t, []float64{centre - 1.959963984540054*want, centre + 1.959963984540054*want}, ci[:], 1e-12, name)
	}
}
