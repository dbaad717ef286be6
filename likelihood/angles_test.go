package likelihood

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// TestInnovationAcrossBranchCut: navigation observes its heading relative to the target's
// bearing, atan2 of the target's offset, which jumps by 2π behind the target (x > 1, y = 1).
// One step of the partially observable likelihood (TrackedStep) with the observed state just
// past that cut and the mean of the agent's belief moved across it: with the bearings'
// difference taken modulo 2π (the default) the next belief mean and the step's
// log-likelihood are continuous in the belief; taken raw (Options.RawAngles) the belief is
// kicked by K·2π. Where the two lie on the same side, both are the same.
func TestInnovationAcrossBranchCut(t *testing.T) {
	m, err := models.Get("navigation")
	require.NoError(t, err)
	s, err := models.Derive(m)
	require.NoError(t, err)
	require.Equal(t, []models.Atan2Term{{Obs: 0, Coef: -1, Angle: s.Atan2[0].Angle}}, s.Atan2, "heading − atan2(dy, dx)")
	theta := consts(1e-3, 1e-3, 0.5, 0.1) // action cost, velocity cost, motor noise, obs noise

	x := consts(1.5, 1.001, math.Pi, 0.5) // behind the target, just above the cut
	xnext := consts(1.45, 1.001, math.Pi+0.01, 0.49)
	step := func(beliefY float64, raw bool) (ll float64, mean []float64) {
		mu := consts(1.5, beliefY, math.Pi, 0.5)
		agent := &Agent{
			Xbar: mu, Ubar: consts(0.1, 0.1), L: graph.NewMat(2, 4), l: consts(0, 0), H: graph.Eye(2),
			Temperature: graph.C(1e-6), RawAngles: raw,
		}
		b := Belief{Mean: mu, Cov: graph.MatScale(graph.C(1e-4), graph.Eye(4))}
		P := graph.MatScale(graph.C(1e-2), graph.Eye(4))
		l, next, _ := TrackedStep(s, theta, x, xnext, agent, b, P, 1e-8)
		for _, v := range next.Mean {
			mean = append(mean, v.Const())
		}
		return l.Const(), mean
	}
	const eps = 1e-9
	for _, c := range []struct {
		name string
		raw  bool
	}{{"modulo 2π", false}, {"raw", true}} {
		t.Run(c.name, func(t *testing.T) {
			llSame, same := step(1+eps, c.raw) // x and the belief on the same side
			llAcross, across := step(1-eps, c.raw)
			if c.raw {
				assert.Greater(t, dist(same, across), 0.1, "raw: the belief is kicked across the cut")
				return
			}
			assert.Less(t, dist(same, across), 1e-6, "the next belief mean is continuous across the cut")
			assert.InDelta(t, llSame, llAcross, 1e-4, "the log-likelihood is continuous across the cut")
		})
	}
	llWrap, meanWrap := step(1+eps, false)
	llRaw, meanRaw := step(1+eps, true)
	assert.Equal(t, llRaw, llWrap, "on the same side of the cut nothing is wrapped")
	assert.Equal(t, meanRaw, meanWrap)
}

func consts(v ...float64) graph.Vec {
	out := make(graph.Vec, len(v))
	for i, x := range v {
		out[i] = graph.C(x)
	}
	return out
}

func dist(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// TestNavigationLikelihoodContinuous scans the log-likelihood of a partially observed
// navigation trial of the reference's agent that passes behind the target (testdata/README.md)
// along the velocity cost, at the other parameters where a fit put them: taken raw
// (Options.RawAngles) it jumps by up to 15 where the tracked belief crosses the bearing's
// branch cut; with the angle modulo 2π (the default) its second differences stay at what the
// curvature gives.
func TestNavigationLikelihoodContinuous(t *testing.T) {
	m, err := models.Get("navigation")
	require.NoError(t, err)
	spec := m.Spec()
	set, err := data.Read(filepath.Join("testdata", "navigation_cut.csv"), spec.States)
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)

	const n = 41 // velocity cost 10^-3.6 .. 10^-3.2
	thetas := make([][]float64, n)
	rows := make([][][][]float64, n)
	for i := range thetas {
		thetas[i] = []float64{-4, -3.6 + 0.01*float64(i), -0.41453, -0.31314, -5.99918}
		rows[i] = [][][]float64{set.Subjects[0].Trials[0].States}
	}
	maxSecondDifference := func(o Options) float64 {
		o.ValueOnly, o.FitTemperature = true, true
		e, err := New(m, b, o)
		require.NoError(t, err)
		d, err := e.Prepare(rows, 0)
		require.NoError(t, err)
		ll, _, err := e.Eval(d, thetas)
		require.NoError(t, err)
		var worst float64
		for i := 1; i+1 < n; i++ {
			worst = math.Max(worst, math.Abs(ll[i+1]-2*ll[i]+ll[i-1]))
		}
		return worst
	}
	raw, wrapped := maxSecondDifference(Options{RawAngles: true}), maxSecondDifference(Options{})
	t.Logf("largest second difference (0.01 decades apart): raw %.3g, modulo 2π %.3g", raw, wrapped)
	assert.Greater(t, raw, 5.0, "raw: the likelihood jumps")
	assert.Less(t, wrapped, 0.05, "modulo 2π: the likelihood is smooth")
}
