package main

import (
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliExampleTask is the path of examples/tasks/<name>.toml.
func cliExampleTask(name string) string {
	return filepath.Join("..", "..", "examples", "tasks", name+".toml")
}

// TestCLITaskFileSaccadeRecovered: the example task that is not in the paper (an eye saccade)
// is simulated and fitted from its file alone, and the fit recovers its parameters with a
// median absolute relative error below 0.2 over three subjects.
func TestCLITaskFileSaccadeRecovered(t *testing.T) {
	dir := t.TempDir()
	task := cliExampleTask("saccade")
	data := cliSimulate(t, dir, "saccade.csv", "--task-file", task, "--subjects", "3", "--trials", "50", "--seed", "1")
	out := filepath.Join(dir, "fit.jsonl")
	cliOK(t, "fit", "--task-file", task, "--data", data, "--restarts", "5", "--quiet", "--out", out)
	truth := map[string]float64{"effort_cost": 1e-5, "motor_noise": 0.2, "obs_noise": 0.5}
	var errs []float64
	for _, rec := range cliReadJSONL(t, out) {
		assert.Equal(t, "saccade", rec["task"], "the record names the file's task")
		params := rec["params"].(map[string]any)
		for name, want := range truth {
			got := cliFinite(t, params[name], name)
			errs = append(errs, math.Abs(got-want)/want)
		}
	}
	require.Len(t, errs, 3*len(truth))
	sort.Float64s(errs)
	median := errs[len(errs)/2]
	t.Logf("median |rel. err.| %.3f over %d estimates", median, len(errs))
	assert.Less(t, median, 0.2)
	r := cliOK(t, "compare", "--task-file", task, out)
	assert.Contains(t, r.stdout, "median |rel. err.|")
}

// TestCLITaskFile: --task-file works wherever --task does, prints like a built-in task, and
// records the file's task name, so that results of a file task and of the built-in task it
// copies are interchangeable (same loglik output, resume and compare accept them).
func TestCLITaskFile(t *testing.T) {
	pendulum := cliExampleTask("pendulum")

	t.Run("tasks prints the file like a built-in task", func(t *testing.T) {
		all := cliOK(t, "tasks").stdout
		one := cliOK(t, "tasks", "--task-file", pendulum).stdout
		assert.True(t, strings.HasPrefix(one, "pendulum — "), one)
		assert.Contains(t, all, one, "the same section as the built-in pendulum's")
		js := cliOK(t, "tasks", "--json", "--task-file", pendulum).stdout
		assert.Contains(t, js, `"name": "pendulum"`)
		assert.NotContains(t, js, `"name": "reaching"`)
	})

	t.Run("loglik, fit, resume and compare", func(t *testing.T) {
		dir := t.TempDir()
		data := cliSimulate(t, dir, "p.csv", "--task", "pendulum", "--trials", "3", "--steps", "8")
		fromFile := cliSimulate(t, dir, "pf.csv", "--task-file", pendulum, "--trials", "3", "--steps", "8")
		assert.Equal(t, cliHash(t, data), cliHash(t, fromFile), "the file simulates the built-in pendulum bit for bit")
		want := cliOK(t, "loglik", "--task", "pendulum", "--data", data).stdout
		got := cliOK(t, "loglik", "--task-file", pendulum, "--data", data).stdout
		assert.Equal(t, want, got)

		out := filepath.Join(dir, "fit.jsonl")
		args := []string{"fit", "--task-file", pendulum, "--data", data, "--restarts", "2", "--max-iter", "3", "--quiet", "--out", out}
		cliOK(t, args...)
		r := cliOK(t, append(args, "--resume")...)
		assert.Contains(t, r.stderr, "1 subject(s) already")
		r = cliOK(t, "compare", "--task", "pendulum", out)
		assert.Contains(t, r.stderr, "another definition of task pendulum", "the task file's pendulum is not the built-in one")
		// Its results are not the built-in task's: a resume with it is refused.
		cliRequireFail(t, cliRun(t, "fit", "--task", "pendulum", "--data", data, "--restarts", "2", "--max-iter", "3", "--quiet", "--out", out, "--resume"),
			1, "task definition: sha256:", "builtin:pendulum now")
		cliRequireFail(t, cliRun(t, "compare", "--task-file", cliExampleTask("linear"), out), 1, "not of task linear")
	})

	t.Run("eval records the file and plot reads it", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ev")
		linear := cliExampleTask("linear")
		cliOK(t, "eval", "--task-file", linear, "--sets", "2", "--trials", "3", "--steps", "5", "--restarts", "1", "--max-iter", "3",
			"--methods", "ours", "--quiet", "--out", dir)
		abs, err := filepath.Abs(linear)
		require.NoError(t, err)
		assert.Contains(t, string(mustRead(t, filepath.Join(dir, "config.json"))), `"task_file": "`+abs+`"`)
		assert.Contains(t, cliOK(t, "plot", "--out", dir).stdout, "median")
	})

	t.Run("errors", func(t *testing.T) {
		dir := t.TempDir()
		cliRequireFail(t, cliRun(t, "simulate", "--task", "pendulum", "--task-file", pendulum, "--out", filepath.Join(dir, "x.csv")), 2,
			"--task and --task-file are mutually exclusive")
		bad := cliWriteFile(t, dir, "bad.toml", strings.Replace(string(mustRead(t, pendulum)), `"omega + obs_noise*w3"`, `"omegaa + obs_noise*w3"`, 1))
		r := cliRun(t, "loglik", "--task-file", bad, "--data", filepath.Join(dir, "none.csv"))
		cliRequireFail(t, r, 1, bad+":63:4: unknown symbol \"omegaa\" (did you mean \"omega\"?)")
		cliRequireFail(t, cliRun(t, "tasks", "--task-file", filepath.Join(dir, "missing.toml")), 1, "missing.toml")
		cycle := cliWriteFile(t, dir, "cycle.toml", strings.Replace(string(mustRead(t, cliExampleTask("linear"))), "[model]",
			"[define]\na = \"b + 1\"\nb = \"a * 2\"\n\n[model]", 1))
		cliRequireFail(t, cliRun(t, "simulate", "--task-file", cycle, "--out", filepath.Join(dir, "c.csv")), 1,
			cycle+":41:6: definitions refer to each other in a cycle: a → b → a")
	})
}
