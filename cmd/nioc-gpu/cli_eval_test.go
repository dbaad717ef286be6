package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func requirePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, path)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err, path)
}

func TestCLIEval(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	args := []string{"eval", "--task", "linear", "--sets", "3", "--trials", "4", "--restarts", "2", "--max-iter", "5", "--quiet", "--out", dir}
	r := cliOK(t, args...)
	assert.Contains(t, r.stdout, "median")
	for _, f := range []string{"config.json", "truth.csv", "data.csv", "fit-ours.jsonl", "fit-baseline.jsonl", "estimates.csv", "summary.json"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	requirePNG(t, filepath.Join(dir, "true_vs_estimated.png"))
	requirePNG(t, filepath.Join(dir, "errors.png"))
	var sum evalSummary
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &sum))
	assert.Equal(t, 3, sum.Methods["ours"].Fitted)
	assert.Contains(t, sum.Methods["baseline"].NotFitted, "obs_noise")
	rows := cliReadCSV(t, filepath.Join(dir, "estimates.csv"))
	assert.Equal(t, []string{"set", "method", "parameter", "true", "estimate", "abs_rel_error"}, rows[0])
	assert.Len(t, rows, 1+3*3+3*2) // ours fits 3 parameters, the baseline 2

	// Resuming refits nothing; other settings in the same directory are refused.
	before := cliHash(t, filepath.Join(dir, "fit-ours.jsonl"))
	cliOK(t, args...)
	assert.Equal(t, before, cliHash(t, filepath.Join(dir, "fit-ours.jsonl")))
	bad := append([]string{}, args...)
	bad[6] = "5" // --trials 5
	cliRequireFail(t, cliRun(t, bad...), 2, "other settings")

	// plot redraws; --errors combines directories.
	cliOK(t, "plot", "--out", dir)
	fig := filepath.Join(t.TempDir(), "fig3.png")
	cliOK(t, "plot", "--errors", fig, dir)
	requirePNG(t, fig)
}

func TestCLIEvalFigures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ld")
	cliOK(t, "eval", "--task", "lightdark", "--sets", "1", "--trials", "3", "--restarts", "1", "--max-iter", "3", "--quiet",
		"--truth", "target_x=0,light_cost=0,sigma=0.2", "--out", dir)
	requirePNG(t, filepath.Join(dir, "lightdark_maps.png"))
	truth := cliReadCSV(t, filepath.Join(dir, "truth.csv"))
	assert.Equal(t, []string{"set001", "0", "0", "0.2"}, truth[1])
}

func TestCLIEvalErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"eval", "--task", "linear", "--sets", "0", "--out", dir}, "--sets"},
		{[]string{"eval", "--task", "linear", "--methods", "ours,magic", "--out", dir}, "unknown method"},
		{[]string{"eval", "--task", "linear", "--truth", "mass=1", "--out", dir}, `no parameter "mass"`},
		{[]string{"eval", "--task", "linear", "--shard", "3/2", "--out", dir}, "--shard"},
		{[]string{"eval", "--task", "linear"}, "--out is required"},
		{[]string{"plot"}, "--out DIR is required"},
	} {
		cliRequireFail(t, cliRun(t, c.args...), 2, c.msg)
	}
	cliRequireFail(t, cliRun(t, "plot", "--out", dir), 1, "not an eval directory")
}

// TestCLIEvalExcludesDivergingSets: with seed 1, the 22nd cart-pole set (large motor noise,
// small control cost) has an agent whose simulated states blow up; the eval leaves that set
// out, says so, fits the others, and resumes.
func TestCLIEvalExcludesDivergingSets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cp")
	args := []string{"eval", "--task", "cartpole", "--sets", "22", "--trials", "15", "--restarts", "1", "--max-iter", "1",
		"--methods", "baseline", "--quiet", "--out", dir}
	r := cliOK(t, args...)
	assert.Contains(t, r.stderr, "excluded 1 set(s) whose simulated agent diverged: set022")
	var sum evalSummary
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &sum))
	assert.Equal(t, []string{"set022"}, sum.Excluded)
	assert.Equal(t, 21, sum.Methods["baseline"].Fitted+sum.Methods["baseline"].Failed)
	r = cliOK(t, args...)
	assert.Contains(t, r.stderr, "resuming")
}

// TestCLIEvalILQGStartsAtDataFits: with --linearize ilqg, eval fits each set with the data
// linearization first (start-ours.jsonl), for the starts of the ilqg fits (fit.Options.Starts,
// tested in package fit and by TestCLIFitStart); the summary counts the ilqg fits only.
func TestCLIEvalILQGStartsAtDataFits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	cliOK(t, "eval", "--task", "linear", "--sets", "2", "--trials", "4", "--steps", "8", "--restarts", "1", "--max-iter", "1",
		"--methods", "ours", "--linearize", "ilqg", "--quiet", "--out", dir)
	starts := cliBySubject(t, cliReadJSONL(t, filepath.Join(dir, "start-ours.jsonl")))
	fits := cliBySubject(t, cliReadJSONL(t, filepath.Join(dir, "fit-ours.jsonl")))
	require.Len(t, starts, 2)
	require.Len(t, fits, 2)
	for id, s := range starts {
		assert.Equal(t, "data", s["linearize"])
		assert.Equal(t, "ilqg", fits[id]["linearize"])
	}
	var sum evalSummary
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &sum))
	assert.Equal(t, 2, sum.Methods["ours"].Fitted)
}
