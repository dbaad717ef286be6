package main

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

// cliFitArgs are the flags of a small, fast fit of the linear task.
var cliFitArgs = []string{"--task", "linear", "--restarts", "2", "--max-iter", "5", "--quiet"}

// cliFit fits data into out and returns the result.
func cliFit(t *testing.T, data, out string, args ...string) cliResult {
	t.Helper()
	a := append([]string{"fit"}, cliFitArgs...)
	a = append(a, "--data", data, "--out", out)
	return cliOK(t, append(a, args...)...)
}

// cliBySubject indexes results records by subject, requiring each subject once.
func cliBySubject(t *testing.T, recs []map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range recs {
		s, ok := r["subject"].(string)
		require.True(t, ok, "record without subject: %v", r)
		require.NotContains(t, out, s, "subject %s twice", s)
		out[s] = r
	}
	return out
}

// cliLines returns the lines of a file (without the newlines).
func cliLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, len(b) == 0 || b[len(b)-1] == '\n', "%s ends with a newline", path)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestCLIFit(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "4", "--subjects", "2")

	t.Run("results", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "results.jsonl")
		r := cliFit(t, data, out)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "fitting linear (ours, partial observability) to 2 subject(s)")
		// The policy noise's temperature is fitted by default, as a nuisance parameter.
		assert.Contains(t, r.stderr, "fitted: action_cost, motor_noise, obs_noise, temperature")
		assert.Contains(t, r.stderr, "done: 2 subject(s)")
		assert.NotContains(t, r.stderr, "\r", "no progress bar when stderr is not a terminal")

		recs := cliBySubject(t, cliReadJSONL(t, out))
		require.Len(t, recs, 2)
		params := []string{"action_cost", "motor_noise", "obs_noise", "temperature"}
		for _, s := range []string{"1", "2"} {
			rec, ok := recs[s]
			require.True(t, ok, "subject %s fitted", s)
			for _, key := range []string{"subject", "task", "method", "observe", "params", "fitted", "loglik", "aic", "bic",
				"restarts_at_best", "restarts", "evaluations", "converged", "seconds", "trials"} {
				assert.Contains(t, rec, key)
			}
			assert.Equal(t, "linear", rec["task"])
			assert.Equal(t, "ours", rec["method"])
			assert.Equal(t, "partial", rec["observe"])
			p := rec["params"].(map[string]any)
			for _, name := range params {
				v := cliFinite(t, p[name], "params."+name)
				assert.Greater(t, v, 0.0)
			}
			assert.ElementsMatch(t, params, rec["fitted"])
			ll := cliFinite(t, rec["loglik"], "loglik")
			aic := cliFinite(t, rec["aic"], "aic")
			bic := cliFinite(t, rec["bic"], "bic")
			assert.InDelta(t, 2*4-2*ll, aic, 1e-6, "AIC = 2k - 2 loglik")
			assert.Greater(t, bic, aic, "BIC penalizes more than AIC with 4 trials × 20 steps")
			best := cliFinite(t, rec["restarts_at_best"], "restarts_at_best")
			assert.GreaterOrEqual(t, best, 1.0)
			assert.LessOrEqual(t, best, 2.0)
			assert.Equal(t, 2.0, rec["restarts"])
			assert.Equal(t, 4.0, rec["trials"])
			assert.Greater(t, cliFinite(t, rec["evaluations"], "evaluations"), 0.0)
			assert.IsType(t, true, rec["converged"])
			assert.GreaterOrEqual(t, cliFinite(t, rec["seconds"], "seconds"), 0.0)
			assert.NotContains(t, rec, "fixed", "every parameter is fitted")
			if se, ok := rec["stderr_scaled"].(map[string]any); ok {
				for name, v := range se {
					assert.Contains(t, params, name)
					cliFinite(t, v, "stderr_scaled."+name)
				}
			}
			for _, key := range []string{"ci95_scaled", "ci95_natural"} {
				if ci, ok := rec[key].(map[string]any); ok {
					for name, v := range ci {
						iv := v.([]any)
						require.Len(t, iv, 2)
						assert.LessOrEqual(t, cliFinite(t, iv[0], key+" lo"), cliFinite(t, iv[1], key+" hi"), "%s.%s", key, name)
					}
				}
			}
		}

		rows := cliReadCSV(t, filepath.Join(filepath.Dir(out), "results.csv"))
		require.Len(t, rows, 3, "header and one row per subject")
		assert.Equal(t, "subject", rows[0][0])
		for _, col := range []string{"loglik", "aic", "bic", "restarts_at_best", "evaluations", "converged", "seconds",
			"action_cost", "action_cost_fixed", "action_cost_stderr_scaled", "action_cost_ci95_scaled_lo",
			"action_cost_ci95_natural_hi", "obs_noise"} {
			assert.Contains(t, rows[0], col)
		}
		assert.Equal(t, "1", rows[1][0], "the table is in data-file order")
		assert.Equal(t, "2", rows[2][0])
		i := slices.Index(rows[0], "action_cost")
		assert.Equal(t, recs["1"]["params"].(map[string]any)["action_cost"], cliParseFloat(t, rows[1][i], "action_cost"))
	})

	t.Run("infer and fix", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		r := cliFit(t, data, out, "--infer", "action_cost,obs_noise", "--fix", "motor_noise=0.05")
		assert.Contains(t, r.stderr, "fitted: action_cost, obs_noise")
		for _, rec := range cliReadJSONL(t, out) {
			assert.ElementsMatch(t, []any{"action_cost", "obs_noise"}, rec["fitted"])
		}
		out2 := filepath.Join(t.TempDir(), "r.jsonl")
		r = cliFit(t, data, out2, "--fix", "motor_noise=0.05,obs_noise=0.2")
		assert.Contains(t, r.stderr, "fitted: action_cost, temperature")
		for _, rec := range cliReadJSONL(t, out2) {
			assert.Equal(t, []any{"action_cost", "temperature"}, rec["fitted"])
		}
		out3 := filepath.Join(t.TempDir(), "r.jsonl")
		r = cliFit(t, data, out3, "--fix", "motor_noise=0.05,obs_noise=0.2", "--temperature", "task")
		assert.Contains(t, r.stderr, "fitted: action_cost\n")
		for _, rec := range cliReadJSONL(t, out3) {
			assert.Equal(t, []any{"action_cost"}, rec["fitted"])
			assert.NotContains(t, rec["params"], "temperature", "a fixed temperature is the task's, not a parameter")
		}
	})

	t.Run("same seed same estimates", func(t *testing.T) {
		tmp := t.TempDir()
		fitOf := func(name string, args ...string) map[string]map[string]any {
			out := filepath.Join(tmp, name)
			cliFit(t, data, out, args...)
			return cliBySubject(t, cliReadJSONL(t, out))
		}
		a := fitOf("a.jsonl", "--seed", "7")
		b := fitOf("b.jsonl", "--seed", "7")
		c := fitOf("c.jsonl", "--seed", "8")
		for _, s := range []string{"1", "2"} {
			assert.Equal(t, a[s]["params"], b[s]["params"], "subject %s", s)
			assert.Equal(t, a[s]["loglik"], b[s]["loglik"], "subject %s", s)
			assert.Equal(t, a[s]["evaluations"], b[s]["evaluations"], "subject %s", s)
		}
		assert.False(t, cliSameParams(a["1"], c["1"]) && cliSameParams(a["2"], c["2"]),
			"another seed starts elsewhere and, stopped after 5 iterations, ends elsewhere")
	})

	t.Run("refuses an existing --out", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliFit(t, data, out)
		before := cliHash(t, out)
		a := append([]string{"fit"}, cliFitArgs...)
		r := cliRun(t, append(a, "--data", data, "--out", out)...)
		cliRequireFail(t, r, 2, out+" exists", "--resume")
		assert.Equal(t, before, cliHash(t, out), "the results file is untouched")
	})

	// Without --infer, a parameter the likelihood does not depend on is left at its default,
	// and the command says so.
	t.Run("observe full leaves obs_noise at its default", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		r := cliFit(t, data, out, "--observe", "full")
		assert.Contains(t, r.stderr, "not fitted: obs_noise, held at 0.2: the likelihood (method ours, observe full, planner full) does not depend on it")
		assert.Contains(t, r.stderr, "fitted: action_cost, motor_noise, temperature\n")
		for _, rec := range cliReadJSONL(t, out) {
			assert.Equal(t, []any{"action_cost", "motor_noise", "temperature"}, rec["fitted"])
			assert.Equal(t, map[string]any{"obs_noise": 0.2}, rec["fixed"], "held, not estimated")
			assert.NotContains(t, rec["params"], "obs_noise", "params holds the estimates only")
		}
	})

	t.Run("resume without an existing --out starts afresh", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		r := cliFit(t, data, out, "--resume")
		assert.NotContains(t, r.stderr, "resuming")
		assert.Len(t, cliReadJSONL(t, out), 2)
	})

	t.Run("baseline", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliFit(t, data, out, "--method", "baseline", "--infer", "action_cost")
		for _, rec := range cliReadJSONL(t, out) {
			assert.Equal(t, "baseline", rec["method"])
		}
	})
}

