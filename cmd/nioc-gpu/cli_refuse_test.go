package main

// Tests that the command refuses what would be silently meaningless: resuming a fit with other
// settings, replacing an output without --force, and a run in which no subject could be
// evaluated or fitted. Single flag checks are rows of the other cli_*_test.go files' tables.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIFitResumeOtherSettings: --resume of a results file written with other settings is an
// error listing every difference, and leaves the file as it was.
func TestCLIFitResumeOtherSettings(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--steps", "5", "--subjects", "2")
	out := filepath.Join(dir, "r.jsonl")
	cliFit(t, data, out, "--shard", "1/2") // restarts 2, seed 1, max-iter 5, the defaults otherwise
	rec := cliReadJSONL(t, out)[0]
	for key, want := range map[string]any{"seed": 1.0, "max_iter": 5.0, "linearize": "data", "planner": "full"} {
		assert.Equal(t, want, rec[key], "the record says how it was fitted: %s", key)
	}
	before := cliHash(t, out)
	for _, tc := range []struct {
		name string
		args []string
		msgs []string // the differences listed
	}{
		{"restarts", []string{"--restarts", "3"}, []string{"restarts: 2 in the file, 3 now"}},
		{"seed", []string{"--seed", "2"}, []string{"seed: 1 in the file, 2 now"}},
		{"max-iter", []string{"--max-iter", "6"}, []string{"max-iter: 5 in the file, 6 now"}},
		{"method", []string{"--method", "baseline"}, []string{"method: ours in the file, baseline now",
			"fitted parameters: action_cost,motor_noise,obs_noise,temperature in the file, action_cost,motor_noise now"}},
		{"observe", []string{"--observe", "full"}, []string{"observe: partial in the file, full now"}},
		{"planner", []string{"--planner", "partial"}, []string{"planner: full in the file, partial now"}},
		{"linearize", []string{"--linearize", "mean"}, []string{"linearize: data in the file, mean now"}},
		{"likelihood options", []string{"--ignore-gaps", "--nominal-filter", "--belief-prior", "0.5", "--first-order-noise", "--jitter", "1e-6"},
			[]string{"likelihood options: defaults in the file, first-order-noise,ignore-gaps,nominal-filter,jitter=1e-06,belief-prior=0.5 now"}},
		{"fitted parameters", []string{"--infer", "action_cost"},
			[]string{"fitted parameters: action_cost,motor_noise,obs_noise,temperature in the file, action_cost now"}},
		{"fixed temperature", []string{"--temperature", "task"}, []string{"fitted parameters: ", "in the file, action_cost,motor_noise,obs_noise now"}},
		{"uncertainty", []string{"--uncertainty", "hessian"}, []string{"uncertainty: bootstrap 25x1 ours,ours-nonoise,iter10,nofeedforward,ours-nonoise+iter10+nofeedforward in the file, hessian now"}},
		{"several", []string{"--seed", "3", "--restarts", "4"}, []string{"restarts: 2 in the file, 4 now", "seed: 1 in the file, 3 now"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"fit"}, cliFitArgs...)
			r := cliRun(t, append(append(a, "--data", data, "--out", out, "--resume"), tc.args...)...)
			cliRequireFail(t, r, 1, append([]string{out + " holds results of a run with other settings or data for 1 subject(s)", "subject 1:"}, tc.msgs...)...)
			assert.Equal(t, before, cliHash(t, out), "the results file is untouched")
		})
	}

	// A file written before the records held planner, linearize, seed and max_iter resumes:
	// what it does not record is not compared.
	t.Run("earlier version's file", func(t *testing.T) {
		old := filepath.Join(t.TempDir(), "old.jsonl")
		var sb strings.Builder
		for _, rec := range cliReadJSONL(t, out) {
			for _, k := range []string{"planner", "linearize", "seed", "max_iter"} {
				delete(rec, k)
			}
			line, err := json.Marshal(rec)
			require.NoError(t, err)
			sb.Write(append(line, '\n'))
		}
		require.NoError(t, os.WriteFile(old, []byte(sb.String()), 0o644))
		r := cliFit(t, data, old, "--resume", "--seed", "9")
		assert.Contains(t, r.stderr, "resuming: 1 subject(s)")
		recs := cliBySubject(t, cliReadJSONL(t, old))
		assert.NotContains(t, recs["1"], "seed")
		assert.Equal(t, 9.0, recs["2"]["seed"])
	})
}

