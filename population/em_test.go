package population

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linearPopulation simulates n subjects of the linear task whose log10 obs_noise and
// motor_noise are drawn from normals of means mean and SD sd (the second mean shifted by
// shift for subjects of the second half), trials of 30 steps each. It returns the subjects,
// their true parameters in fitting scale (obs_noise, motor_noise) and the evaluator.
func linearPopulation(t testing.TB, n, trials int, mean [2]float64, sd, shift float64, seed uint64) ([]fit.Subject, [][]float64, *likelihood.Evaluator) {
	t.Helper()
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	sv, err := control.NewSolver(m, 30, b, control.SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 7))
	thetas := make([][]float64, n)
	truth := make([][]float64, n)
	for i := range n {
		th := spec.Defaults()
		obs, motor := mean[0]+sd*rng.NormFloat64(), mean[1]+sd*rng.NormFloat64()
		if i >= n/2 {
			obs += shift
		}
		th[paramIdx(t, spec, "obs_noise")], th[paramIdx(t, spec, "motor_noise")] = math.Pow(10, obs), math.Pow(10, motor)
		thetas[i], truth[i] = th, []float64{obs, motor}
	}
	pol, err := sv.Solve(thetas, nil)
	require.NoError(t, err)
	subjects := make([]fit.Subject, n)
	for i := range n {
		xs, err := control.Simulate(m, pol, thetas, b, control.SimOptions{Trials: trials, Seed: seed*1000 + uint64(i), Temperature: spec.Temperature})
		require.NoError(t, err)
		subjects[i] = fit.Subject{ID: string(rune('a'+i/26)) + string(rune('a'+i%26)), Trials: xs[i]}
	}
	e, err := likelihood.New(m, b, likelihood.Options{})
	require.NoError(t, err)
	return subjects, truth, e
}

func paramIdx(t testing.TB, spec models.Spec, name string) int {
	for i, p := range spec.Params {
		if p.Name == name {
			return i
		}
	}
	t.Fatalf("no parameter %s", name)
	return -1
}

// TestMStepClosedForm checks the M-step against the sample statistics it reduces to: with
// no posterior spread and an intercept, the mean and the ML variance; with a group column, the
// groups' means.
func TestMStepClosedForm(t *testing.T) {
	vals := []float64{1, 2, 4, 7}
	fits := make([]SubjectFit, len(vals))
	X1 := make([][]float64, len(vals))
	X2 := make([][]float64, len(vals))
	for i, v := range vals {
		fits[i] = SubjectFit{MAP: []float64{v}, Cov: [][]float64{{0.5}}}
		X1[i] = []float64{1}
		X2[i] = []float64{1, float64(i / 2)}
	}
	pop := MStep(X1, fits, 1e-4)
	assert.InDelta(t, 3.5, pop.Beta[0][0], 1e-12)
	assert.InDelta(t, (6.25+2.25+0.25+12.25)/4+0.5, pop.Var[0], 1e-12, "ML variance of the MAPs plus the posterior variance")
	pop = MStep(X2, fits, 1e-4)
	assert.InDelta(t, 1.5, pop.Beta[0][0], 1e-12, "the reference group's mean")
	assert.InDelta(t, 4, pop.Beta[0][1], 1e-12, "the second group's mean minus the first's")
	assert.InDelta(t, 1e-4, MStep(X1[:2], []SubjectFit{{MAP: []float64{1}, Cov: zeros(1)}, {MAP: []float64{1}, Cov: zeros(1)}}, 1e-4).Var[0], 0, "variance floor")
}

