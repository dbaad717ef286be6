package population

import (
	"context"
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/posterior"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHierarchicalGradient checks the hierarchical log density's gradient against central
// differences, and Pack against Unpack.
func TestHierarchicalGradient(t *testing.T) {
	subjects, _, e := linearPopulation(t, 4, 2, [2]float64{-0.7, -1.3}, 0.15, 0.2, 5)
	X := [][]float64{{1, 0}, {1, 0}, {1, 1}, {1, 1}}
	h, err := NewHierarchical(e, fit.Options{Infer: []string{"obs_noise", "motor_noise"}}, subjects, X)
	require.NoError(t, err)
	require.Equal(t, 4*2+2*2+2, h.Dim())
	y := make([]float64, h.Dim())
	for i := range y {
		y[i] = 0.3 * math.Sin(float64(i)+1)
	}
	y[8], y[10] = -1.3, -0.7 // the intercepts (motor_noise, obs_noise)
	theta, beta, sd := h.Unpack(y)
	assert.InDeltaSlice(t, y, h.Pack(theta, beta, sd), 1e-12, "Pack inverts Unpack")

	lp, g, err := h.LogDensity([][]float64{y})
	require.NoError(t, err)
	require.True(t, !math.IsNaN(lp[0]) && !math.IsInf(lp[0], 0))
	const step = 1e-5
	for j := range y {
		up, dn := append([]float64(nil), y...), append([]float64(nil), y...)
		up[j] += step
		dn[j] -= step
		l, _, err := h.LogDensity([][]float64{up, dn})
		require.NoError(t, err)
		fd := (l[0] - l[1]) / (2 * step)
		assert.InDelta(t, fd, g[0][j], 1e-4*math.Max(1, math.Abs(fd)), "coordinate %d", j)
	}
}

// TestHierarchicalAgreesWithEmpiricalBayes samples the hierarchical posterior of 10 subjects
// of the linear task (4 trials each) and checks that the empirical-Bayes population means lie
// within 0.5 posterior SD of the posterior means, and that the chains mixed.
func TestHierarchicalAgreesWithEmpiricalBayes(t *testing.T) {
	if testing.Short() {
		t.Skip("samples a posterior")
	}
	subjects, _, e := linearPopulation(t, 10, 4, [2]float64{-0.7, -1.3}, 0.15, 0, 9)
	opts := fit.Options{Restarts: 3, Seed: 1, Infer: []string{"obs_noise", "motor_noise"}, Uncertainty: fit.UncertaintyHessian}
	X := make([][]float64, len(subjects))
	for i := range X {
		X[i] = []float64{1}
	}
	f, err := fit.New(e, opts)
	require.NoError(t, err)
	indep := make([][]float64, len(subjects))
	idx := map[string]int{}
	for i, s := range subjects {
		idx[s.ID] = i
	}
	names := f.Fitted()
	require.NoError(t, f.Fit(context.Background(), subjects, func(r fit.Result) error {
		indep[idx[r.Subject]] = []float64{r.Scaled[names[0]], r.Scaled[names[1]]}
		return nil
	}))
	last, _, err := Run(context.Background(), Config{Evaluator: e, Fit: opts, Subjects: subjects, X: X}, Initial(X, indep, 1e-4), indep, nil,
		func(Step) error { return nil })
	require.NoError(t, err)
	h, err := NewHierarchical(e, opts, subjects, X)
	require.NoError(t, err)
	var theta [][]float64
	for _, sf := range last.Subjects {
		theta = append(theta, sf.MAP)
	}
	sd := []float64{math.Sqrt(last.Prior.Var[0]), math.Sqrt(last.Prior.Var[1])}
	res, _, err := h.Sample(context.Background(), posterior.Options{Chains: 4, Warmup: 200, Draws: 200, Seed: 2},
		h.Pack(theta, last.Prior.Beta, sd), names, []string{Intercept})
	require.NoError(t, err)
	for k, ef := range res.Effects {
		t.Logf("%s: EB %.3f, posterior %.3f ± %.3f, R-hat %.3f, ESS %.0f", ef.Param, last.Prior.Beta[k][0], ef.Mean, ef.SD, ef.RHat, ef.ESSBulk)
		assert.InDelta(t, ef.Mean, last.Prior.Beta[k][0], 0.5*ef.SD, "%s", ef.Param)
		assert.Less(t, ef.RHat, 1.05)
	}
	for _, s := range res.Spreads {
		t.Logf("%s SD: posterior %.3f [%.3f, %.3f]", s.Param, s.Mean, s.Q025, s.Q975)
	}
	t.Logf("%d divergences, %d evaluations", res.Divergences, res.Evaluations)
}
