package fit

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestBootstrapWhereTheLikelihoodIsExact: with the likelihood's own agent alone, on the
// linear task, whose likelihood is exact and
// whose estimator is nearly unbiased, the bootstrap's spread agrees with the robust standard
// errors (within a factor 1.6 for 20 refits), its bias is within what 20 refits can resolve,
// and the record's standard errors and intervals are the bootstrap's: max(SD, robust SE),
// with the bias's own error, around the bias-corrected estimate, times Student's t.
func TestBootstrapWhereTheLikelihoodIsExact(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	truth, _ := spec.ScalableDefaults()
	trials := simulateAt(t, "linear", truth, 0, control.SimOptions{Observe: control.ObservePartial, Trials: 100, Seed: 4, Temperature: spec.Temperature})
	robust := fitAll(t, newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1}),
		[]Subject{{ID: "s", Trials: trials}})["s"]
	f := newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1, Uncertainty: UncertaintyBootstrap,
		BootstrapAgents: []likelihood.AgentVariant{{}}})
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
		K := float64(res.Bootstrap.Refits)
		want := math.Sqrt(math.Pow(math.Max(sd, se), 2) + sd*sd/K)
		assert.InDelta(t, want, res.StdErr[name], 1e-12, name)
		assert.InDelta(t, se, res.Bootstrap.Robust[name], 1e-12*se, "%s: the robust SE the interval started from", name)
		centre := res.Scaled[name] - bias
		ci := res.CI95[name]
		// Student's t at SE²'s degrees of freedom: K − 1 where SD sets it, else Satterthwaite's
		// for the robust SE² (100 trials − 1) plus SD²/K (K − 1).
		dof := K - 1
		if se > sd {
			a, b := se*se, sd*sd/K
			dof = (a + b) * (a + b) / (a*a/99 + b*b/(K-1))
		}
		assert.InDelta(t, dof, res.Bootstrap.DOF[name], 1e-9*dof, name)
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile(0.975)
		assert.InDeltaSlice(t, []float64{centre - q*want, centre + q*want}, ci[:], 1e-12, name)
	}
	// One peak: every restart ended at the estimate, so no other optimum widens the intervals;
	// the refits' log-likelihoods rose above their data's at the estimate by a few nats at most
	// (about a χ² with 2 degrees of freedom over 2 where the model is right).
	assert.Zero(t, res.Bootstrap.OptimaWithin)
	assert.Greater(t, res.Bootstrap.LogLikGap95, 0.0)
	assert.Less(t, res.Bootstrap.LogLikGap95, 10.0)
}

// TestSatterthwaiteDOF: (a + b)² / (a²/na + b²/nb), the degrees of freedom of a sum of
// independent variance estimates.
func TestSatterthwaiteDOF(t *testing.T) {
	for _, c := range []struct{ a, na, b, nb, want float64 }{
		{1, 10, 0, 5, 10},                     // b absent: a's own
		{1, 10, 1, 10, 20},                    // two equal halves: twice the information
		{0, 7, 0, 19, 7},                      // both zero: na
		{1, 99, 1, 19, 4 / (1.0/99 + 1.0/19)}, // a robust SE² and an equal bias variance
		{1, 49, 0.05, 19, 1.05 * 1.05 / (1.0/49 + 0.0025/19)},
	} {
		assert.InDelta(t, c.want, satterthwaiteDOF(c.a, c.na, c.b, c.nb), 1e-12*c.want, "%+v", c)
	}
}

