package main

// Tests of what a user reads (issue 13, "Reading the results"): the fields of fit's records
// and table, records of earlier versions, each command's help, and data beyond a task's
// plausible range.

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIFitReadingResults: estimates and fixed parameters are apart, stderr_scaled and
// ci95_scaled are in the fitting scale named in scale, and ci95_natural is the same interval
// in natural units; the CSV says the same. (With --uncertainty robust, whose interval is
// θ̂ ± 1.96 SE; the default bootstrap's is checked in package fit.)
func TestCLIFitReadingResults(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "20")
	out := filepath.Join(dir, "r.jsonl")
	cliOK(t, "fit", "--task", "linear", "--data", data, "--restarts", "2", "--quiet", "--out", out,
		"--fix", "motor_noise=0.05", "--temperature", "task", "--uncertainty", "robust")
	recs := cliReadJSONL(t, out)
	require.Len(t, recs, 1)
	rec := recs[0]
	fitted := []string{"action_cost", "obs_noise"}
	assert.Equal(t, []any{"action_cost", "obs_noise"}, rec["fitted"])
	assert.Equal(t, map[string]any{"motor_noise": 0.05}, rec["fixed"], "the held parameter, with its value")
	params := rec["params"].(map[string]any)
	assert.Len(t, params, len(fitted), "params holds the estimates only: %v", params)
	assert.Equal(t, map[string]any{"action_cost": "log10", "obs_noise": "log10"}, rec["scale"])
	for _, old := range []string{"stderr", "ci95"} {
		assert.NotContains(t, rec, old, "the scale is in the field's name")
	}
	require.Equal(t, true, rec["hessian_pd"], "20 trials of the linear task give a positive definite Hessian")
	se := rec["stderr_scaled"].(map[string]any)
	ciS := rec["ci95_scaled"].(map[string]any)
	ciN := rec["ci95_natural"].(map[string]any)
	for _, name := range fitted {
		est := cliFinite(t, params[name], name)
		s := cliFinite(t, se[name], "stderr_scaled."+name)
		lo, hi := cliFinite(t, ciS[name].([]any)[0], "lo"), cliFinite(t, ciS[name].([]any)[1], "hi")
		assert.InDelta(t, math.Log10(est)-1.959964*s, lo, 1e-5, "%s: θ̂ − 1.96 SE in log10", name)
		assert.InDelta(t, math.Log10(est)+1.959964*s, hi, 1e-5, "%s: θ̂ + 1.96 SE in log10", name)
		nlo, nhi := cliFinite(t, ciN[name].([]any)[0], "lo"), cliFinite(t, ciN[name].([]any)[1], "hi")
		assert.InEpsilon(t, math.Pow(10, lo), nlo, 1e-12, "%s: natural ends are 10^ends", name)
		assert.InEpsilon(t, math.Pow(10, hi), nhi, 1e-12, "%s: natural ends are 10^ends", name)
		assert.True(t, nlo < est && est < nhi, "%s: %g in [%g, %g]", name, est, nlo, nhi)
		assert.NotContains(t, se, "motor_noise", "no standard error of a fixed parameter")
	}

	rows := cliReadCSV(t, filepath.Join(dir, "r.csv"))
	require.Len(t, rows, 2)
	col := func(name string) string {
		i := slices.Index(rows[0], name)
		require.GreaterOrEqual(t, i, 0, "column %s in %v", name, rows[0])
		return rows[1][i]
	}
	assert.Empty(t, col("motor_noise"), "a fixed parameter is no estimate")
	assert.Equal(t, "0.05", col("motor_noise_fixed"))
	assert.Empty(t, col("motor_noise_stderr_scaled"))
	assert.Empty(t, col("action_cost_fixed"))
	assert.Equal(t, "log10", col("action_cost_scale"))
	assert.Equal(t, params["action_cost"], cliParseFloat(t, col("action_cost"), "action_cost"))
	assert.Equal(t, se["action_cost"], cliParseFloat(t, col("action_cost_stderr_scaled"), "stderr"))
	assert.Equal(t, ciS["action_cost"].([]any)[0], cliParseFloat(t, col("action_cost_ci95_scaled_lo"), "lo"))
	assert.Equal(t, ciN["action_cost"].([]any)[1], cliParseFloat(t, col("action_cost_ci95_natural_hi"), "hi"))
}

