package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/population"
	"github.com/nioc-gpu/nioc-gpu/study"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliPopulationArgs simulates 200 subjects of the linear task, 100 per group, the patients'
// motor noise shifted by 0.3 in log10, the observation noise held by --params.
var cliPopulationArgs = []string{"--task", "linear", "--trials", "1", "--steps", "3",
	"--population", "action_cost=-1:0.2,motor_noise=-1.5:0.15", "--groups", "control=100,patient=100",
	"--group-effect", "patient:motor_noise=0.3", "--params", "obs_noise=0.3"}

// TestCLISimulatePopulation: the truths file holds the subjects' draws (their sample mean and
// sd in log10 near the population's, the group effect in the patients' mean, the parameter
// not drawn at --params), the same seed gives the same truths, each subject's data are the
// agent's at its truths, and the subjects table reads back with population.ReadSubjects and
// makes the design of "~ group".
func TestCLISimulatePopulation(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "data.csv")
	r := cliOK(t, append([]string{"simulate", "--out", out, "--seed", "5"}, cliPopulationArgs...)...)
	truthPath, subjectsPath := filepath.Join(dir, "data.truth.csv"), filepath.Join(dir, "data.subjects.csv")
	assert.Contains(t, r.stderr, "population of 200 subject(s) (control 100, patient 100)")
	assert.Contains(t, r.stderr, "motor_noise, log10 scale: sd 0.15; mean control -1.5 (natural 0.03162), patient -1.2 (natural 0.0631)")
	assert.Contains(t, r.stderr, truthPath)
	assert.Contains(t, r.stderr, subjectsPath)
	assert.NotContains(t, r.stderr, "drawn again", "5 sd inside the search box")

	spec := models.LinearGaussian{}.Spec()
	rows := cliReadCSV(t, truthPath)
	require.Equal(t, []string{"subject", "group", "action_cost", "motor_noise", "obs_noise"}, rows[0])
	require.Len(t, rows, 201)
	truth, order, err := study.ReadTruth(truthPath, spec)
	require.NoError(t, err)
	set, err := data.Read(out, spec.States)
	require.NoError(t, err)
	var ids []string
	for _, s := range set.Subjects {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, order, ids, "the truths' subjects are the data's, in order")
	assert.Equal(t, "s001", ids[0])
	assert.Equal(t, "s200", ids[199])
	byGroup := map[string][][]float64{} // group → [param][subject] log10 values
	for _, row := range rows[1:] {
		th := truth[row[0]]
		assert.Equal(t, 0.3, th[2], "%s: obs_noise at --params", row[0])
		g := byGroup[row[1]]
		if g == nil {
			g = make([][]float64, 2)
		}
		g[0], g[1] = append(g[0], math.Log10(th[0])), append(g[1], math.Log10(th[1]))
		byGroup[row[1]] = g
	}
	for _, c := range []struct {
		group    string
		param    int
		mean, sd float64
	}{
		{"control", 0, -1, 0.2}, {"patient", 0, -1, 0.2}, {"control", 1, -1.5, 0.15}, {"patient", 1, -1.2, 0.15},
	} {
		xs := byGroup[c.group][c.param]
		require.Len(t, xs, 100)
		m, s := cliMeanSD(xs)
		assert.InDelta(t, c.mean, m, 3.5*c.sd/10, "%s %s: sample mean", c.group, spec.Params[c.param].Name)
		assert.InDelta(t, c.sd, s, 0.25*c.sd, "%s %s: sample sd", c.group, spec.Params[c.param].Name)
	}
	mc, _ := cliMeanSD(byGroup["control"][1])
	mp, _ := cliMeanSD(byGroup["patient"][1])
	assert.InDelta(t, 0.3, mp-mc, 3.5*0.15*math.Sqrt(2)/10, "the group effect shifts the patients' mean")

	again := cliSimulate(t, dir, "again.csv", append([]string{"--seed", "5"}, cliPopulationArgs...)...)
	assert.Equal(t, cliHash(t, truthPath), cliHash(t, filepath.Join(dir, "again.truth.csv")), "the same seed, the same truths")
	assert.Equal(t, cliHash(t, out), cliHash(t, again), "and the same data")
	cliSimulate(t, dir, "other.csv", append([]string{"--seed", "6"}, cliPopulationArgs...)...)
	assert.NotEqual(t, cliHash(t, truthPath), cliHash(t, filepath.Join(dir, "other.truth.csv")))

	// Subject s002 is the agent at its truths, simulated alone with its seed.
	alone := cliSimulate(t, dir, "alone.csv", "--task", "linear", "--trials", "1", "--steps", "3",
		"--seed", strconv.Itoa(5+1_000_003), "--params", cliAssignments(spec, truth["s002"]))
	one, err := data.Read(alone, spec.States)
	require.NoError(t, err)
	assert.Equal(t, one.Subjects[0].Trials, set.Subjects[1].Trials, "s002's data are its agent's")

	// The subjects table is the formula's input.
	assert.Equal(t, [][]string{{"subject", "group"}, {"s001", "control"}}, cliReadCSV(t, subjectsPath)[:2])
	subjects, err := population.ReadSubjects(subjectsPath)
	require.NoError(t, err)
	assert.Equal(t, []string{"group"}, subjects.Columns)
	assert.Equal(t, ids, subjects.Order)
	f, err := population.ParseFormula("~ group")
	require.NoError(t, err)
	X, names, err := population.Design(subjects, f, ids)
	require.NoError(t, err)
	assert.Equal(t, []string{"(intercept)", "group[patient]"}, names)
	for i, row := range rows[1:] {
		assert.Equal(t, []float64{1, map[bool]float64{false: 0, true: 1}[row[1] == "patient"]}, X[i], row[0])
	}
}

