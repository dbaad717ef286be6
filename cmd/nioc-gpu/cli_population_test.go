package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliPopulationData simulates 10 subjects of the linear task (5 trials of 20 steps) and
// writes a subjects table that puts them in two groups, a and b; it returns both paths.
func cliPopulationData(t *testing.T, dir string) (data, subjects string) {
	t.Helper()
	data = cliSimulate(t, dir, "sim.csv", "--task", "linear", "--subjects", "10", "--trials", "5", "--seed", "3")
	var b strings.Builder
	b.WriteString("subject,group\n")
	for i := 1; i <= 10; i++ {
		g := "a"
		if i > 5 {
			g = "b"
		}
		b.WriteString(strconv.Itoa(i) + "," + g + "\n")
	}
	subjects = filepath.Join(dir, "subjects.csv")
	require.NoError(t, os.WriteFile(subjects, []byte(b.String()), 0o644))
	return data, subjects
}

// TestCLIPopulation fits a two-group population of the linear task end to end: the report's
// files and fields, the table on stdout, and a resumed run that finds the work done.
func TestCLIPopulation(t *testing.T) {
	dir := t.TempDir()
	data, subjects := cliPopulationData(t, dir)
	out := filepath.Join(dir, "pop")
	args := []string{"population", "--task", "linear", "--data", data, "--subjects", subjects, "--population-model", "~ group",
		"--infer", "obs_noise,motor_noise", "--restarts", "3", "--quiet", "--out", out}
	r := cliOK(t, args...)
	assert.Contains(t, r.stderr, "EM step 1: log marginal likelihood")
	assert.Contains(t, r.stdout, "group[b]")
	assert.Contains(t, r.stdout, "SD across subjects")
	for _, f := range []string{popIndependent, popSteps, popJSON, popCSV, popSubjects} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "%s readable by the lab", f)
	}
	var rep map[string]any
	raw, err := os.ReadFile(filepath.Join(out, popJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rep))
	assert.Equal(t, true, rep["converged"])
	effects := rep["effects"].([]any)
	require.Len(t, effects, 4, "2 parameters × (intercept, group[b])")
	for _, e := range effects {
		ef := e.(map[string]any)
		ci := ef["ci95"].([]any)
		est := ef["estimate"].(float64)
		assert.Less(t, ci[0].(float64), est)
		assert.Greater(t, ci[1].(float64), est)
		if ef["term"] == "(intercept)" {
			assert.NotContains(t, ef, "p", "no test of an intercept")
		} else {
			p := ef["p"].(float64)
			assert.True(t, p >= 0 && p <= 1, "p-value %v", p)
		}
		assert.Equal(t, 8.0, ef["df"], "10 subjects − 2 terms")
	}
	subj := cliReadCSV(t, filepath.Join(out, popSubjects))
	require.Len(t, subj, 11, "header and 10 subjects")
	assert.Equal(t, "subject", subj[0][0])
	assert.Contains(t, subj[0], "obs_noise_shrunk_scaled")
	pop := cliReadCSV(t, filepath.Join(out, popCSV))
	assert.Len(t, pop, 1+4+2, "header, 4 effects, 2 spreads")

	steps := len(cliReadJSONL(t, filepath.Join(out, popSteps)))
	again := cliOK(t, append(args, "--resume")...)
	assert.Contains(t, again.stderr, "resuming")
	assert.NotContains(t, again.stderr, "log marginal likelihood", "a converged run is not stepped again")
	assert.Equal(t, steps, len(cliReadJSONL(t, filepath.Join(out, popSteps))))
	assert.Equal(t, r.stdout, again.stdout, "the same report")

	// A run stopped by --max-em after one step resumes to the same unconverged report.
	one := filepath.Join(dir, "one")
	first := cliOK(t, append(args[:len(args)-1], one, "--max-em", "1")...)
	assert.Contains(t, first.stdout, "NOT converged after 1 step(s)")
	resumed := cliOK(t, append(args[:len(args)-1], one, "--max-em", "1", "--resume")...)
	assert.Equal(t, first.stdout, resumed.stdout)
}