// oldRecord is a record as versions before issue 13 wrote it: stderr and ci95 without the
// scale in their names, and params holding the fixed obs_noise like an estimate.
const oldRecord = `{"subject":"1","task":"linear","method":"ours","observe":"full",` +
	`"params":{"action_cost":0.1,"motor_noise":0.05,"obs_noise":0.2,"temperature":0.001},` +
	`"fitted":["action_cost","motor_noise","temperature"],` +
	`"scale":{"action_cost":"log10","motor_noise":"log10","temperature":"log10"},"loglik":10,` +
	`"stderr":{"action_cost":0.5,"motor_noise":0.1,"temperature":0.2},` +
	`"ci95":{"action_cost":[-2,0],"motor_noise":[-1.5,-1.1],"temperature":[-3.5,-2.5]},` +
	`"hessian_pd":true,"aic":0,"bic":1,"restarts_at_best":1,"restarts":2,"evaluations":9,"converged":true,"trials":3,"seconds":1}`

// TestCLIMergeOldRecords: records of earlier versions are read with their meaning: merge
// writes them with the new names, fixed parameters apart and intervals in natural units.
func TestCLIMergeOldRecords(t *testing.T) {
	dir := t.TempDir()
	old := cliWriteFile(t, dir, "old.jsonl", oldRecord+"\n")
	out := filepath.Join(dir, "m.jsonl")
	cliOK(t, "merge", "--out", out, old)
	recs := cliReadJSONL(t, out)
	require.Len(t, recs, 1)
	rec := recs[0]
	assert.Equal(t, map[string]any{"obs_noise": 0.2}, rec["fixed"])
	assert.NotContains(t, rec["params"], "obs_noise")
	assert.Equal(t, 0.5, rec["stderr_scaled"].(map[string]any)["action_cost"])
	assert.Equal(t, []any{-2.0, 0.0}, rec["ci95_scaled"].(map[string]any)["action_cost"])
	assert.Equal(t, []any{0.01, 1.0}, rec["ci95_natural"].(map[string]any)["action_cost"])
	assert.NotContains(t, rec, "stderr")
	rows := cliReadCSV(t, filepath.Join(dir, "m.csv"))
	require.Len(t, rows, 2)
	assert.Equal(t, "0.2", rows[1][slices.Index(rows[0], "obs_noise_fixed")])

	// --resume of an earlier version's file keeps its subject and writes the table anew.
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--subjects", "2")
	res := cliWriteFile(t, dir, "res.jsonl", oldRecord+"\n")
	r := cliOK(t, "fit", "--task", "linear", "--data", data, "--restarts", "2", "--max-iter", "5", "--quiet",
		"--observe", "full", "--out", res, "--resume")
	assert.Contains(t, r.stderr, "resuming: 1 subject(s) already in")
	rows = cliReadCSV(t, filepath.Join(dir, "res.csv"))
	require.Len(t, rows, 3)
	assert.Equal(t, []string{"1", "0.2"}, []string{rows[1][0], rows[1][slices.Index(rows[0], "obs_noise_fixed")]})
	assert.Equal(t, "0.01", rows[1][slices.Index(rows[0], "action_cost_ci95_natural_lo")])
}