// TestBootstrapOverAgents: the bootstrap's draws are split evenly among the agents, each
// agent's refits' mean is recorded, the pooled bias is their mean weighted by the refits, and
// an agent that departs from the likelihood's by a sensorimotor delay moves the estimates by
// many of the likelihood-agent's standard errors, which the pooled spread takes in.
func TestBootstrapOverAgents(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	truth, _ := spec.ScalableDefaults()
	trials := simulateAt(t, "linear", truth, 0, control.SimOptions{Observe: control.ObservePartial, Trials: 100, Seed: 4, Temperature: spec.Temperature})
	fit := func(agents []likelihood.AgentVariant) Result {
		f := newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1, Uncertainty: UncertaintyBootstrap,
			Bootstrap: 21, BootstrapAgents: agents})
		res := fitAll(t, f, []Subject{{ID: "s", Trials: trials}})["s"]
		require.Empty(t, res.Err)
		require.Empty(t, res.BootstrapErr)
		require.NotNil(t, res.Bootstrap)
		return res
	}
	ours := fit([]likelihood.AgentVariant{{}})
	assert.Nil(t, ours.Bootstrap.AgentBias, "the likelihood's agent alone: no per-agent record")
	agents := []likelihood.AgentVariant{{}, {NoPolicyNoise: true}, {Delay: 1}}
	res := fit(agents)
	bs := res.Bootstrap
	assert.Equal(t, []string{"ours", "ours-nonoise", "delay1"}, bs.Agents)
	assert.Equal(t, 21, bs.Draws)
	assert.GreaterOrEqual(t, bs.Refits, 20)
	for _, name := range res.Fitted {
		var sum float64
		for _, a := range bs.Agents {
			sum += bs.AgentBias[a][name]
		}
		t.Logf("%s: ours-only SD %.4f bias %+.4f; pooled SD %.4f bias %+.4f; by agent %+.4f %+.4f %+.4f", name,
			ours.Bootstrap.SD[name], ours.Bootstrap.Bias[name], bs.SD[name], bs.Bias[name],
			bs.AgentBias["ours"][name], bs.AgentBias["ours-nonoise"][name], bs.AgentBias["delay1"][name])
		if bs.Refits == 21 { // 7 refits an agent: the pooled mean is the agents' means' mean
			assert.InDelta(t, sum/3, bs.Bias[name], 1e-12, name)
		}
		assert.GreaterOrEqual(t, res.StdErr[name], bs.SD[name])
	}
	// The record's refits are those the bias and spread were taken of; each began at the
	// estimate, so none ends below its data's log-likelihood there.
	require.Len(t, bs.Fits, bs.Refits)
	for _, a := range bs.Agents {
		for _, name := range res.Fitted {
			var sum, n float64
			for _, r := range bs.Fits {
				if r.Agent == a {
					sum, n = sum+r.Scaled[name], n+1
				}
			}
			require.Positive(t, n, a)
			assert.InDelta(t, bs.AgentBias[a][name], sum/n-res.Scaled[name], 1e-12, "%s %s", a, name)
		}
	}
	for j, r := range bs.Fits {
		assert.GreaterOrEqual(t, r.LogLik, r.LogLikAtEstimate-1e-9*math.Abs(r.LogLik), "refit %d", j)
	}
	// The delayed agent's data put the observation noise 2.5 of our agent's SDs higher, and
	// the pooled spread grows with it (0.039 against 0.022).
	shift := bs.AgentBias["delay1"]["obs_noise"] - bs.AgentBias["ours"]["obs_noise"]
	assert.Greater(t, shift, 1.5*ours.Bootstrap.SD["obs_noise"])
	assert.Greater(t, bs.SD["obs_noise"], 1.3*ours.Bootstrap.SD["obs_noise"])
}

// TestRefitsStartAtTheEstimate: every refit's first restart begins at the estimate. Refitted
// on the subject's own trials with one restart of one iteration, the refits stay at the
// subject's estimate (a random start would put them anywhere in the box).
func TestRefitsStartAtTheEstimate(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	truth, _ := spec.ScalableDefaults()
	trials := simulateAt(t, "linear", truth, 0, control.SimOptions{Observe: control.ObservePartial, Trials: 40, Seed: 4, Temperature: spec.Temperature})
	est := fitAll(t, newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 3, Seed: 1}), []Subject{{ID: "s", Trials: trials}})["s"]
	require.Empty(t, est.Err)
	f := newFitter(t, "linear", likelihood.Options{}, Options{Restarts: 1, Seed: 1, MaxIter: 1, BootstrapRestarts: 1})
	x := make([]float64, len(f.infer))
	for k, name := range f.Fitted() {
		x[k] = est.Scaled[name]
	}
	var subjects []Subject
	for j := range 6 {
		subjects = append(subjects, Subject{ID: strconv.Itoa(j), Trials: trials})
	}
	refits, data, logliks, _, err := refitAlone(f, subjects, x, nil)
	require.NoError(t, err)
	require.Len(t, refits, len(subjects))
	require.Len(t, data, len(subjects))
	require.Len(t, logliks, len(subjects))
	for j, r := range refits {
		for k := range x {
			assert.InDelta(t, x[k], r[k], 1e-3*(f.hi[k]-f.lo[k]), "parameter %s", f.Fitted()[k])
		}
		// The refit's data are the subject's own trials: its log-likelihood is the subject's.
		assert.InDelta(t, est.LogLik, logliks[j], 1e-6*math.Abs(est.LogLik), "refit of data set %d", data[j])
	}
}

