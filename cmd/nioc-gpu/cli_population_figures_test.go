package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/population"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliPNGSize asserts that path is a PNG readable by the lab (0644) and returns its size in
// pixels.
func cliPNGSize(t *testing.T, path string) (w, h int) {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "%s readable by the lab", path)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, path)
	return img.Bounds().Dx(), img.Bounds().Dy()
}

// TestCLIPopulationFigures runs a worked group study of the linear task: simulate
// --population draws two groups of subjects that differ in action_cost and writes their
// truths and subjects table, population fits them with --truth, and its figures are there:
// population.png with a panel per fitted parameter, shrinkage.png with a row of errors under
// the shrinkage row. A subject that the truth file lacks and, on a resumed run, a truth file
// that cannot be read are warnings, and the figures are drawn all the same.
func TestCLIPopulationFigures(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "5", "--seed", "2",
		"--population", "action_cost=-1:0.15,motor_noise=-1.3:0.15", "--groups", "control=6,patient=6", "--group-effect", "patient:action_cost=0.5")
	subjects, truth := filepath.Join(dir, "d.subjects.csv"), filepath.Join(dir, "d.truth.csv")
	raw, err := os.ReadFile(truth)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(raw), "\n")
	require.True(t, strings.HasPrefix(lines[len(lines)-2], "s012,patient,"), "the last subject's row: %q", lines[len(lines)-2])
	require.NoError(t, os.WriteFile(truth, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644))
	out := filepath.Join(dir, "pop")
	args := []string{"population", "--task", "linear", "--data", data, "--subjects", subjects, "--population-model", "~ group",
		"--infer", "action_cost,motor_noise", "--restarts", "3", "--quiet", "--out", out}
	r := cliOK(t, append(args, "--truth", truth)...)
	assert.Contains(t, r.stderr, "warning: --truth: "+truth+" has no row for subject(s) s012: no truth marked for them")
	assert.NotContains(t, r.stderr, "no figures")
	w, h := cliPNGSize(t, filepath.Join(out, popDensities))
	assert.GreaterOrEqual(t, w, 2*420, "two panels side by side, 2.8 in at 150 dpi")
	assert.GreaterOrEqual(t, h, 360, "a row of panels 2.4 in high")
	assert.Less(t, h, 2*360, "one row")
	w, h = cliPNGSize(t, filepath.Join(out, popShrinkage))
	assert.GreaterOrEqual(t, w, 2*420)
	assert.GreaterOrEqual(t, h, 2*420, "shrinkage and, with truths, errors")

	bad := cliWriteFile(t, dir, "bad.csv", "set,a,b\n1,1,2\n")
	require.NoError(t, os.Remove(filepath.Join(out, popShrinkage)))
	again := cliOK(t, append(args, "--resume", "--truth", bad)...)
	assert.Contains(t, again.stderr, "warning: --truth: "+bad+": header does not match task linear: the figures mark no true values")
	_, h = cliPNGSize(t, filepath.Join(out, popShrinkage))
	assert.Less(t, h, 2*420, "no truths: no row of errors")
	assert.Equal(t, r.stdout, again.stdout, "the figures change nothing of the report")
}

// TestCLIPopulationFiguresGroups: the figures' groups are the levels of the model's
// categorical terms, their means the design's, numeric covariates at their average; a model
// of one population has one group.
func TestCLIPopulationFiguresGroups(t *testing.T) {
	dir := t.TempDir()
	table := cliWriteFile(t, dir, "subjects.csv", "subject,group,age\n1,b,30\n2,a,40\n3,b,50\n4,a,60\n")
	subj, err := population.ReadSubjects(table)
	require.NoError(t, err)
	rep := cliTestReport([]string{"(intercept)", "group[b]", "age"}, "~ group + age")
	groups, of, numeric, err := popGroups(rep, subj)
	require.NoError(t, err)
	require.Len(t, groups, 2)
	assert.Equal(t, "group a", groups[0].name)
	assert.Equal(t, "group b", groups[1].name)
	assert.Equal(t, []float64{1, 0, 0}, groups[0].row)
	assert.Equal(t, []float64{1, 1, 0}, groups[1].row, "age at its average")
	assert.Equal(t, []int{1, 0, 1, 0}, of)
	assert.Equal(t, []string{"age"}, numeric)

	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	truth := map[string][]float64{"1": {0.1, 0.01, 0.2}}
	dens, shr := popPanels(rep, spec, groups, of, truth)
	require.Len(t, dens, 1)
	assert.InDelta(t, -1.5, dens[0].Groups[0].Mean, 1e-12, "the intercept")
	assert.InDelta(t, -1.2, dens[0].Groups[1].Mean, 1e-12, "intercept + group[b]")
	assert.Equal(t, 0.25, dens[0].Groups[0].SD)
	assert.Equal(t, []float64{-1.4, -1.6}, dens[0].Groups[1].Estimates, "subjects 1 and 3, shrunk")
	assert.InDelta(t, -2, dens[0].Groups[1].Truths[0], 1e-12, "subject 1's motor_noise 0.01 in log10")
	assert.True(t, math.IsNaN(dens[0].Groups[1].Truths[1]), "subject 3 has no truth")
	assert.Equal(t, []float64{-1.3, -1.7}, shr[0].Groups[1].Independent)
	assert.True(t, math.IsNaN(shr[0].Groups[1].IndependentSE[1]), "subject 3's independent fit has no standard error")

	groups, of, _, err = popGroups(cliTestReport([]string{"(intercept)"}, "~ 1"), nil)
	require.NoError(t, err)
	require.Len(t, groups, 1)
	assert.Equal(t, "", groups[0].name)
	assert.Equal(t, []int{0, 0, 0, 0}, of)

	_, _, _, err = popGroups(cliTestReport([]string{"(intercept)", "group[b]"}, "~ group + age"), subj)
	assert.ErrorContains(t, err, "makes the design columns")
}

// cliTestReport returns the report of a population fit of motor_noise (fitting scale log10)
// to subjects 1–4 with the design columns cols of formula: effects (intercept) −1.5,
// group[b] 0.3, age 0.01 (those of cols), SD 0.25; subject 3's independent fit without a
// standard error.
func cliTestReport(cols []string, formula string) *population.Report {
	effects := map[string]float64{"(intercept)": -1.5, "group[b]": 0.3, "age": 0.01}
	rep := &population.Report{Settings: population.Settings{Formula: formula, Columns: cols, Fitted: []string{"motor_noise"}},
		Spreads: []population.Spread{{Param: "motor_noise", SD: 0.25}}}
	for _, c := range cols {
		rep.Effects = append(rep.Effects, population.Effect{Param: "motor_noise", Term: c, Estimate: effects[c]})
	}
	for i, v := range [][2]float64{{-1.3, -1.4}, {-1.5, -1.5}, {-1.7, -1.6}, {-1.45, -1.48}} {
		s := population.SubjectEstimate{Subject: strconv.Itoa(i + 1), Independent: map[string]float64{"motor_noise": v[0]},
			Shrunk: map[string]float64{"motor_noise": v[1]}, ShrunkSE: map[string]float64{"motor_noise": 0.1}}
		if i != 2 {
			s.IndependentSE = map[string]float64{"motor_noise": 0.2}
		}
		rep.Subjects = append(rep.Subjects, s)
	}
	return rep
}