// TestCLIHelpListsOnlyUsedFlags: a command's help lists the flags it uses and none that it
// would ignore.
func TestCLIHelpListsOnlyUsedFlags(t *testing.T) {
	likelihoodFlags := []string{"method", "linearize", "temperature", "form", "first-order-noise", "ignore-gaps", "nominal-filter", "belief-prior", "jitter"}
	subjectFlags := []string{"data", "infer", "fix", "resume", "shard", "quiet", "max-batch"}
	for _, tc := range []struct {
		command    string
		has, lacks []string
	}{
		{"simulate", []string{"task", "task-file", "observe", "planner", "backend", "params", "trials", "subjects", "steps", "seed", "temperature", "out", "force"},
			slices.Concat([]string{"method", "linearize", "form", "first-order-noise", "ignore-gaps", "nominal-filter", "belief-prior", "jitter"}, subjectFlags, []string{"restarts", "max-iter", "checkpoint-every", "chains"})},
		{"loglik", slices.Concat([]string{"task", "data", "params", "observe", "planner", "backend"}, likelihoodFlags),
			[]string{"restarts", "max-iter", "seed", "out", "force", "infer", "fix", "resume", "shard", "quiet", "max-batch", "checkpoint-every", "trials", "subjects", "steps"}},
		{"grid", slices.Concat([]string{"data", "vary", "n", "truth", "batch", "subject", "out", "force"}, likelihoodFlags),
			[]string{"restarts", "max-iter", "seed", "infer", "fix", "resume", "shard", "quiet"}},
		{"fit", slices.Concat([]string{"restarts", "seed", "max-iter", "checkpoint-every"}, likelihoodFlags, subjectFlags),
			[]string{"force", "params", "trials", "subjects", "steps", "chains", "draws", "vary", "truth"}},
		{"sample", slices.Concat([]string{"chains", "warmup", "draws", "prior", "init", "fit-restarts", "force", "seed"}, likelihoodFlags, subjectFlags),
			[]string{"restarts", "max-iter", "checkpoint-every", "params", "trials"}},
		{"eval", []string{"sets", "methods", "linearize", "restarts", "max-iter", "observe", "backend", "shard", "quiet", "truth", "out"},
			[]string{"planner", "method", "form", "first-order-noise", "ignore-gaps", "nominal-filter", "belief-prior", "jitter", "temperature", "data", "infer", "fix", "resume", "force", "max-batch", "checkpoint-every"}},
		{"compare", []string{"task", "task-file", "truth"}, []string{"observe", "planner", "backend", "method", "data", "out"}},
		{"merge", []string{"out"}, []string{"task", "observe", "backend", "force", "data"}},
		{"tasks", []string{"json", "task-file"}, []string{"task", "observe", "backend"}},
		{"plot", []string{"out", "errors", "backend", "force"}, []string{"task", "observe", "restarts"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			r := cliOK(t, tc.command, "-h")
			var listed []string
			for _, m := range regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+)`).FindAllStringSubmatch(r.stderr, -1) {
				listed = append(listed, m[1])
			}
			sort.Strings(listed)
			for _, f := range tc.has {
				assert.Contains(t, listed, f, "%s -h lists --%s", tc.command, f)
			}
			for _, f := range tc.lacks {
				assert.NotContains(t, listed, f, "%s -h must not list --%s, which it does not use", tc.command, f)
			}
		})
	}
	// And one that is not listed is not accepted either.
	cliRequireFail(t, cliRun(t, "eval", "--task", "linear", "--planner", "partial", "--out", t.TempDir()), 2,
		"flag provided but not defined: -planner")
}

// TestCLIDataImplausible: a finite value beyond the task's plausible range is an error naming
// the file, line and column; a task file may set the range (state_bound), and tasks shows it.
func TestCLIDataImplausible(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2")
	lines := cliLines(t, data)
	fields := strings.Split(lines[3], ",") // line 4 of the file
	fields[len(fields)-1] = "1e300"        // vel
	lines[3] = strings.Join(fields, ",")
	bad := cliWriteFile(t, dir, "bad.csv", strings.Join(lines, "\n")+"\n")
	for _, args := range [][]string{
		{"loglik", "--task", "linear", "--data", bad},
		{"fit", "--task", "linear", "--data", bad, "--restarts", "1", "--quiet", "--out", filepath.Join(dir, "r.jsonl")},
		{"grid", "--task", "linear", "--data", bad, "--vary", "action_cost:0.01:1,obs_noise:0.1:1", "--n", "2", "--out", filepath.Join(dir, "g.csv")},
	} {
		t.Run(args[0], func(t *testing.T) {
			cliRequireFail(t, cliRun(t, args...), 1,
				bad+` line 4, column "vel": value 1e300 is beyond the plausible range of the states, |x| <= 1e+06`, "task linear", "state_bound")
		})
	}

	task, err := os.ReadFile(cliExampleTask("linear"))
	require.NoError(t, err)
	tight := cliWriteFile(t, dir, "tight.toml", strings.Replace(string(task), "horizon = 20", "horizon = 20\nstate_bound = 0.5", 1))
	r := cliRun(t, "loglik", "--task-file", tight, "--data", data)
	cliRequireFail(t, r, 1, data+` line 2, column "pos": value 1 is beyond the plausible range of the states, |x| <= 0.5`)
	cliOK(t, "loglik", "--task-file", cliExampleTask("linear"), "--data", data)

	r = cliOK(t, "tasks", "--json", "--task-file", tight)
	assert.Contains(t, r.stdout, `"state_bound": 0.5`)
	r = cliOK(t, "tasks", "--json")
	assert.Contains(t, r.stdout, `"state_bound": 1000000`)
}