func cliSameParams(a, b map[string]any) bool {
	ja, _ := json.Marshal(a["params"])
	jb, _ := json.Marshal(b["params"])
	return string(ja) == string(jb)
}

func TestCLIFitResume(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--subjects", "2")

	t.Run("shard then resume", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		r := cliFit(t, data, out, "--shard", "1/2")
		assert.Contains(t, r.stderr, "to 1 subject(s)")
		first := cliLines(t, out)
		require.Len(t, first, 1)
		recs := cliReadJSONL(t, out)
		assert.Equal(t, "1", recs[0]["subject"], "shard 1/2 is the first subject")

		r = cliFit(t, data, out, "--resume")
		assert.Contains(t, r.stderr, "resuming: 1 subject(s) already in")
		assert.Contains(t, r.stderr, "to 1 subject(s)", "only the other subject is fitted")
		lines := cliLines(t, out)
		require.Len(t, lines, 2)
		assert.Equal(t, first[0], lines[0], "the first line is unchanged")
		recs = cliReadJSONL(t, out)
		assert.Equal(t, "2", recs[1]["subject"])
		rows := cliReadCSV(t, filepath.Join(filepath.Dir(out), "r.csv"))
		require.Len(t, rows, 3, "the table holds both subjects")
		assert.Equal(t, "1", rows[1][0])
		assert.Equal(t, "2", rows[2][0])

		// Everything done: another resume fits nothing and changes nothing.
		r = cliFit(t, data, out, "--resume")
		assert.Contains(t, r.stderr, "to 0 subject(s)")
		assert.Equal(t, lines, cliLines(t, out))
	})

	t.Run("truncated last line", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliFit(t, data, out, "--shard", "1/2")
		first := cliLines(t, out)
		f, err := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"subject":"2","task":"linear","meth`)
		require.NoError(t, err)
		require.NoError(t, f.Close())

		r := cliFit(t, data, out, "--resume")
		assert.Contains(t, r.stderr, "resuming: 1 subject(s)")
		lines := cliLines(t, out)
		require.Len(t, lines, 2)
		assert.Equal(t, first[0], lines[0])
		assert.NotContains(t, string(mustRead(t, out)), `"meth"`+"\n", "the fragment is dropped")
		recs := cliBySubject(t, cliReadJSONL(t, out))
		assert.Len(t, recs, 2)
		cliFinite(t, recs["2"]["loglik"], "loglik of the refitted subject")
	})

	t.Run("malformed line", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliFit(t, data, out, "--shard", "1/2")
		b := mustRead(t, out)
		require.NoError(t, os.WriteFile(out, append([]byte("not json\n"), b...), 0o644))
		before := cliHash(t, out)
		a := append([]string{"fit"}, cliFitArgs...)
		r := cliRun(t, append(a, "--data", data, "--out", out, "--resume")...)
		cliRequireFail(t, r, 1, out, "line 1", "not a results record")
		assert.Equal(t, before, cliHash(t, out))
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestCLIFitErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string // with --data DATA and --out OUT substituted
		code int
		msgs []string
	}{
		{"restarts 0", []string{"--restarts", "0"}, 2, []string{"--restarts must be >= 1, got 0"}},
		{"max-iter 0", []string{"--max-iter", "0"}, 2, []string{"--max-iter must be >= 1"}},
		{"uncertainty", []string{"--uncertainty", "sandwich"}, 2, []string{`--uncertainty must be robust, hessian or bootstrap, got "sandwich"`}},
		{"bootstrap draws", []string{"--uncertainty", "bootstrap", "--bootstrap-draws", "2"}, 2, []string{"--bootstrap-draws must be >= 3"}},
		{"bootstrap agents", []string{"--uncertainty", "bootstrap", "--bootstrap-agents", "ours,ref"}, 2, []string{`--bootstrap-agents: unknown agent "ref": use ours, ours-nonoise, iterN (N >= 1), delay1 or nofeedforward, or several joined with +`}},
		{"bootstrap agents empty", []string{"--uncertainty", "bootstrap", "--bootstrap-agents", ""}, 2, []string{"--bootstrap-agents must name at least one agent"}},
		{"bootstrap draws per agent", []string{"--uncertainty", "bootstrap", "--bootstrap-draws", "6"}, 2, []string{"the bootstrap needs at least 3 data sets per agent, got 6 for 5 agents"}},
		{"check draws", []string{"--check-draws", "2"}, 2, []string{"--check-draws must be 0 (no check) or at least 3"}},
		{"max-batch 0", []string{"--max-batch", "0"}, 2, []string{"--max-batch must be >= 1, got 0"}},
		{"max-batch negative", []string{"--max-batch", "-5"}, 2, []string{"--max-batch must be >= 1, got -5"}},
		{"--infer obs_noise with --observe full", []string{"--observe", "full", "--infer", "action_cost,obs_noise"}, 2,
			[]string{"--infer: the likelihood (method ours, observe full, planner full) does not depend on obs_noise"}},
		{"--infer obs_noise with --method baseline", []string{"--method", "baseline", "--infer", "obs_noise"}, 2,
			[]string{"--infer: the likelihood (method baseline, observe partial, planner full) does not depend on obs_noise"}},
		{"unknown --infer", []string{"--infer", "action_cost,noise"}, 2, []string{`--infer: task linear has no parameter "noise"`, "action_cost, motor_noise, obs_noise"}},
		{"duplicated --infer", []string{"--infer", "action_cost,action_cost"}, 2, []string{"--infer: parameter action_cost given twice"}},
		{"unknown --fix", []string{"--fix", "noise=1"}, 2, []string{`--fix: task linear has no parameter "noise"`}},
		{"--fix outside the search box", []string{"--fix", "action_cost=100"}, 2, []string{"--fix action_cost=100 is outside its bounds [0.001, 10]"}},
		{"--fix below the search box", []string{"--fix", "obs_noise=0"}, 2, []string{"--fix obs_noise=0 is outside its bounds"}},
		{"--fix malformed", []string{"--fix", "action_cost"}, 2, []string{"--fix", "not name=value"}},
		{"--fix NaN", []string{"--fix", "action_cost=NaN"}, 2, []string{"--fix action_cost=NaN"}},
		{"--infer and --fix of one parameter", []string{"--infer", "action_cost", "--fix", "action_cost=0.1"}, 2, []string{"action_cost is both inferred and fixed"}},
		{"everything fixed", []string{"--fix", "action_cost=0.1,motor_noise=0.05,obs_noise=0.2", "--temperature", "task"}, 2, []string{"no parameter left to fit"}},
		{"--infer temperature with --temperature task", []string{"--temperature", "task", "--infer", "action_cost,temperature"}, 2,
			[]string{"--infer temperature: --temperature task holds the policy noise's temperature at the task's value (0.001), so it is not a parameter to fit; give --temperature fit to fit it, or leave it out of --infer"}},
		{"--infer temperature with --temperature τ", []string{"--temperature", "0.01", "--infer", "temperature"}, 2,
			[]string{"--infer temperature: --temperature 0.01 holds the policy noise's temperature at that value, so it is not a parameter to fit"}},
		{"--infer temperature with --temperature 0", []string{"--temperature", "0", "--infer", "temperature"}, 2,
			[]string{"--infer temperature: --temperature 0 gives the agent no policy noise, so it is not a parameter to fit"}},
		{"--infer temperature with --method baseline", []string{"--method", "baseline", "--infer", "temperature"}, 2,
			[]string{"--infer temperature: --method baseline holds the policy noise's temperature at the task's value (0.001) unless given --temperature fit"}},
		{"--fix temperature with --temperature task", []string{"--temperature", "task", "--fix", "temperature=0.01"}, 2,
			[]string{"--fix temperature=0.01: --temperature task holds the policy noise's temperature", "give --temperature 0.01 in place of --fix temperature=0.01"}},
		{"--shard 3/2", []string{"--shard", "3/2"}, 2, []string{`--shard "3/2"`, "1 <= k <= N"}},
		{"--shard 0/2", []string{"--shard", "0/2"}, 2, []string{`--shard "0/2"`}},
		{"--shard x", []string{"--shard", "x"}, 2, []string{`--shard "x"`}},
		{"--shard 1/0", []string{"--shard", "1/0"}, 2, []string{`--shard "1/0"`}},
		{"--shard 1/2/3", []string{"--shard", "1/2/3"}, 2, []string{`--shard "1/2/3"`}},
		{"unknown method", []string{"--method", "irl"}, 2, []string{`unknown --method "irl"`}},
		{"unknown observe", []string{"--observe", "half"}, 2, []string{`unknown --observe "half"`}},
		{"positional argument", []string{"more.csv"}, 2, []string{`unexpected argument "more.csv"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2", "--steps", "5", "--subjects", "2")
			before := cliHash(t, data)
			out := filepath.Join(dir, "r.jsonl")
			a := append([]string{"fit"}, cliFitArgs...)
			a = append(a, "--data", data, "--out", out)
			r := cliRun(t, append(a, tc.args...)...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			cliNoFile(t, out)
			cliNoFile(t, filepath.Join(dir, "r.csv"))
			assert.Equal(t, before, cliHash(t, data))
		})
	}

	// Errors about the files.
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2", "--steps", "5", "--subjects", "2")
	before := cliHash(t, data)
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		msgs      []string
		noResults string // this file must not be created
	}{
		{"results table would overwrite the data", []string{"--data", data, "--out", filepath.Join(dir, "d.jsonl")}, 2,
			[]string{data, "would overwrite the data file"}, filepath.Join(dir, "d.jsonl")},
		{"results table would overwrite the data (.json)", []string{"--data", data, "--out", filepath.Join(dir, "d.json")}, 2,
			[]string{"would overwrite the data file"}, filepath.Join(dir, "d.json")},
		{"--out is the data file", []string{"--data", data, "--out", data}, 2, []string{data + " exists"}, ""},
		{"--out is the data file, resumed", []string{"--data", data, "--out", data, "--resume"}, 1,
			[]string{data, "line 1", "not a results record"}, ""},
		{"missing --data", []string{"--out", filepath.Join(dir, "x.jsonl")}, 2, []string{"--data is required"}, filepath.Join(dir, "x.jsonl")},
		{"missing --out", []string{"--data", data}, 2, []string{"--out is required"}, ""},
		{"data file missing", []string{"--data", filepath.Join(dir, "nope.csv"), "--out", filepath.Join(dir, "x.jsonl")}, 1,
			[]string{"nope.csv", "cannot open"}, filepath.Join(dir, "x.jsonl")},
		{"out directory missing", []string{"--data", data, "--out", filepath.Join(dir, "no", "x.jsonl")}, 1,
			[]string{"cannot write"}, filepath.Join(dir, "no")},
		{"data of another task", []string{"--task", "pendulum", "--data", data, "--out", filepath.Join(dir, "x.jsonl")}, 1,
			[]string{data, "theta,omega"}, filepath.Join(dir, "x.jsonl")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"fit"}, cliFitArgs...)
			r := cliRun(t, append(a, tc.args...)...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			assert.Equal(t, before, cliHash(t, data), "the data file is untouched")
			if tc.noResults != "" {
				cliNoFile(t, tc.noResults)
			}
		})
	}
}

func TestCLIMerge(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--subjects", "3")
	a := filepath.Join(dir, "a.jsonl")
	b := filepath.Join(dir, "b.jsonl")
	cliFit(t, data, a, "--shard", "1/2") // subjects 1 and 3
	cliFit(t, data, b, "--shard", "2/2") // subject 2

	t.Run("shards", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "m.jsonl")
		r := cliOK(t, "merge", "--out", out, a, b)
		assert.Contains(t, r.stderr, "merged 3 subject(s) from 2 file(s)")
		recs := cliBySubject(t, cliReadJSONL(t, out))
		assert.Len(t, recs, 3)
		for _, s := range []string{"1", "2", "3"} {
			assert.Contains(t, recs, s)
		}
		rows := cliReadCSV(t, filepath.Join(filepath.Dir(out), "m.csv"))
		require.Len(t, rows, 4)
		assert.Equal(t, "subject", rows[0][0])
		assert.Contains(t, rows[0], "action_cost")
		// The merged records are the shards' records.
		ra := cliBySubject(t, cliReadJSONL(t, a))
		assert.Equal(t, ra["1"], recs["1"])
	})

	t.Run("identical duplicates kept once", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "m.jsonl")
		r := cliOK(t, "merge", "--out", out, a, b, a)
		assert.Contains(t, r.stderr, "merged 3 subject(s) from 3 file(s)")
		assert.Len(t, cliBySubject(t, cliReadJSONL(t, out)), 3)
	})

	t.Run("conflicting duplicates", func(t *testing.T) {
		tmp := t.TempDir()
		recs := cliReadJSONL(t, a)
		recs[0]["loglik"] = recs[0]["loglik"].(float64) + 1
		var sb strings.Builder
		for _, rec := range recs {
			line, err := json.Marshal(rec)
			require.NoError(t, err)
			sb.Write(append(line, '\n'))
		}
		c := cliWriteFile(t, tmp, "c.jsonl", sb.String())
		out := filepath.Join(tmp, "m.jsonl")
		r := cliRun(t, "merge", "--out", out, a, c)
		cliRequireFail(t, r, 1, "subject "+recs[0]["subject"].(string), a, c, "different results")
		cliNoFile(t, out)
	})

	for _, tc := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"no files", []string{"--out", filepath.Join(dir, "m.jsonl")}, 2, []string{"give the results files to merge"}},
		{"no --out", []string{a, b}, 2, []string{"--out is required"}},
		{"missing file", []string{"--out", filepath.Join(dir, "m.jsonl"), a, filepath.Join(dir, "nope.jsonl")}, 1, []string{"nope.jsonl"}},
		{"not a results file", []string{"--out", filepath.Join(dir, "m.jsonl"), a, data}, 1, []string{data, "line 1", "not a results record"}},
		{"unknown flag", []string{"--output", "m.jsonl", a}, 2, []string{"flag provided but not defined: -output"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cliRequireFail(t, cliRun(t, append([]string{"merge"}, tc.args...)...), tc.code, tc.msgs...)
			cliNoFile(t, filepath.Join(dir, "m.jsonl"))
		})
	}
}

func TestCLICompare(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "4", "--subjects", "2")
	ours := filepath.Join(dir, "ours.jsonl")
	base := filepath.Join(dir, "base.jsonl")
	cliFit(t, data, ours)
	cliFit(t, data, base, "--method", "baseline", "--infer", "action_cost")
	params := []string{"action_cost", "motor_noise", "obs_noise"}

	// rowOf returns the table row of the first column's label.
	rowOf := func(t *testing.T, out, label string) string {
		t.Helper()
		var found []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, label+" ") {
				found = append(found, line)
			}
		}
		require.Len(t, found, 1, "one row %q in:\n%s", label, out)
		return found[0]
	}

	t.Run("one file", func(t *testing.T) {
		r := cliOK(t, "compare", "--task", "linear", ours)
		assert.Contains(t, r.stderr, ours+": 2 subject(s) (task definition builtin:linear", "what compare uses")
		header := rowOf(t, r.stdout, "parameter")
		assert.Contains(t, header, "truth")
		assert.Contains(t, header, "ours (ours)")
		for _, p := range params {
			row := rowOf(t, r.stdout, p)
			assert.Contains(t, row, "median ", "two subjects: the median estimate")
			assert.Contains(t, row, "|rel. err.|")
		}
		assert.Regexp(t, `(?m)^action_cost\s+0\.1\s`, r.stdout, "truth: the task's default")
		assert.Regexp(t, `(?m)^median \|rel\. err\.\|\s+\d+\.\d{3}\s*$`, r.stdout)
		assert.Regexp(t, `(?m)^log-likelihood\s+-?\d+\.\d\d\s*$`, r.stdout)
	})

	t.Run("two files and truth", func(t *testing.T) {
		r := cliOK(t, "compare", "--task", "linear", "--truth", "action_cost=0.2", ours, base)
		assert.Contains(t, rowOf(t, r.stdout, "parameter"), "baseline (base)")
		assert.Regexp(t, `(?m)^action_cost\s+0\.2\s`, r.stdout)
		assert.Contains(t, rowOf(t, r.stdout, "motor_noise"), "not fitted", "the baseline fitted only action_cost")
		rowOf(t, r.stdout, "median |rel. err.|")
	})

	empty := cliWriteFile(t, dir, "empty.jsonl", "")
	other := cliWriteFile(t, dir, "other.jsonl", strings.ReplaceAll(string(mustRead(t, ours)), `"task":"linear"`, `"task":"pendulum"`))
	for _, tc := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"no files", []string{"--task", "linear"}, 2, []string{"give one or more results files"}},
		{"no --task", []string{ours}, 2, []string{"--task is required"}},
		{"unknown task", []string{"--task", "pend", ours}, 2, []string{`unknown task "pend"`}},
		{"unknown truth parameter", []string{"--task", "linear", "--truth", "noise=1", ours}, 2, []string{`--truth: task linear has no parameter "noise"`}},
		{"malformed truth", []string{"--task", "linear", "--truth", "noise", ours}, 2, []string{"--truth", "not name=value"}},
		{"missing file", []string{"--task", "linear", filepath.Join(dir, "nope.jsonl")}, 1, []string{"nope.jsonl"}},
		{"empty file", []string{"--task", "linear", empty}, 1, []string{empty, "no results"}},
		{"not a results file", []string{"--task", "linear", data}, 1, []string{data, "not a results record"}},
		{"results of another task", []string{"--task", "pendulum", ours}, 1, []string{ours, "results of task linear", "not of task pendulum"}},
		{"second file of another task", []string{"--task", "linear", ours, other}, 1, []string{other, "results of task pendulum", "not of task linear"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cliRequireFail(t, cliRun(t, append([]string{"compare"}, tc.args...)...), tc.code, tc.msgs...)
		})
	}
}

// TestCLIFitCheckWarning fits a data set of the JAX reference's agent (fit/testdata, which
// fails the goodness-of-fit check) and requires the warning to say what it means for the
// intervals printed: the bootstrap's by default, the sandwich's with --uncertainty robust.
func TestCLIFitCheckWarning(t *testing.T) {
	data := filepath.Join("..", "..", "fit", "testdata", "pendulum-ref-set003.csv")
	for _, tc := range []struct {
		name, uncertainty, says string
	}{
		{"default", "bootstrap", "its intervals allow only for the agents of the bootstrap's family"},
		{"robust", "robust", "its intervals are too narrow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "fit.jsonl")
			r := cliOK(t, "fit", "--task", "pendulum", "--data", data, "--restarts", "3", "--seed", "1", "--uncertainty", tc.uncertainty, "--quiet", "--out", out)
			assert.Regexp(t, `warning: subject set003: the data do not look like the fitted agent's \(goodness-of-fit z -\d`, r.stderr)
			assert.Contains(t, r.stderr, tc.says)
			recs := cliReadJSONL(t, out)
			require.Len(t, recs, 1)
			assert.Equal(t, tc.uncertainty, recs[0]["uncertainty"])
		})
	}
}
