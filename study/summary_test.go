package study

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFits writes records of method's fits to dir/fit-METHOD.jsonl: estimates by set, a nil
// map for a set that could not be fitted.
func writeFits(t *testing.T, dir, method string, fitted []string, ests map[string]map[string]float64) {
	t.Helper()
	w, err := fit.OpenWriter(FitPath(dir, method, 1, 1), 0)
	require.NoError(t, err)
	for _, set := range []string{"set001", "set002", "set003"} {
		est, ok := ests[set]
		if !ok {
			continue
		}
		r := fit.Record{Subject: set, Run: fit.Run{Task: "linear", Method: method, Observe: "partial"}, Fitted: fitted,
			Params: est, Restarts: 2, RestartsAtBest: 2, Seconds: 1}
		if est == nil {
			r.Error = "could not be fitted"
		}
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
}

func TestSummarize(t *testing.T) {
	spec := linearSpec(t)
	dir := t.TempDir()
	cfg := Config{Task: "linear", Observe: "partial", Sets: 3, Trials: 4, Steps: 20, Seed: 1, Restarts: 2,
		Methods: []string{"ours", "baseline"}, Linearize: "data"}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), raw, 0o644))
	require.NoError(t, WriteTruth(filepath.Join(dir, TruthFile), spec, [][]float64{{0.1, 0.05, 0.2}, {1, 0.1, 0.5}, {0.01, 0.5, 1}}))

	_, err = Summarize(dir, spec)
	assert.ErrorContains(t, err, "has no fits yet")
	assert.FileExists(t, filepath.Join(dir, SummaryFile), "written all the same")

	all := []string{"action_cost", "motor_noise", "obs_noise"}
	writeFits(t, dir, "ours", all, map[string]map[string]float64{
		"set001": {"action_cost": 0.2, "motor_noise": 0.05, "obs_noise": 0.1}, // errors 1, 0, 0.5
		"set002": {"action_cost": 1.5, "motor_noise": 0.1, "obs_noise": 0.5},  // errors 0.5, 0, 0
		"set003": nil,
	})
	writeFits(t, dir, "baseline", all[:2], map[string]map[string]float64{
		"set003": {"action_cost": 0.02, "motor_noise": 0.25}, // errors 1, 0.5
	})
	require.NoError(t, AddWallTime(dir, "ours", 12.34))
	ev, err := Summarize(dir, spec)
	require.NoError(t, err)
	assert.Equal(t, []string{"ours", "baseline"}, ev.Methods)
	ours, base := ev.Summary.Methods["ours"], ev.Summary.Methods["baseline"]
	assert.Equal(t, 2, ours.Fitted)
	assert.Equal(t, 1, ours.Failed)
	assert.Equal(t, 0.25, ours.Median, "median of 1, 0, 0.5, 0.5, 0, 0")
	assert.Equal(t, map[string]float64{"action_cost": 0.75, "motor_noise": 0, "obs_noise": 0.25}, ours.PerParam)
	assert.Equal(t, 12.3, ours.WallSeconds)
	assert.Empty(t, ours.NotFitted)
	assert.Equal(t, 1, base.Fitted)
	assert.Equal(t, []string{"obs_noise"}, base.NotFitted)
	assert.Equal(t, 0.75, base.Median)

	var sum Summary
	raw, err = os.ReadFile(filepath.Join(dir, SummaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &sum))
	assert.Equal(t, ev.Summary, sum)
	rows := readCSV(t, filepath.Join(dir, EstimatesFile))
	require.Len(t, rows, 1+6+2)
	assert.Equal(t, []string{"set001", "ours", "action_cost", "0.1", "0.2", "1"}, rows[1])
	assert.Equal(t, []string{"set003", "baseline", "motor_noise", "0.5", "0.25", "0.5"}, rows[8])

	groups, methods, err := AggregateErrors([]string{dir, dir})
	require.NoError(t, err)
	assert.Equal(t, []string{"ours", "baseline"}, methods)
	require.Len(t, groups, 4)
	assert.Equal(t, "linear/partial", groups[0].Task)
	assert.Len(t, groups[0].Errors, 6)
	assert.Len(t, groups[1].Errors, 2)
}
