package main

import (
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLISimulateVaryLength: simulate --vary-length lo:hi writes trials whose steps are drawn
// from lo..hi by the seed, each starting at the task's x0, and says so.
func TestCLISimulateVaryLength(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--task", "pendulum", "--trials", "6", "--subjects", "2", "--vary-length", "3:8", "--seed", "5"}
	a := filepath.Join(dir, "a.csv")
	r := cliOK(t, append([]string{"simulate", "--out", a}, args...)...)
	assert.Contains(t, r.stderr, "2 subject(s) × 6 trials × 3..8 steps (drawn uniformly; the agent plans over each trial's own length)")
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	spec := m.Spec()
	set, err := data.Read(a, spec.States)
	require.NoError(t, err)
	require.Len(t, set.Subjects, 2)
	lengths := map[int]bool{}
	for _, s := range set.Subjects {
		require.Len(t, s.Trials, 6)
		for _, tr := range s.Trials {
			T := len(tr.States) - 1
			assert.True(t, T >= 3 && T <= 8, "trial of %d steps", T)
			assert.Equal(t, spec.X0, tr.States[0])
			lengths[T] = true
		}
	}
	assert.Greater(t, len(lengths), 1, "lengths differ")
	lo, hi := set.StepRange()
	assert.Equal(t, hi, set.Steps)
	assert.GreaterOrEqual(t, lo, 3)

	b := cliSimulate(t, dir, "b.csv", args...)
	assert.Equal(t, cliHash(t, a), cliHash(t, b), "the same seed gives the same file")
	c := cliSimulate(t, dir, "c.csv", append(args[:len(args)-1], "6")...)
	assert.NotEqual(t, cliHash(t, a), cliHash(t, c), "another seed, other trials")

	one := cliSimulate(t, dir, "one.csv", "--task", "linear", "--trials", "2", "--vary-length", "4:4")
	set, err = data.Read(one, []string{"pos", "vel"})
	require.NoError(t, err)
	assert.Equal(t, 4, set.Steps)
}

// TestCLISimulateVaryLengthErrors: a malformed --vary-length is a usage error.
func TestCLISimulateVaryLengthErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.csv")
	for _, tc := range []struct {
		spec string
		msgs []string
	}{
		{"", []string{`--vary-length must be lo:hi`, `got ""`}},
		{"30", []string{`--vary-length must be lo:hi`, "30:50"}},
		{"a:b", []string{`got "a:b"`}},
		{"3:5:7", []string{`got "3:5:7"`}},
		{"0:5", []string{"1 <= lo <= hi", `got "0:5"`}},
		{"8:3", []string{"1 <= lo <= hi", `got "8:3"`}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			r := cliRun(t, "simulate", "--task", "linear", "--trials", "2", "--vary-length", tc.spec, "--out", out)
			cliRequireFail(t, r, 2, tc.msgs...)
			cliNoFile(t, out)
		})
	}
	r := cliRun(t, "simulate", "--task", "linear", "--steps", "5", "--vary-length", "3:5", "--out", out)
	cliRequireFail(t, r, 2, "--steps and --vary-length exclude each other")
}

// TestCLILengthNotice: loglik, fit and grid evaluate trials of their own length and say on
// stderr when the trials' length differs from the task's horizon, and what the agent plans
// over; data of the task's length get no notice.
func TestCLILengthNotice(t *testing.T) {
	dir := t.TempDir()
	varying := cliSimulate(t, dir, "varying.csv", "--task", "linear", "--trials", "4", "--vary-length", "3:8")
	short := cliSimulate(t, dir, "short.csv", "--task", "linear", "--trials", "2", "--steps", "6")
	full := cliSimulate(t, dir, "full.csv", "--task", "linear", "--trials", "2")

	r := cliOK(t, "loglik", "--task", "linear", "--data", varying)
	assert.Contains(t, r.stderr, "notice: the trials of "+varying+" have ")
	assert.Contains(t, r.stderr, "steps, the task linear's horizon is 20; its agent plans over each trial's own length")
	lines := cliJSONLines(t, r.stdout)
	require.Len(t, lines, 1)
	cliFinite(t, lines[0]["loglik"], "loglik")
	assert.Equal(t, 4.0, lines[0]["trials"])

	r = cliOK(t, "loglik", "--task", "linear", "--data", short)
	assert.Contains(t, r.stderr, "notice: the trials of "+short+" have 6 steps, the task linear's horizon is 20")
	r = cliOK(t, "loglik", "--task", "linear", "--data", full)
	assert.NotContains(t, r.stderr, "notice")

	out := filepath.Join(dir, "fit.jsonl")
	r = cliOK(t, "fit", "--task", "linear", "--data", varying, "--restarts", "1", "--max-iter", "2", "--quiet", "--out", out)
	assert.Contains(t, r.stderr, "notice: the trials of "+varying)
	require.Len(t, cliReadJSONL(t, out), 1)

	png := filepath.Join(dir, "grid.csv")
	r = cliOK(t, "grid", "--task", "linear", "--data", varying, "--vary", "action_cost:0.05:0.2,motor_noise:0.03:0.1", "--n", "2", "--out", png)
	assert.Contains(t, r.stderr, "notice: the trials of "+varying)
}
