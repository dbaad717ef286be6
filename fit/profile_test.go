package fit

import (
	"slices"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfileAtABound: data of the linear task made with an observation noise below its
// box's lower end put the estimate on that bound; its interval becomes one-sided, from the
// bound to the profile's end, and fits with the parameter fixed (an independent computation
// of the profile, from 3 restarts) find the log-likelihood within Drop of the maximum just
// inside the end and below it at the end.
func TestProfileAtABound(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	truth, _ := spec.ScalableDefaults()
	io := slices.IndexFunc(spec.Params, func(p models.Param) bool { return p.Name == "obs_noise" })
	truth[io] = 0.3 * spec.Params[io].Lo
	trials := simulateAt(t, "linear", truth, 0, control.SimOptions{Observe: control.ObservePartial, Trials: 40, Seed: 4, Temperature: spec.Temperature})
	res := fitAll(t, newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1}), []Subject{{ID: "s", Trials: trials}})["s"]
	require.Empty(t, res.Err)
	require.Contains(t, res.AtBound, "obs_noise")
	pr, ok := res.Profiles["obs_noise"]
	require.True(t, ok, "a profile for the parameter on its bound")
	prm := spec.Params[io]
	lo, hi := prm.ToScale(prm.Lo), prm.ToScale(prm.Hi)
	assert.Equal(t, lo, pr.Bound)
	assert.Equal(t, BoundLRDrop, pr.Drop, "no bootstrap: the boundary's likelihood-ratio drop")
	assert.Greater(t, pr.End, lo)
	assert.LessOrEqual(t, pr.End, hi)
	assert.Positive(t, pr.Fits)
	ci := res.CI95["obs_noise"]
	assert.Equal(t, lo, ci[0], "the interval starts at the bound")
	assert.GreaterOrEqual(t, ci[1], pr.End)
	assert.InDelta(t, prm.FromScale(ci[1]), res.CI95Natural["obs_noise"][1], 1e-12)
	for _, name := range res.Fitted {
		if name != "obs_noise" {
			assert.NotContains(t, res.Profiles, name)
		}
	}
	t.Logf("estimate on the bound %.3f; profile end %.3f after %d fits; interval [%.3f, %.3f]", lo, pr.End, pr.Fits, ci[0], ci[1])

	// The profile, independently: fits with obs_noise fixed.
	profile := func(scaled float64) float64 {
		r := fitAll(t, newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 2,
			Fix: map[string]float64{"obs_noise": prm.FromScale(scaled)}}), []Subject{{ID: "s", Trials: trials}})["s"]
		require.Empty(t, r.Err)
		return r.LogLik
	}
	target := res.LogLik - pr.Drop
	if pr.End < hi {
		inside := pr.End - (hi-lo)/(profileGrid<<profileBisect)
		assert.GreaterOrEqual(t, profile(inside), target-1e-6, "just inside the end: within the drop")
		assert.Less(t, profile(pr.End), target+1e-6, "at the end: below")
	} else {
		assert.GreaterOrEqual(t, profile(hi), target-1e-6, "the whole box within the drop")
	}

	// With the bootstrap (the default), the drop is scaled by its refits' gains.
	bs := fitAll(t, newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1, Uncertainty: UncertaintyBootstrap,
		BootstrapAgents: []likelihood.AgentVariant{{}}}), []Subject{{ID: "s", Trials: trials}})["s"]
	require.Empty(t, bs.Err)
	require.NotNil(t, bs.Bootstrap)
	pb, ok := bs.Profiles["obs_noise"]
	require.True(t, ok)
	assert.Equal(t, boundDrop(bs.Bootstrap, len(bs.Fitted)), pb.Drop)
	assert.GreaterOrEqual(t, pb.Drop, BoundLRDrop)
	assert.Equal(t, lo, bs.CI95["obs_noise"][0])
	assert.GreaterOrEqual(t, bs.CI95["obs_noise"][1], pb.End)
	assert.GreaterOrEqual(t, pb.End, pr.End, "a larger drop reaches at least as far")
}

// TestBoundDrop: BoundLRDrop where no bootstrap ran, else scaled by the refits' median
// likelihood-ratio gain against half a χ²_d's median (for d = 4: 3.357/2), never below it.
func TestBoundDrop(t *testing.T) {
	fits := func(gains ...float64) *Bootstrap {
		bs := &Bootstrap{}
		for _, g := range gains {
			bs.Fits = append(bs.Fits, Refit{LogLik: 100 + g, LogLikAtEstimate: 100})
		}
		return bs
	}
	half := 3.356694 / 2 // χ²₄'s median over 2
	for _, c := range []struct {
		name string
		bs   *Bootstrap
		want float64
	}{
		{"no bootstrap", nil, BoundLRDrop},
		{"no refits", &Bootstrap{}, BoundLRDrop},
		{"gains as a correct model's: no scaling", fits(0.5, 1, half, 3, 4), BoundLRDrop},
		{"gains below a correct model's: never narrower", fits(0.1, 0.2, 0.3), BoundLRDrop},
		{"ten times: ten times the drop", fits(1, 5, 10 * half, 20, 1e4), 10 * BoundLRDrop},
		{"even count: the middle two's mean", fits(1, 2*half, 4*half, 1e4), 3 * BoundLRDrop},
	} {
		assert.InDelta(t, c.want, boundDrop(c.bs, 4), 1e-5*c.want, c.name)
	}
}
