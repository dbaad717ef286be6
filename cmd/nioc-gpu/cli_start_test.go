package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCLIFitStart: with --start each subject's first restart begins at its estimate in an
// earlier fit's results, so one L-BFGS-B iteration from there ends at least as high as that
// fit, where one from the random first point ends lower; a --start file that cannot serve is
// refused, naming the file and what is wrong.
func TestCLIFitStart(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "20", "--steps", "10", "--subjects", "2")
	first := filepath.Join(dir, "first.jsonl")
	cliOK(t, "fit", "--task", "linear", "--data", data, "--restarts", "4", "--temperature", "task", "--quiet", "--out", first)
	oneStep := func(name string, extra ...string) map[string]map[string]any {
		out := filepath.Join(dir, name)
		a := []string{"fit", "--task", "linear", "--data", data, "--restarts", "1", "--max-iter", "1", "--temperature", "task", "--quiet", "--out", out}
		cliOK(t, append(a, extra...)...)
		return cliBySubject(t, cliReadJSONL(t, out))
	}
	best := cliBySubject(t, cliReadJSONL(t, first))
	started := oneStep("started.jsonl", "--start", first)
	random := oneStep("random.jsonl")
	for id, b := range best {
		assert.Equal(t, first, started[id]["start"], "the record names where its start came from")
		assert.NotContains(t, random[id], "start")
		want := cliFinite(t, b["loglik"], "loglik")
		assert.GreaterOrEqual(t, cliFinite(t, started[id]["loglik"], "loglik"), want-1e-6*abs(want), "subject %s started at its estimate", id)
		assert.Less(t, cliFinite(t, random[id]["loglik"], "loglik"), want-1, "subject %s from a random point", id)
	}

	// --resume with another --start (or none) is another run
	r := cliRun(t, "fit", "--task", "linear", "--data", data, "--restarts", "1", "--max-iter", "1", "--temperature", "task", "--quiet",
		"--out", filepath.Join(dir, "started.jsonl"), "--resume")
	cliRequireFail(t, r, 1, "start: "+first+" in the file, random points only now")

	other := cliWriteFile(t, dir, "other.jsonl", strings.ReplaceAll(string(mustRead(t, first)), `"task":"linear"`, `"task":"pendulum"`))
	lines := cliLines(t, first)
	one := cliWriteFile(t, dir, "one.jsonl", lines[0]+"\n")
	missing := map[string]string{"1": "2", "2": "1"}[cliJSONLines(t, lines[0])[0]["subject"].(string)]
	for _, tc := range []struct {
		name string
		file string
		msgs []string
	}{
		{"another task", other, []string{"--start: " + other + " holds fits of task pendulum", "not of task linear"}},
		{"a subject missing", one, []string{"--start: " + one + " has no successful fit of subject(s) " + missing}},
		{"no such file", filepath.Join(dir, "nope.jsonl"), []string{"--start: ", "nope.jsonl"}},
		{"not a results file", data, []string{"--start: " + data, "not a results record"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "fit.jsonl")
			r := cliRun(t, "fit", "--task", "linear", "--data", data, "--restarts", "1", "--quiet", "--start", tc.file, "--out", out)
			cliRequireFail(t, r, 1, tc.msgs...)
			cliNoFile(t, out)
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