// TestCLISimulatePopulationFiles: one group of --subjects by default, the files where
// --truth and --subjects-out say, --force replaces them all, and a population's truths
// outside the search box are drawn again and said so.
func TestCLISimulatePopulationFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sim.txt")
	truth, subjects := filepath.Join(dir, "t.csv"), filepath.Join(dir, "s.csv")
	args := []string{"simulate", "--task", "linear", "--trials", "1", "--steps", "2", "--subjects", "40",
		"--population", "obs_noise=0:0.5", "--out", out, "--truth", truth, "--subjects-out", subjects}
	r := cliOK(t, args...)
	assert.Regexp(t, `note: \d+ of 40 draws of obs_noise fell outside its search box \[0\.01, 2\] and were drawn again inside it`, r.stderr)
	rows := cliReadCSV(t, truth)
	require.Len(t, rows, 41)
	for _, row := range rows[1:] {
		assert.Equal(t, study.DefaultGroup, row[1])
		v := cliParseFloat(t, row[4], "obs_noise")
		assert.True(t, v >= 0.01 && v <= 2, "obs_noise %g in the box", v)
	}
	assert.Len(t, cliReadCSV(t, subjects), 41)
	cliNoFile(t, filepath.Join(dir, "sim.txt.truth.csv"))

	cliRequireFail(t, cliRun(t, args...), 2, "exists", "--force")
	require.NoError(t, os.Remove(out))
	cliRequireFail(t, cliRun(t, args...), 2, truth+" exists")
	cliNoFile(t, out)
	cliOK(t, append(args, "--force")...)

	cliOK(t, "simulate", "--task", "linear", "--trials", "1", "--steps", "2", "--population", "obs_noise=0:0.1", "--out", filepath.Join(dir, "d.data"))
	for _, name := range []string{"d.data", "d.data.truth.csv", "d.data.subjects.csv"} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.NoError(t, err, "%s written", name)
	}
}

func TestCLISimulatePopulationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msgs []string
	}{
		{"unknown parameter", []string{"--population", "cost=-1:0.2"}, []string{`--population: task linear has no parameter "cost"`}},
		{"sd zero", []string{"--population", "action_cost=-1:0"}, []string{`--population: action_cost: sd "0" must be a number > 0`}},
		{"malformed", []string{"--population", "action_cost=-1"}, []string{`--population: "action_cost=-1" is not name=mean:sd`}},
		{"mean outside the box", []string{"--population", "action_cost=2:0.1"}, []string{"--population: action_cost of group all: mean 2", "outside its search box [0.001, 10]"}},
		{"with --params of the same", []string{"--population", "action_cost=-1:0.2", "--params", "action_cost=0.1"}, []string{"--params and --population both give action_cost"}},
		{"bad group", []string{"--population", "action_cost=-1:0.2", "--groups", "control=0"}, []string{`--groups: group control: "0" subjects`}},
		{"effect of an unknown group", []string{"--population", "action_cost=-1:0.2", "--groups", "a=2,b=2", "--group-effect", "c:action_cost=0.1"}, []string{`--group-effect: group effect "c:action_cost=0.1": no group "c"; the groups are a, b`}},
		{"effect of a parameter not drawn", []string{"--population", "action_cost=-1:0.2", "--groups", "a=2,b=2", "--group-effect", "b:obs_noise=0.1"}, []string{"obs_noise is not a parameter of the population"}},
		{"--subjects with --groups", []string{"--population", "action_cost=-1:0.2", "--groups", "a=2", "--subjects", "4"}, []string{"--subjects with --groups"}},
		{"--groups alone", []string{"--groups", "a=2"}, []string{"--groups needs --population"}},
		{"--group-effect alone", []string{"--group-effect", "a:action_cost=1"}, []string{"--group-effect needs --population"}},
		{"--truth alone", []string{"--truth", "t.csv"}, []string{"--truth needs --population"}},
		{"--subjects-out alone", []string{"--subjects-out", "s.csv"}, []string{"--subjects-out needs --population"}},
		{"truth is the data", []string{"--population", "action_cost=-1:0.2", "--truth", "OUT"}, []string{"must differ from --out"}},
		{"truth is the subjects table", []string{"--population", "action_cost=-1:0.2", "--truth", "x.csv", "--subjects-out", "x.csv"}, []string{"--truth and --subjects-out are the same file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "d.csv")
			args := []string{"simulate", "--task", "linear", "--trials", "1", "--steps", "2", "--out", out}
			for _, a := range tc.args {
				switch {
				case a == "OUT":
					a = out
				case slices.Contains([]string{"t.csv", "s.csv", "x.csv"}, a):
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			cliRequireFail(t, cliRun(t, args...), 2, tc.msgs...)
			cliNoFile(t, out)
		})
	}
}

// cliMeanSD returns the sample mean and standard deviation of xs.
func cliMeanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m) / float64(len(xs)-1)
	}
	return m, math.Sqrt(v)
}

// cliAssignments returns theta (natural units) as --params of the task of spec.
func cliAssignments(spec models.Spec, theta []float64) string {
	s := ""
	for i, name := range spec.ParamNames() {
		if i > 0 {
			s += ","
		}
		s += name + "=" + strconv.FormatFloat(theta[i], 'g', -1, 64)
	}
	return s
}
