package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliLoopedBudget is a --max-memory that makes the linear task's short trials run in the
// looped form: the process's own allowance in the plan (300 MiB) and 1 MiB more, less than the
// unrolled graph is planned to take beside it but room for a few looped trajectories a run.
const cliLoopedBudget = "301MiB"

// cliLoopedNote is what a command says on stderr when --max-memory chose the looped form.
const cliLoopedNote = "the looped form runs instead"

// keepMemoryLimit restores the runtime's memory limit when the test ends: --max-memory lowers
// it for the whole process, and the tests share one.
func keepMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

// TestCLIMaxMemoryFlag: sample, sample --population and population take fit's --max-memory:
// a value that is no size is a usage error of one line, and a budget that holds no trajectory
// is a usage error that says what it needs, before any work.
func TestCLIMaxMemoryFlag(t *testing.T) {
	keepMemoryLimit(t)
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2", "--steps", "5")
	const notSize = `--max-memory: want a size such as 1.5GB or 800MB, auto, or 0 for no budget, got "lots"`
	for _, tc := range []struct {
		name    string
		args    []string
		command string
	}{
		{"sample", []string{"sample", "--max-memory", "lots"}, "sample"},
		{"sample --population", []string{"sample", "--population", dir, "--max-memory", "lots"}, "sample"},
		{"population", []string{"population", "--max-memory", "-1GB"}, "population"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cliRun(t, tc.args...)
			msg := notSize
			if tc.name == "population" {
				msg = `--max-memory: want a size such as 1.5GB or 800MB, auto, or 0 for no budget, got "-1GB"`
			}
			cliRequireFail(t, r, 2, msg)
			assert.Equal(t, "nioc-gpu "+tc.command+": "+msg+"\nrun `nioc-gpu "+tc.command+" -h` for help\n", r.stderr)
		})
	}
	for _, cmd := range [][]string{
		{"sample", "--task", "linear", "--data", data, "--out", filepath.Join(dir, "post")},
		{"population", "--task", "linear", "--data", data, "--out", filepath.Join(dir, "pop")},
	} {
		t.Run(cmd[0]+" budget too small", func(t *testing.T) {
			r := cliRun(t, append(cmd, "--max-memory", "10MB")...)
			cliRequireFail(t, r, 2, "--max-memory: a memory budget of 10 MB holds no trajectory of 5 steps of task linear: it needs at least")
			assert.NoFileExists(t, filepath.Join(dir, "post", "draws.csv"))
		})
	}
	for _, cmd := range []string{"sample", "population"} {
		r := cliRun(t, cmd, "-h")
		require.Equal(t, 0, r.code)
		assert.Contains(t, r.stderr, "[--max-memory auto|SIZE]", "%s's usage line", cmd)
		assert.Contains(t, r.stderr, "  --max-memory auto|SIZE\n", "%s's help", cmd)
	}
}

// TestCLISampleMaxMemory: a budget that makes sample evaluate the likelihood in the looped
// form, fewer trajectories a run, says so and draws what it draws without one (the same seed):
// the forms' log-likelihoods agree to about 1e-13, which the step size's adaptation over the
// warm-up carries to about 2e-9 (measured), so cells are compared to 1e-7.
func TestCLISampleMaxMemory(t *testing.T) {
	keepMemoryLimit(t)
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--steps", "5", "--subjects", "2")
	free := cliSample(t, data, filepath.Join(dir, "free"), "--max-memory", "0")
	assert.NotContains(t, free.stderr, cliLoopedNote)
	bounded := cliSample(t, data, filepath.Join(dir, "bounded"), "--max-memory", cliLoopedBudget)
	assert.Contains(t, bounded.stderr, "note: trials of 5 steps: the unrolled graph would take about")
	assert.Contains(t, bounded.stderr, cliLoopedNote)
	a := cliReadCSV(t, filepath.Join(dir, "free", "draws.csv"))
	b := cliReadCSV(t, filepath.Join(dir, "bounded", "draws.csv"))
	cliSameTable(t, a, b, 1e-7)
	require.Len(t, a, 1+2*2*15)
}

// TestCLIPopulationMaxMemory: population and sample --population under a budget that makes
// them evaluate the likelihood in the looped form give the estimates, log marginal
// likelihood and draws that they give without one.
func TestCLIPopulationMaxMemory(t *testing.T) {
	keepMemoryLimit(t)
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--subjects", "4", "--trials", "3", "--steps", "8", "--seed", "3")
	common := []string{"--task", "linear", "--data", data}
	var reps [2]map[string]any
	var draws [2][][]string
	for i, budget := range []string{"0", cliLoopedBudget} {
		pop := filepath.Join(dir, "pop"+strconv.Itoa(i))
		r := cliOK(t, append(append([]string{"population"}, common...), "--infer", "obs_noise,motor_noise", "--restarts", "2", "--quiet",
			"--max-memory", budget, "--out", pop)...)
		assert.Equal(t, i == 1, strings.Contains(r.stderr, cliLoopedNote), "population --max-memory %s:\n%s", budget, r.stderr)
		raw, err := os.ReadFile(filepath.Join(pop, popJSON))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &reps[i]))
		hier := filepath.Join(dir, "hier"+strconv.Itoa(i))
		r = cliOK(t, append(append([]string{"sample", "--population", pop}, common...), "--chains", "2", "--warmup", "20", "--draws", "10",
			"--max-depth", "4", "--max-memory", budget, "--out", hier)...)
		assert.Equal(t, i == 1, strings.Contains(r.stderr, cliLoopedNote), "sample --population --max-memory %s:\n%s", budget, r.stderr)
		draws[i] = cliReadCSV(t, filepath.Join(hier, hierDraws))
	}
	assert.InEpsilon(t, reps[0]["log_marginal"], reps[1]["log_marginal"], 1e-9)
	ea, eb := reps[0]["effects"].([]any), reps[1]["effects"].([]any)
	require.Len(t, eb, len(ea))
	for i := range ea {
		x, y := ea[i].(map[string]any), eb[i].(map[string]any)
		assert.InDelta(t, x["estimate"], y["estimate"], 1e-8, "effect %v", x["param"])
		assert.InDelta(t, x["se"], y["se"], 1e-8, "effect %v", x["param"])
	}
	cliSameTable(t, draws[0], draws[1], 1e-9)
}

// cliSameTable checks that two CSV tables have the same header and shape and the same cells:
// numbers within tol (relative, absolute near 0), other text equal.
func cliSameTable(t *testing.T, a, b [][]string, tol float64) {
	t.Helper()
	require.Equal(t, len(a), len(b), "rows")
	require.NotEmpty(t, a)
	assert.Equal(t, a[0], b[0], "header")
	bad := 0
	for i := 1; i < len(a); i++ {
		require.Equal(t, len(a[i]), len(b[i]), "row %d", i)
		for j := range a[i] {
			x, errX := strconv.ParseFloat(a[i][j], 64)
			y, errY := strconv.ParseFloat(b[i][j], 64)
			same := a[i][j] == b[i][j]
			if errX == nil && errY == nil {
				same = same || math.Abs(x-y) <= tol*math.Max(1, math.Abs(x))
			}
			if !same && bad < 5 {
				t.Errorf("row %d, column %s: %s against %s", i, a[0][j], a[i][j], b[i][j])
			}
			if !same {
				bad++
			}
		}
	}
	assert.Zero(t, bad, "cells that differ")
}
