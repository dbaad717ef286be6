package main

// Tests of what results record of what produced them (issue "Every result knows what produced
// it"): data and task digests, the checks of --resume and merge on them, records of earlier
// versions, and the warnings of estimates the data do not determine.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliWriteJSONL writes records as a results file dir/name.
func cliWriteJSONL(t *testing.T, dir, name string, recs []map[string]any) string {
	t.Helper()
	var sb strings.Builder
	for _, rec := range recs {
		line, err := json.Marshal(rec)
		require.NoError(t, err)
		sb.Write(append(line, '\n'))
	}
	return cliWriteFile(t, dir, name, sb.String())
}

func TestCLIProvenance(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--subjects", "2")
	other := cliSimulate(t, dir, "o.csv", "--task", "linear", "--trials", "3", "--subjects", "2", "--seed", "9")
	fitArgs := func(data, out string, more ...string) []string {
		a := append([]string{"fit"}, cliFitArgs...)
		return append(append(a, "--data", data, "--out", out), more...)
	}

	t.Run("records", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliOK(t, fitArgs(data, out)...)
		recs := cliBySubject(t, cliReadJSONL(t, out))
		assert.Regexp(t, `^sha256:[0-9a-f]{16}$`, recs["1"]["data_digest"])
		assert.NotEqual(t, recs["1"]["data_digest"], recs["2"]["data_digest"], "each subject's own data")
		assert.Equal(t, "builtin:linear", recs["1"]["task_digest"])
		assert.NotEmpty(t, recs["1"]["version"])
		assert.Contains(t, recs["1"], "identified")
	})

	t.Run("resume with other data", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliOK(t, fitArgs(data, out, "--shard", "1/2")...)
		before := cliHash(t, out)
		r := cliRun(t, fitArgs(other, out, "--resume")...)
		cliRequireFail(t, r, 1, out, "other settings or data", "subject 1's data", "in the file")
		assert.Equal(t, before, cliHash(t, out), "the results are untouched")
	})

	t.Run("resume with another value held", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliOK(t, fitArgs(data, out, "--shard", "1/2", "--fix", "obs_noise=0.3")...)
		r := cliRun(t, fitArgs(data, out, "--resume", "--fix", "obs_noise=0.4")...)
		cliRequireFail(t, r, 1, "obs_noise held at 0.3 in the file, 0.4 now")
	})

	t.Run("resume with an edited task file", func(t *testing.T) {
		tmp := t.TempDir()
		text := string(mustRead(t, cliExampleTask("linear")))
		task := cliWriteFile(t, tmp, "task.toml", text)
		out := filepath.Join(tmp, "r.jsonl")
		args := []string{"fit", "--task-file", task, "--restarts", "2", "--max-iter", "5", "--quiet", "--data", data, "--out", out}
		cliOK(t, append(args, "--shard", "1/2")...)
		rec := cliReadJSONL(t, out)[0]
		assert.Regexp(t, `^sha256:`, rec["task_digest"])
		// A comment changes nothing the fit computes: the run resumes.
		cliWriteFile(t, tmp, "task.toml", "# edited\n"+text)
		cliOK(t, append(args, "--resume", "--shard", "1/2")...)
		// Another value does.
		edited := strings.Replace(text, "dt = 0.1", "dt = 0.11", 1)
		require.NotEqual(t, text, edited, "the example task sets dt = 0.1")
		cliWriteFile(t, tmp, "task.toml", edited)
		r := cliRun(t, append(args, "--resume")...)
		cliRequireFail(t, r, 1, "task definition", rec["task_digest"].(string))
	})

	t.Run("eval resumed with an edited task file", func(t *testing.T) {
		tmp := t.TempDir()
		text := string(mustRead(t, cliExampleTask("linear")))
		task := cliWriteFile(t, tmp, "task.toml", text)
		out := filepath.Join(tmp, "ev")
		args := []string{"eval", "--task-file", task, "--sets", "1", "--trials", "3", "--restarts", "1", "--max-iter", "3", "--quiet", "--out", out}
		cliOK(t, args...)
		cliOK(t, args...) // the same task: resumed, nothing to do
		cliWriteFile(t, tmp, "task.toml", strings.Replace(text, "dt = 0.1", "dt = 0.11", 1))
		cliRequireFail(t, cliRun(t, args...), 2, "holds an evaluation with other settings", "task_digest")
	})

	t.Run("records of earlier versions", func(t *testing.T) {
		tmp := t.TempDir()
		out := filepath.Join(tmp, "new.jsonl")
		cliOK(t, fitArgs(data, out, "--shard", "1/2")...)
		recs := cliReadJSONL(t, out)
		for _, rec := range recs {
			for _, k := range []string{"data_digest", "task_digest", "version", "identified", "warnings"} {
				delete(rec, k)
			}
		}
		old := cliWriteJSONL(t, tmp, "old.jsonl", recs)
		r := cliOK(t, fitArgs(data, old, "--resume")...)
		assert.Contains(t, r.stderr, "written before results recorded their data and task")
		assert.Len(t, cliReadJSONL(t, old), 2, "the other subject is fitted")
		oldOnly := cliWriteJSONL(t, tmp, "old1.jsonl", recs)
		r = cliOK(t, "merge", "--out", filepath.Join(tmp, "m.jsonl"), oldOnly)
		assert.Contains(t, r.stderr, "1 record(s) were written before results recorded their data and task")
		r = cliOK(t, append(fitArgs(data, filepath.Join(tmp, "s.jsonl")), "--start", oldOnly, "--shard", "1/2")...)
		assert.Contains(t, r.stderr, "note: --start: 1 record(s)")
		r = cliOK(t, "compare", "--task", "linear", oldOnly)
		assert.Contains(t, r.stderr, "written before results recorded their data and version")
	})

	t.Run("merge of different runs", func(t *testing.T) {
		tmp := t.TempDir()
		a, b := filepath.Join(tmp, "a.jsonl"), filepath.Join(tmp, "b.jsonl")
		cliOK(t, fitArgs(data, a, "--shard", "1/2")...)
		cliOK(t, fitArgs(data, b, "--shard", "2/2", "--fix", "obs_noise=0.3")...)
		out := filepath.Join(tmp, "m.jsonl")
		cliRequireFail(t, cliRun(t, "merge", "--out", out, a, b), 1, a, b, "different runs", "fitted parameters")
		cliNoFile(t, out)
		pend := filepath.Join(tmp, "p.jsonl")
		pdata := cliSimulate(t, tmp, "pd.csv", "--task", "pendulum", "--trials", "2", "--subjects", "1")
		cliOK(t, "fit", "--task", "pendulum", "--restarts", "1", "--max-iter", "2", "--check-draws", "0", "--quiet", "--data", pdata, "--out", pend)
		cliRequireFail(t, cliRun(t, "merge", "--out", out, a, pend), 1, "different runs", "task: pendulum in the second file, linear in the first")
		cliNoFile(t, out)
	})

	t.Run("compare uses a subject's last record", func(t *testing.T) {
		tmp := t.TempDir()
		out := filepath.Join(tmp, "r.jsonl")
		cliOK(t, fitArgs(data, out)...)
		recs := cliReadJSONL(t, out) // in the order the subjects finished
		require.Len(t, recs, 2)
		twice := cliWriteJSONL(t, tmp, "twice.jsonl", append(recs, recs[0]))
		r := cliOK(t, "compare", "--task", "linear", twice)
		assert.Contains(t, r.stderr, "2 subject(s) (task definition builtin:linear")
		assert.Contains(t, r.stderr, fmt.Sprintf("subject(s) %v appear more than once", recs[0]["subject"]))
	})

	t.Run("start and init from a fit of other data", func(t *testing.T) {
		tmp := t.TempDir()
		from := filepath.Join(tmp, "o.jsonl")
		cliOK(t, fitArgs(other, from)...)
		r := cliOK(t, append(fitArgs(data, filepath.Join(tmp, "r.jsonl")), "--start", from)...)
		assert.Contains(t, r.stderr, "warning: --start: "+from+" was fitted to other data than --data for subject(s) 1, 2")
		r = cliSample(t, data, filepath.Join(tmp, "s"), "--init", from, "--plots=false")
		assert.Contains(t, r.stderr, "warning: --init: "+from+" was fitted to other data")
		r = cliOK(t, append(fitArgs(other, filepath.Join(tmp, "r2.jsonl")), "--start", from)...)
		assert.NotContains(t, r.stderr, "other data", "the same data: no warning")
	})

	t.Run("sample resume with other data", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "s")
		cliSample(t, data, out, "--shard", "1/2", "--plots=false")
		a := append([]string{"sample"}, cliSampleArgs...)
		r := cliRun(t, append(a, "--data", other, "--out", out, "--resume", "--plots=false")...)
		cliRequireFail(t, r, 1, "sampled with other data", "subject 1's data")
	})
}

// Data in which nothing moves fit without error, but the record says the estimate is not
// the data's, and so does stderr, in words that say what to do.
func TestCLIFitStillData(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("subject,trial,t,pos,vel\n")
	for tr := 1; tr <= 3; tr++ {
		for step := 0; step <= 10; step++ {
			fmt.Fprintf(&sb, "1,%d,%d,0,0\n", tr, step)
		}
	}
	data := cliWriteFile(t, dir, "zeros.csv", sb.String())
	out := filepath.Join(dir, "r.jsonl")
	r := cliFit(t, data, out)
	assert.Contains(t, r.stderr, "warning: subject 1: the trials do not move")
	assert.Regexp(t, `warning: subject 1: \w+ is at its (lower|upper) bound [0-9.e-]+: .* fix it \(--fix \w+=VALUE\)`, r.stderr, "the box, not the data, sets an estimate")
	rec := cliReadJSONL(t, out)[0]
	assert.Equal(t, false, rec["identified"])
	warnings, _ := rec["warnings"].([]any)
	require.NotEmpty(t, warnings)
	assert.Contains(t, warnings[0], "do not move")
}