// TestCLIRefusesToReplace: simulate, grid and plot --errors leave an existing output alone
// unless given --force.
func TestCLIRefusesToReplace(t *testing.T) {
	dir := t.TempDir()
	lin := cliSimulate(t, dir, "lin.csv", "--task", "linear", "--trials", "2", "--steps", "5")
	// A minimal finished evaluation for plot --errors.
	evalDir := filepath.Join(dir, "eval")
	require.NoError(t, os.Mkdir(evalDir, 0o755))
	cliWriteFile(t, evalDir, "config.json", `{"task":"linear","observe":"partial","methods":["ours"]}`)
	cliWriteFile(t, evalDir, "estimates.csv", "set,method,param,truth,estimate,abs_rel_error\nset001,ours,action_cost,0.1,0.12,0.2\n")

	for _, tc := range []struct {
		name     string
		args     []string // OUT is replaced by the output path
		out      string   // the output's name
		existing string   // the file that exists: out or one written beside it
		hint     string
	}{
		{"simulate", []string{"simulate", "--task", "linear", "--trials", "1", "--steps", "2", "--out", "OUT"}, "sim.csv", "sim.csv", "--force"},
		{"grid csv", []string{"grid", "--task", "linear", "--data", lin, "--vary", "action_cost:0.01:1,motor_noise:0.01:0.1", "--n", "2", "--out", "OUT"},
			"grid.csv", "grid.csv", "--force"},
		{"grid png", []string{"grid", "--task", "linear", "--data", lin, "--vary", "action_cost:0.01:1,motor_noise:0.01:0.1", "--n", "2", "--out", "OUT"},
			"grid.csv", "grid.png", "--force"},
		{"plot --errors", []string{"plot", "--errors", "OUT", evalDir}, "errors.png", "errors.png", "--force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(tmp, tc.out)
			existing := cliWriteFile(t, tmp, tc.existing, "precious")
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "OUT", out)
			}
			cliRequireFail(t, cliRun(t, args...), 2, existing+" exists", tc.hint)
			assert.Equal(t, "precious", string(mustRead(t, existing)), "untouched")
			if tc.existing != tc.out {
				cliNoFile(t, out)
			}

			// --force replaces it.
			cliOK(t, append(args[:1:1], append([]string{"--force"}, args[1:]...)...)...)
			assert.NotEqual(t, "precious", string(mustRead(t, existing)))
		})
	}
}

// TestCLIOutKind: a command that writes a file refuses an --out that is an existing directory
// at once, with or without --force or --resume, and a command that writes in a directory
// refuses an --out that is an existing file.
func TestCLIOutKind(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2", "--steps", "5")
	outDir := filepath.Join(dir, "out")
	require.NoError(t, os.Mkdir(outDir, 0o755))
	outFile := cliWriteFile(t, dir, "out.txt", "precious")
	isDir := "--out " + outDir + " is a directory; give a file name"
	isFile := "--out " + outFile + " is a file, not a directory; give a directory name"
	vary := []string{"--vary", "action_cost:0.01:1,motor_noise:0.01:0.1", "--n", "2"}
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"simulate", []string{"simulate", "--task", "linear", "--out", outDir}, isDir},
		{"simulate --force", []string{"simulate", "--task", "linear", "--force", "--out", outDir}, isDir},
		{"grid", append([]string{"grid", "--task", "linear", "--data", data, "--out", outDir}, vary...), isDir},
		{"grid --force", append([]string{"grid", "--task", "linear", "--data", data, "--force", "--out", outDir}, vary...), isDir},
		{"fit", []string{"fit", "--task", "linear", "--data", data, "--out", outDir}, isDir},
		{"fit --resume", []string{"fit", "--task", "linear", "--data", data, "--resume", "--out", outDir}, isDir},
		{"plot --errors --force", []string{"plot", "--errors", outDir, "--force", dir}, "--errors " + outDir + " is a directory; give a file name"},
		{"merge", []string{"merge", "--out", outDir, data}, outDir + " is a directory; give a file name"},
		{"sample", []string{"sample", "--task", "linear", "--data", data, "--out", outFile}, isFile},
		{"sample --force", []string{"sample", "--task", "linear", "--data", data, "--force", "--out", outFile}, isFile},
		{"sample --resume", []string{"sample", "--task", "linear", "--data", data, "--resume", "--out", outFile}, isFile},
		{"eval", []string{"eval", "--task", "linear", "--out", outFile}, isFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cliRequireFail(t, cliRun(t, tc.args...), 2, tc.msg)
			assert.Equal(t, "precious", string(mustRead(t, outFile)), "untouched")
			entries, err := os.ReadDir(outDir)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing written in the directory")
		})
	}
}