// TestEffectsInformationAgainstFiniteDifferences checks I(β) against the second derivatives,
// by finite differences, of the log marginal likelihood Σ_i log N(m̂_i; X_i β, D + H_i⁻¹) it
// is the information of.
func TestEffectsInformationAgainstFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, p := 7, 2
	X := make([][]float64, n)
	fits := make([]SubjectFit, n)
	pop := Estimate{Beta: [][]float64{{0.3, -0.2}, {1, 0.5}}, Var: []float64{0.04, 0.09}}
	mhat := make([][]float64, n)
	cs := make([][][]float64, n)
	for i := range n {
		X[i] = []float64{1, float64(i % 2)}
		a, b, c := 5+20*rng.Float64(), 5+20*rng.Float64(), 3*rng.Float64()
		H := [][]float64{{a, c}, {c, b}}
		fits[i] = SubjectFit{MAP: make([]float64, p), Cov: posteriorCov(H, pop.Var)}
		det := a*b - c*c
		cs[i] = [][]float64{{b / det, -c / det}, {-c / det, a / det}}
		mhat[i] = []float64{rng.NormFloat64(), rng.NormFloat64()}
	}
	marginal := func(beta [][]float64) float64 {
		s := 0.0
		for i := range n {
			mu := Estimate{Beta: beta}.Mean(X[i])
			S := [2][2]float64{{pop.Var[0] + cs[i][0][0], cs[i][0][1]}, {cs[i][1][0], pop.Var[1] + cs[i][1][1]}}
			det := S[0][0]*S[1][1] - S[0][1]*S[1][0]
			r0, r1 := mhat[i][0]-mu[0], mhat[i][1]-mu[1]
			s += -0.5*(r0*r0*S[1][1]-2*r0*r1*S[0][1]+r1*r1*S[0][0])/det - 0.5*math.Log(det)
		}
		return s
	}
	effects, _, err := Inference(X, []string{"(intercept)", "g"}, []string{"a", "b"}, pop, fits)
	require.NoError(t, err)
	// The information's inverse against the inverse of the numerical negative Hessian.
	h := 1e-4
	q := 2
	Hn := make([][]float64, p*q)
	shift := func(a int, d float64) [][]float64 {
		bb := [][]float64{append([]float64(nil), pop.Beta[0]...), append([]float64(nil), pop.Beta[1]...)}
		bb[a/q][a%q] += d
		return bb
	}
	for a := range p * q {
		Hn[a] = make([]float64, p*q)
		for c := range p * q {
			pp := func(da, dc float64) float64 {
				bb := shift(a, da)
				bb[c/q][c%q] += dc
				return marginal(bb)
			}
			Hn[a][c] = -(pp(h, h) - pp(h, -h) - pp(-h, h) + pp(-h, -h)) / (4 * h * h)
		}
	}
	cov := invert(t, Hn)
	for a, e := range effects {
		assert.InDelta(t, math.Sqrt(cov[a][a]), e.SE, 1e-4*e.SE, "%s %s", e.Param, e.Term)
	}
}

func invert(t *testing.T, A [][]float64) [][]float64 {
	t.Helper()
	n := len(A)
	M := make([][]float64, n)
	for i := range A {
		M[i] = append(append([]float64(nil), A[i]...), make([]float64, n)...)
		M[i][n+i] = 1
	}
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(M[r][c]) > math.Abs(M[piv][c]) {
				piv = r
			}
		}
		M[c], M[piv] = M[piv], M[c]
		require.Greater(t, math.Abs(M[c][c]), 1e-12)
		for r := range n {
			if r != c {
				f := M[r][c] / M[c][c]
				for k := range 2 * n {
					M[r][k] -= f * M[c][k]
				}
			}
		}
	}
	out := make([][]float64, n)
	for i := range n {
		out[i] = make([]float64, n)
		for j := range n {
			out[i][j] = M[i][n+j] / M[i][i]
		}
	}
	return out
}

// TestRunRecoversALinearPopulation runs EM on 30 subjects of the linear task with 3 trials
// each: the population means are within their intervals' reach of the truth, the log
// marginal likelihood rises over the steps, and the shrunk estimates are closer to the
// subjects' truths than the independent ones.
func TestRunRecoversALinearPopulation(t *testing.T) {
	mean := [2]float64{-0.7, -1.3}
	subjects, truth, e := linearPopulation(t, 30, 3, mean, 0.15, 0, 11)
	opts := fit.Options{Restarts: 4, Seed: 1, Infer: []string{"obs_noise", "motor_noise"}, Uncertainty: fit.UncertaintyHessian}
	f, err := fit.New(e, opts)
	require.NoError(t, err)
	names := f.Fitted() // the task's order
	require.Equal(t, []string{"motor_noise", "obs_noise"}, names)
	for i := range truth {
		truth[i] = []float64{truth[i][1], truth[i][0]}
	}
	mean = [2]float64{mean[1], mean[0]}
	X := make([][]float64, len(subjects))
	indep := make([][]float64, len(subjects))
	idx := map[string]int{}
	for i, s := range subjects {
		X[i], idx[s.ID] = []float64{1}, i
	}
	require.NoError(t, f.Fit(context.Background(), subjects, func(r fit.Result) error {
		require.Empty(t, r.Err)
		indep[idx[r.Subject]] = []float64{r.Scaled[names[0]], r.Scaled[names[1]]}
		return nil
	}))
	var steps []Step
	last, converged, err := Run(context.Background(), Config{Evaluator: e, Fit: opts, Subjects: subjects, X: X},
		Initial(X, indep, 1e-4), indep, nil, func(s Step) error { steps = append(steps, s); return nil })
	require.NoError(t, err)
	assert.True(t, converged, "EM converges within 50 steps")
	for i := 1; i < len(steps); i++ {
		assert.GreaterOrEqual(t, steps[i].LogMarginal, steps[i-1].LogMarginal-0.05, "step %d", steps[i].Iter)
	}
	effects, spreads, err := Inference(X, []string{"(intercept)"}, names, last.Prior, last.Subjects)
	require.NoError(t, err)
	for k, e := range effects {
		assert.InDelta(t, mean[k], e.Estimate, 3*e.SE, "%s mean %.3f ± %.3f", e.Param, e.Estimate, e.SE)
		assert.Less(t, e.SE, 0.1)
		t.Logf("%s: mean %.3f (truth %.3f) SE %.3f; SD %.3f [%.3f, %.3f] (truth 0.15)", e.Param, e.Estimate, mean[k], e.SE, spreads[k].SD, spreads[k].CI95[0], spreads[k].CI95[1])
	}
	var errIndep, errShrunk float64
	for i, sf := range last.Subjects {
		for k := range 2 {
			errIndep += math.Abs(indep[i][k] - truth[i][k])
			errShrunk += math.Abs(sf.MAP[k] - truth[i][k])
		}
	}
	t.Logf("mean absolute error: independent %.4f, population %.4f, %d steps", errIndep/60, errShrunk/60, len(steps))
	assert.Less(t, errShrunk, errIndep, "shrinkage helps on 3 trials")
}