// TestRefitsFromTheCurvature: refits whose L-BFGS-B memory starts from the subject's Hessian
// at the estimate reach the optima of refits that start from the identity (the same
// log-likelihoods to 0.01 nats, the same estimates to a hundredth of their spread about the
// estimate) in fewer evaluations, on pendulum data sets that our agent simulates at the
// estimate (the temperature fitted, as fit's default does). Data of the agent without policy
// noise are left out: on them the likelihood can have several peaks (at 20 pendulum trials
// one refit in four from the estimate ends on another peak than that of ten restarts, with or
// without the curvature), so which one a single refit reaches depends on its path.
func TestRefitsFromTheCurvature(t *testing.T) {
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	trials := simulateAt(t, "pendulum", spec.Defaults(), 0, control.SimOptions{Observe: control.ObservePartial, Trials: 20, Seed: 5, Temperature: spec.Temperature})
	f := newFitter(t, "pendulum", likelihood.Options{FitTemperature: true}, Options{Restarts: 4, Seed: 1})
	s := Subject{ID: "s", Trials: trials}
	est := fitAll(t, f, []Subject{s})["s"]
	require.Empty(t, est.Err)
	require.True(t, est.HessianPD)
	x := make([]float64, len(f.infer))
	for k, name := range f.Fitted() {
		x[k] = est.Scaled[name]
	}
	sims, err := f.simulateAt(s, x, 6, agentSeed(3, "s", likelihood.AgentVariant{}), likelihood.AgentVariant{})
	require.NoError(t, err)
	var subjects []Subject
	for _, d := range sims {
		subjects = append(subjects, Subject{ID: strconv.Itoa(len(subjects)), Trials: d})
	}
	plain, _, plainLL, plainEvals, err := refitAlone(f, subjects, x, nil)
	require.NoError(t, err)
	seeded, _, seededLL, seededEvals, err := refitAlone(f, subjects, x, est.Hessian)
	require.NoError(t, err)
	require.Len(t, plain, len(subjects))
	require.Len(t, seeded, len(subjects))
	t.Logf("evaluations: %d from the identity, %d from the Hessian", plainEvals, seededEvals)
	assert.Less(t, float64(seededEvals), 0.8*float64(plainEvals))
	for k, name := range f.Fitted() {
		spread := 0.0 // how far the refits moved this parameter
		for _, r := range plain {
			spread = math.Max(spread, math.Abs(r[k]-x[k]))
		}
		for j := range subjects {
			assert.InDelta(t, plain[j][k], seeded[j][k], 0.01*spread, "data set %d, %s", j, name)
		}
	}
	for j := range subjects {
		assert.InDelta(t, plainLL[j], seededLL[j], 0.01, "data set %d", j)
	}
}

// refitAlone runs f.refit of subject "s"'s data sets with a batcher of their own.
func refitAlone(f *Fitter, subjects []Subject, x []float64, hess [][]float64) (refits [][]float64, data []int, logliks []float64, evals int, err error) {
	f.serve(len(subjects[0].Trials), len(subjects), func(b *batcher) {
		refits, data, logliks, evals, err = f.refit(context.Background(), b, func(j int) int { return j }, subjects, "s", x, hess)
	})
	return
}
