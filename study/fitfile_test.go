package study

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConventions(t *testing.T) {
	spec := linearSpec(t)
	jitter := likelihood.TaskJitter(spec)
	prior := likelihood.ReferencePrior(spec)
	for _, c := range []struct {
		opts likelihood.Options
		want string
	}{
		{likelihood.Options{Jitter: jitter}, ""},
		{likelihood.Options{Jitter: jitter, FirstOrderNoise: true, NominalFilter: true}, "first-order-noise,nominal-filter"},
		{likelihood.Options{Jitter: 1e-4, IgnoreGaps: true}, "ignore-gaps,jitter=0.0001"},
		{likelihood.Options{Jitter: jitter, Prior: prior}, "belief-prior=1"},
		{likelihood.Options{Jitter: jitter, Prior: [][]float64{{0.5, 0.1}, {0.1, 0.25}}}, "belief-prior=0.5 0.1;0.1 0.25"},
		{likelihood.Options{Jitter: jitter, Prior: [][]float64{{0.5, 0}, {0, 0.25}}}, "belief-prior=0.5 0;0 0.25"},
		{likelihood.Options{Jitter: jitter, RawAngles: true}, "raw-angles"},
	} {
		assert.Equal(t, c.want, Conventions(spec, c.opts), "%+v", c.opts)
	}
}

func TestStarts(t *testing.T) {
	spec := linearSpec(t)
	recs := []fit.Record{
		{Subject: "a", Fitted: []string{"action_cost"}, Params: map[string]float64{"action_cost": 1}, Fixed: map[string]float64{"obs_noise": 0.01}, DataDigest: "sha256:a"},
		{Subject: "b", Error: "failed"},
		{Subject: "c", Fitted: []string{"action_cost"}, Params: map[string]float64{"action_cost": 0.01}},
	}
	starts := Starts(recs, spec)
	require.Len(t, starts, 2)
	require.Len(t, starts["a"], 2)
	assert.InDelta(t, 0, starts["a"]["action_cost"], 1e-12)
	assert.InDelta(t, -2, starts["a"]["obs_noise"], 1e-12, "a value held fixed, in log10 scale")
	require.Len(t, starts["c"], 1)
	assert.InDelta(t, -2, starts["c"]["action_cost"], 1e-12)

	path := filepath.Join(t.TempDir(), "fit.jsonl")
	w, err := fit.OpenWriter(path, 0)
	require.NoError(t, err)
	for _, r := range recs {
		r.Task = "linear"
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
	set := &data.Set{Subjects: []data.Subject{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	got, digests, err := ReadStarts(path, spec, set, 1, 2) // a and c
	require.NoError(t, err)
	assert.Equal(t, starts, got)
	assert.Equal(t, map[string]string{"a": "sha256:a", "c": ""}, digests)
	_, _, err = ReadStarts(path, spec, set, 2, 2) // b: no successful fit
	assert.ErrorContains(t, err, "b")
}

func TestCheckpointCounts(t *testing.T) {
	rs := func(status ...string) []*fit.RestartState {
		var out []*fit.RestartState
		for _, s := range status {
			if s == "-" {
				out = append(out, nil)
				continue
			}
			out = append(out, &fit.RestartState{Status: s, State: fit.LBFGSBState{Evaluations: 10}})
		}
		return out
	}
	rf := &ResultsFile{Subjects: []fit.Subject{{ID: "a"}, {ID: "b"}}}
	f, r, e := rf.CheckpointCounts()
	assert.Equal(t, []int{0, 0, 0}, []int{f, r, e}, "no checkpoint")
	rf.Checkpoint = &fit.Checkpoint{Subjects: []fit.SubjectState{
		{Subject: "a", Restarts: rs("converged", "", "-")},
		{Subject: "b", Restarts: rs("", "")},
		{Subject: "z", Restarts: rs("converged")}, // done already: not among the subjects
	}}
	f, r, e = rf.CheckpointCounts()
	assert.Equal(t, []int{1, 3, 40}, []int{f, r, e})
}

// TestResultsFile fits a shard of a data set into a results file, resumes it with nothing
// left to fit (removing what a killed checkpoint write left), and lists the differences of a run with another seed.
func TestResultsFile(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	spec := m.Spec()
	set, _, err := Simulate(m, b, Simulation{Theta: spec.Defaults(), Subjects: 3, Trials: 3, Steps: 6, Seed: 2,
		Solver: control.SolverOptions{Planner: spec.Planner}, Sim: control.SimOptions{Observe: control.ObservePartial, Temperature: spec.Temperature}})
	require.NoError(t, err)
	e, err := likelihood.New(m, b, likelihood.Options{FitTemperature: true})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "fit.jsonl")
	open := func(seed uint64) *ResultsFile {
		fitter, err := fit.New(e, fit.Options{Restarts: 1, MaxIter: 2, Seed: seed, CheckDraws: 0})
		require.NoError(t, err)
		rf, err := OpenResults(path, fitter, e.Spec(), RunOf(fitter, e.Spec(), e.Options(), "test"), set, 1, 2)
		require.NoError(t, err)
		return rf
	}
	rf := open(1)
	diffs, unchecked := rf.Differences()
	assert.Empty(t, diffs)
	assert.Zero(t, unchecked)
	require.NoError(t, rf.Start())
	assert.Nil(t, rf.Checkpoint)
	require.Len(t, rf.Subjects, 2)
	assert.Equal(t, []string{"1", "3"}, []string{rf.Subjects[0].ID, rf.Subjects[1].ID}, "shard 1 of 2")
	var reported []string
	failed, err := rf.Fit(context.Background(), func(r fit.Result) { reported = append(reported, r.Subject) })
	require.NoError(t, err)
	assert.Zero(t, failed)
	assert.ElementsMatch(t, []string{"1", "3"}, reported)
	require.Len(t, rf.Done, 2)
	assert.Equal(t, "1", rf.Done[0].Subject, "in the data's order")
	assert.Equal(t, "test", rf.Done[0].Version)
	assert.FileExists(t, fit.CSVPath(rf.Path))
	assert.NoFileExists(t, fit.CheckpointPath(rf.Path))

	again := open(1)
	require.Len(t, again.Done, 2)
	diffs, _ = again.Differences()
	assert.Empty(t, diffs)
	stale := filepath.Join(filepath.Dir(path), ".fit.jsonl.ckpt.tmp-0badf00d") // a checkpoint write killed before its rename
	require.NoError(t, os.WriteFile(stale, []byte("{"), 0o644))
	require.NoError(t, again.Start())
	assert.NoFileExists(t, stale, "Start removes what a killed checkpoint write left")
	assert.Empty(t, again.Subjects, "nothing left to fit")
	_, err = again.Fit(context.Background(), nil)
	require.NoError(t, err)

	other := open(2)
	diffs, _ = other.Differences()
	require.Len(t, diffs, 2)
	assert.ElementsMatch(t, []string{"1", "3"}, []string{diffs[0].Subject, diffs[1].Subject})
	assert.Contains(t, diffs[0].Lines, "seed: 1 in the file, 2 now")
}