// TestGroupDifferenceFound fits two groups of 12 subjects of the linear task whose log10
// obs_noise differs by 0.3: the group effect's interval holds the true shift and excludes 0,
// and motor_noise's, with no shift, holds 0.
func TestGroupDifferenceFound(t *testing.T) {
	subjects, _, e := linearPopulation(t, 24, 5, [2]float64{-0.7, -1.3}, 0.1, 0.3, 21)
	opts := fit.Options{Restarts: 3, Seed: 1, Infer: []string{"obs_noise", "motor_noise"}, Uncertainty: fit.UncertaintyHessian}
	f, err := fit.New(e, opts)
	require.NoError(t, err)
	names := f.Fitted()
	X := make([][]float64, len(subjects))
	indep := make([][]float64, len(subjects))
	idx := map[string]int{}
	for i, s := range subjects {
		X[i], idx[s.ID] = []float64{1, float64(i / 12)}, i
	}
	require.NoError(t, f.Fit(context.Background(), subjects, func(r fit.Result) error {
		indep[idx[r.Subject]] = []float64{r.Scaled[names[0]], r.Scaled[names[1]]}
		return nil
	}))
	last, _, err := Run(context.Background(), Config{Evaluator: e, Fit: opts, Subjects: subjects, X: X},
		Initial(X, indep, 1e-4), indep, nil, func(Step) error { return nil })
	require.NoError(t, err)
	effects, _, err := Inference(X, []string{Intercept, "group[b]"}, names, last.Prior, last.Subjects)
	require.NoError(t, err)
	byName := map[string]Effect{}
	for _, ef := range effects {
		if ef.Term == "group[b]" {
			byName[ef.Param] = ef
		}
	}
	obs, motor := byName["obs_noise"], byName["motor_noise"]
	t.Logf("obs_noise shift %.3f [%.3f, %.3f] p %.2g; motor_noise %.3f [%.3f, %.3f] p %.2g", obs.Estimate, obs.CI95[0], obs.CI95[1], *obs.P,
		motor.Estimate, motor.CI95[0], motor.CI95[1], *motor.P)
	assert.True(t, obs.CI95[0] > 0 && obs.CI95[0] < 0.3 && obs.CI95[1] > 0.3, "the shift is found and held")
	assert.Less(t, *obs.P, 0.01)
	assert.True(t, motor.CI95[0] < 0 && motor.CI95[1] > 0, "no shift where there is none")
}

// TestUninformativeSubject checks the E-step of a subject without a usable Hessian against
// its closed form: the prior's covariance, and evidence ll − ½ Σ (x−m)²/v.
func TestUninformativeSubject(t *testing.T) {
	prior := fit.Prior{Mean: []float64{-1, 0.5}, Var: []float64{0.04, 0.25}}
	sf := SubjectFit{MAP: []float64{-0.8, 0.2}, LogLik: -12.5}
	uninformative(&sf, prior)
	assert.InDelta(t, -12.5-0.5*(0.2*0.2/0.04+0.3*0.3/0.25), sf.LogEvidence, 1e-12)
	assert.Equal(t, [][]float64{{0.04, 0}, {0, 0.25}}, sf.Cov)
	assert.NotEmpty(t, sf.Note)
}

// TestIndependentSortBy: the subjects of a results file, in the order their fits ended, are
// put in the data set's order; those the data do not list go last, in their order.
func TestIndependentSortBy(t *testing.T) {
	in := IndependentFits{IDs: []string{"3", "x", "1", "4", "y", "2"}}
	in.SortBy([]string{"1", "2", "3", "4"})
	assert.Equal(t, []string{"1", "2", "3", "4", "x", "y"}, in.IDs)
}
