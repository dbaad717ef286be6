package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIShardedFitEqualsFullFit: restarts are seeded by subject ID, so a subject fitted in a
// shard, or after a resume, gets exactly the estimates of a full run.
func TestCLIShardedFitEqualsFullFit(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--subjects", "2", "--trials", "4")
	full := filepath.Join(dir, "full.jsonl")
	cliFit(t, data, full)
	shard := filepath.Join(dir, "shard2.jsonl")
	cliFit(t, data, shard, "--shard", "2/2")
	a := cliBySubject(t, cliReadJSONL(t, full))
	b := cliBySubject(t, cliReadJSONL(t, shard))
	require.Contains(t, b, "2")
	assert.Equal(t, a["2"]["params"], b["2"]["params"])
	assert.Equal(t, a["2"]["loglik"], b["2"]["loglik"])
}

func TestCLITemperatureErrors(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2")
	for _, args := range [][]string{
		{"simulate", "--task", "linear", "--temperature", "NaN", "--out", filepath.Join(dir, "x.csv")},
		{"simulate", "--task", "linear", "--temperature", "-3", "--out", filepath.Join(dir, "x.csv")},
		{"loglik", "--task", "linear", "--data", data, "--temperature", "NaN"},
		{"loglik", "--task", "linear", "--data", data, "--temperature", "-2"},
		{"loglik", "--task", "linear", "--data", data, "--method", "baseline", "--temperature", "0"},
	} {
		cliRequireFail(t, cliRun(t, args...), 2, "temperature")
	}
}

// TestCLINeverOverwritesData: outputs that would replace the data file are refused.
func TestCLINeverOverwritesData(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "e.csv", "--task", "linear", "--trials", "2")
	before := cliHash(t, data)
	cliRequireFail(t, cliRun(t, "grid", "--task", "linear", "--data", data, "--vary", "action_cost:0.01:1,motor_noise:0.01:0.1",
		"--n", "2", "--out", data), 2, "overwrite the data file")
	res := filepath.Join(dir, "r.jsonl")
	cliFit(t, data, res)
	cliRequireFail(t, cliRun(t, "merge", "--out", filepath.Join(dir, "e.jsonl"), res), 2, "exists")
	assert.Equal(t, before, cliHash(t, data))
	_, err := os.Stat(filepath.Join(dir, "e.jsonl"))
	assert.True(t, os.IsNotExist(err))
}
