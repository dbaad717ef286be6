package fit

import (
	"math"
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
	// The scan began at the robust interval's inner end: one fit where the profile there is
	// already below the target (End is then that end), else a scan on to the box's end.
	start := math.Min(math.Max(res.Scaled["obs_noise"]+1.959963984540054*res.StdErr["obs_noise"], lo), hi)
	if pr.End < hi {
		assert.Less(t, profile(pr.End), target+1e-6, "at the end: below")
	}
	if pr.Fits == 1 {
		assert.Equal(t, start, pr.End, "one fit: the interval already reached beyond the profile's run")
	} else {
		inside := pr.End - (hi-start)/(profileGrid<<profileBisect)
		assert.GreaterOrEqual(t, profile(inside), target-1e-6, "just inside the end: within the drop")
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
	if pb.End < hi {
		assert.Less(t, profile(pb.End), bs.LogLik-pb.Drop+1e-6, "bootstrap: at the end, below")
	}
	t.Logf("bootstrap: drop %.2f, end %.3f after %d fits", pb.Drop, pb.End, pb.Fits)
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
		{"ten times: ten times the drop", fits(1, 5, 10*half, 20, 1e4), 10 * BoundLRDrop},
		{"even count: the middle two's mean", fits(1, 2*half, 4*half, 1e4), 3 * BoundLRDrop},
	} {
		assert.InDelta(t, c.want, boundDrop(c.bs, 4), 1e-5*c.want, c.name)
	}
}

// TestProfileEnd: on -ℓ = (x₀ + 1)²/2 + (x₁ − x₀)²/2 in [0, 3] × [−5, 5], x₀ on its lower
// bound, the profile is −(v + 1)²/2, which falls 1.3528 below its maximum at
// v = √(1 + 2·1.3528) − 1 = 0.925; the scan's end lies in the last 1/128 of the stretch
// scanned beyond it, from the bound or from an interval's inner end inside the run, and an
// inner end beyond the run is returned after one fit.
func TestProfileEnd(t *testing.T) {
	f := &Fitter{lo: []float64{0, -5}, hi: []float64{3, 5}}
	objective := func(x []float64) (float64, []float64, error) {
		d := x[1] - x[0]
		return (x[0]+1)*(x[0]+1)/2 + d*d/2, []float64{x[0] + 1 - d, d}, nil
	}
	want := math.Sqrt(1+2*BoundLRDrop) - 1
	for _, c := range []struct {
		name     string
		start    float64
		fits     int // 0: more than one
		exactEnd float64
	}{
		{"from the bound", 0, 0, 0},
		{"from an inner end inside the run", 0.4, 0, 0},
		{"from an inner end beyond the run", 1.5, 1, 1.5},
		{"the run reaches the box's end", 0, 0, 0},
	} {
		target := -0.5 - BoundLRDrop
		far := 3.0
		if c.name == "the run reaches the box's end" {
			target = -0.5 - 100 // -(3+1)²/2 = -8 is within
		}
		var fits, evals int
		end, err := f.profileEnd(objective, 1, []float64{0, 0}, nil, 0, 0, c.start, far, target, &fits, &evals)
		require.NoError(t, err, c.name)
		switch {
		case c.name == "the run reaches the box's end":
			assert.Equal(t, far, end, c.name)
		case c.fits == 1:
			assert.Equal(t, 1, fits, c.name)
			assert.Equal(t, c.exactEnd, end, c.name)
		default:
			assert.Greater(t, fits, 1, c.name)
			assert.Greater(t, end, want, c.name)
			assert.LessOrEqual(t, end, want+(far-c.start)/(profileGrid<<profileBisect)+1e-12, c.name)
		}
		assert.Positive(t, evals, c.name)
	}
}