// TestCLINoSubjectEvaluated: loglik and fit fail (exit 1) when no subject could be evaluated
// or fitted, and report the subjects that failed when others did not.
func TestCLINoSubjectEvaluated(t *testing.T) {
	dir := t.TempDir()
	good := cliSimulate(t, dir, "good.csv", "--task", "linear", "--trials", "2", "--steps", "5", "--subjects", "2")
	// absurd returns good with the first trial of the given subjects made impossible: its
	// likelihood is not finite anywhere.
	absurd := func(name string, subjects ...string) string {
		rows := cliReadCSV(t, good)
		var sb strings.Builder
		sb.WriteString(strings.Join(rows[0], ",") + "\n")
		for _, row := range rows[1:] {
			if row[1] == "0" && row[2] != "0" && strings.Contains(","+strings.Join(subjects, ",")+",", ","+row[0]+",") {
				row[3] = "1e300"
			}
			sb.WriteString(strings.Join(row, ",") + "\n")
		}
		return cliWriteFile(t, dir, name, sb.String())
	}
	allBad := absurd("all.csv", "1", "2")
	oneBad := absurd("one.csv", "2")
	// The linear task with a plausible range wide enough for 1e300, which reading the data
	// would refuse otherwise: the value reaches the likelihood.
	task, err := os.ReadFile(cliExampleTask("linear"))
	require.NoError(t, err)
	wide := cliWriteFile(t, dir, "wide.toml", strings.Replace(string(task), "horizon = 20", "horizon = 20\nstate_bound = 1e301", 1))
	fitArgs := []string{"fit", "--task-file", wide, "--restarts", "2", "--max-iter", "5", "--quiet"}

	for _, tc := range []struct {
		name   string
		args   []string // OUT is replaced by a results path
		code   int
		stderr []string
		lines  int // JSON lines on stdout when it succeeds
		// nonFinite is the line of stdout whose log-likelihood and gradient are not finite,
		// written as strings; -1 if none.
		nonFinite int
	}{
		{"loglik, every subject", []string{"loglik", "--task-file", wide, "--data", allBad}, 1,
			[]string{"no subject could be evaluated", allBad, "subject 1: ", "subject 2: "}, 0, -1},
		{"loglik, one subject", []string{"loglik", "--task-file", wide, "--data", oneBad}, 0,
			[]string{"warning: log-likelihood not finite for subject 2"}, 2, 1},
		{"fit, every subject", append(slices.Clone(fitArgs), "--data", allBad, "--out", "OUT"), 1,
			[]string{"no subject could be fitted: all 2 failed", "subject 1: ", "subject 2: "}, 0, -1},
		{"fit, one subject", append(slices.Clone(fitArgs), "--data", oneBad, "--out", "OUT"), 0,
			[]string{"done: 2 subject(s)", "(1 could not be fitted)", "subject 2: "}, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.jsonl")
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "OUT", out)
			}
			r := cliRun(t, args...)
			if tc.code != 0 {
				cliRequireFail(t, r, tc.code, tc.stderr...)
				return
			}
			require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
			for _, m := range tc.stderr {
				assert.Contains(t, r.stderr, m)
			}
			lines := cliJSONLines(t, r.stdout)
			require.Len(t, lines, tc.lines)
			if tc.nonFinite >= 0 {
				nonFinite := []any{"NaN", "-Inf", "+Inf"}
				assert.Contains(t, nonFinite, lines[tc.nonFinite]["loglik"], "non-finite values are written as strings")
				for name, g := range lines[tc.nonFinite]["grad"].(map[string]any) {
					if _, isNum := g.(float64); !isNum {
						assert.Contains(t, nonFinite, g, "grad.%s", name)
					}
				}
				cliFinite(t, lines[1-tc.nonFinite]["loglik"], "the other subject's loglik")
			}
		})
	}
}