// TestCLIPopulationErrors checks that bad population command lines say what is wrong.
func TestCLIPopulationErrors(t *testing.T) {
	dir := t.TempDir()
	data, subjects := cliPopulationData(t, dir)
	partial := filepath.Join(dir, "partial.csv")
	raw, err := os.ReadFile(subjects)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(partial, []byte(strings.Replace(string(raw), "7,b\n", "", 1)), 0o644))
	done := filepath.Join(dir, "done")
	require.NoError(t, os.MkdirAll(done, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(done, popSteps), []byte("{}\n"), 0o644))
	base := []string{"population", "--task", "linear", "--data", data, "--infer", "obs_noise", "--restarts", "2", "--quiet"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"covariates without a table", []string{"--population-model", "~ group", "--out", filepath.Join(dir, "o1")}, 2, []string{"--subjects"}},
		{"bad formula", []string{"--subjects", subjects, "--population-model", "~ group * age", "--out", filepath.Join(dir, "o2")}, 2, []string{"interactions"}},
		{"subjects missing from the table", []string{"--subjects", partial, "--population-model", "~ group", "--out", filepath.Join(dir, "o3")}, 1, []string{"partial.csv", "\"7\""}},
		{"existing run", []string{"--out", done}, 2, []string{"--resume"}},
		{"em-tol", []string{"--em-tol", "0", "--out", filepath.Join(dir, "o4")}, 2, []string{"--em-tol"}},
		{"no out", nil, 2, []string{"--out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cliRequireFail(t, cliRun(t, append(base, tc.args...)...), tc.code, tc.msgs...)
		})
	}
}

// TestCLISamplePopulation samples the hierarchical posterior of a small population fit and
// checks its files, its table beside the empirical-Bayes fit, and that another task's flags
// are refused.
func TestCLISamplePopulation(t *testing.T) {
	dir := t.TempDir()
	data, subjects := cliPopulationData(t, dir)
	fitDir := filepath.Join(dir, "pop")
	common := []string{"--task", "linear", "--data", data, "--subjects", subjects, "--population-model", "~ group"}
	cliOK(t, append(append([]string{"population"}, common...), "--infer", "obs_noise,motor_noise", "--restarts", "2", "--quiet", "--out", fitDir)...)
	out := filepath.Join(dir, "hier")
	r := cliOK(t, append(append([]string{"sample", "--population", fitDir}, common...), "--chains", "2", "--warmup", "60", "--draws", "40", "--max-depth", "5", "--out", out)...)
	assert.Contains(t, r.stdout, "empirical Bayes")
	assert.Contains(t, r.stdout, "group[b]")
	var rep hierReport
	raw, err := os.ReadFile(filepath.Join(out, hierJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.Len(t, rep.Posterior.Effects, 4)
	require.NotNil(t, rep.Posterior.Effects[1].PPositive, "a group effect's posterior probability of being positive")
	assert.Nil(t, rep.Posterior.Effects[0].PPositive)
	draws := cliReadCSV(t, filepath.Join(out, hierDraws))
	require.Len(t, draws, 1+2*40, "header and chains × draws")
	assert.Len(t, draws[0], 2+4+2+10*2, "chain, draw, 4 effects, 2 SDs, 10 subjects × 2 parameters")

	bad := cliRun(t, "sample", "--population", fitDir, "--task", "pendulum", "--data", data, "--out", filepath.Join(dir, "x"))
	require.NotEqual(t, 0, bad.code)
	missing := cliRun(t, "sample", "--population", filepath.Join(dir, "none"), "--task", "linear", "--data", data, "--out", filepath.Join(dir, "y"))
	cliRequireFail(t, missing, 1, "run nioc-gpu population first")
}
