package ioc

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

func TestSubjectsAndRemaining(t *testing.T) {
	a := [][]float64{{0, 1}, {1, 2}}
	set := &data.Set{Subjects: []data.Subject{
		{ID: "a", Trials: []data.Trial{{ID: 1, States: a}}}, {ID: "b"}, {ID: "c"},
	}}
	subjects := Subjects(set, 1, 2)
	require.Len(t, subjects, 2)
	assert.Equal(t, fit.Subject{ID: "a", Trials: [][][]float64{a}}, subjects[0])
	assert.Equal(t, "c", subjects[1].ID)
	assert.Len(t, Subjects(set, 1, 1), 3)

	o := &Output{sum: SummaryJSON{Subjects: []SubjectJSON{{Subject: "c"}, {Subject: "x"}}}}
	all := Subjects(set, 1, 1)
	left := o.Remaining(all)
	assert.Equal(t, []string{"a", "b"}, []string{left[0].ID, left[1].ID})
	assert.Len(t, all, 3, "its argument unchanged")
}

func TestProgressFraction(t *testing.T) {
	for _, c := range []struct {
		p    Progress
		want float64
	}{
		{Progress{}, 0},
		{Progress{Subjects: 4, Total: 100}, 0},
		{Progress{SubjectsDone: 1, Subjects: 4, Transitions: 50, Total: 100}, 0.375},
		{Progress{SubjectsDone: 4, Subjects: 4}, 1},
	} {
		assert.InDelta(t, c.want, c.p.Fraction(), 1e-15, "%+v", c.p)
	}
}

// TestWithInit: the chains of a sampler made WithInit start at the estimates of a fit's
// results file; a parameter no record holds is reported absent, and the data each estimate
// was fitted to is returned.
func TestWithInit(t *testing.T) {
	e := newEvaluator(t, likelihood.Options{})
	s, err := New(e, Options{Chains: 2, Draws: 1, Seed: 1})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "fit.jsonl")
	w, err := fit.OpenWriter(path, 0)
	require.NoError(t, err)
	for _, id := range []string{"s1", "s2"} {
		require.NoError(t, w.Write(fit.Record{Subject: id, DataDigest: "sha256:" + id, Run: fit.Run{Task: "linear"},
			Fitted: []string{"action_cost", "motor_noise"}, Params: map[string]float64{"action_cost": 0.1, "motor_noise": 0.01}}))
	}
	require.NoError(t, w.Close())

	init, absent, digests, err := s.WithInit(path, []string{"s2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"obs_noise"}, absent)
	assert.Equal(t, map[string]string{"s2": "sha256:s2"}, digests)
	require.Contains(t, init.Options().Init, "s2")
	assert.InDelta(t, -1, init.Options().Init["s2"].Scaled["action_cost"], 1e-12, "log10 0.1")
	assert.InDelta(t, -2, init.Options().Init["s2"].Scaled["motor_noise"], 1e-12, "log10 0.01")
	assert.Nil(t, s.Options().Init, "s unchanged")

	_, _, _, err = s.WithInit(path, []string{"s3"})
	assert.ErrorContains(t, err, "--init")
}

func TestSampledTogether(t *testing.T) {
	tests := []struct {
		name                                         string
		together, maxBatch, trials, chains, subjects int
		want                                         int
	}{
		{"as many as a run holds", 0, 2500, 20, 2, 100, 62},
		{"no more than there are", 0, 2500, 20, 2, 3, 3},
		{"one subject", 0, 2500, 50, 4, 1, 1},
		{"a run too small for one subject's chains", 0, 100, 50, 4, 10, 1},
		{"set by the user", 5, 2500, 20, 2, 100, 5},
		{"set above the subjects", 5, 2500, 20, 2, 2, 2},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, sampledTogether(tc.together, tc.maxBatch, tc.trials, tc.chains, tc.subjects), tc.name)
	}
}
