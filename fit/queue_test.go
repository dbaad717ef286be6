package fit

import (
	"context"
	"sync"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueueIsExact fits five subjects through queues of several sizes and requires each
// subject's result, bit for bit, to be the one of all subjects at once and of the subject
// fitted alone; with a queue of one subject's restarts, a batch holds one subject's requests
// and the subjects finish in order; for each linearization (each trial's data, the mean of a
// subject's trials, the agent's iLQG plan).
func TestQueueIsExact(t *testing.T) {
	for _, lin := range []likelihood.Linearization{likelihood.LinearizeData, likelihood.LinearizeMean, likelihood.LinearizeILQG} {
		t.Run(string(lin), func(t *testing.T) { testQueueIsExact(t, likelihood.Options{Linearize: lin}) })
	}
}

func testQueueIsExact(t *testing.T, lopts likelihood.Options) {
	var subjects []Subject
	for i := range 5 {
		subjects = append(subjects, Subject{ID: string(rune('a' + i)), Trials: simulate(t, "linear", control.ObservePartial, 3+i%2, 0, uint64(10+i))})
	}
	base := Options{Restarts: 3, Seed: 4, MaxIter: 25, Queue: -1}
	want := fitAll(t, newFitter(t, "linear", lopts, base), subjects)
	require.Len(t, want, len(subjects))
	for _, s := range subjects[:2] {
		alone := fitAll(t, newFitter(t, "linear", lopts, base), []Subject{s})[s.ID]
		alone.Seconds = 0
		w := want[s.ID]
		w.Seconds = 0
		assert.Equal(t, w, alone, "subject %s alone", s.ID)
	}
	for _, tc := range []struct {
		name  string
		queue int
	}{
		{"one subject at a time", 3},
		{"two subjects", 6},
		{"a queue smaller than a subject", 1},
		{"by backend", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := base
			opts.Queue = tc.queue
			f := newFitter(t, "linear", lopts, opts)
			var (
				mu    sync.Mutex
				order []string // the subjects as they start
			)
			f.started = func(si int) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, subjects[si].ID)
			}
			got := map[string]Result{}
			require.NoError(t, f.FitFrom(context.Background(), subjects, nil, func(r Result) error {
				mu.Lock()
				defer mu.Unlock()
				got[r.Subject] = r
				return nil
			}))
			t.Logf("largest batch %d, batches %d, started %v", f.LargestBatch(), f.Batches(), order)
			if tc.queue > 0 && tc.queue <= opts.Restarts { // a smaller queue still holds one subject
				assert.LessOrEqual(t, f.LargestBatch(), max(opts.Restarts, 2*len(f.infer)), "one subject at a time: its restarts or its Hessian's points")
			}
			for _, s := range subjects {
				r, w := got[s.ID], want[s.ID]
				r.Seconds, w.Seconds = 0, 0
				assert.Equal(t, w, r, "subject %s", s.ID)
			}
			// Subjects start in file order. (They need not finish in it: a subject's trial
			// scores are evaluated outside the batcher, while the next subject's restarts run.)
			assert.Equal(t, []string{"a", "b", "c", "d", "e"}, order, "started in file order")
		})
	}
}

// TestBootstrapSharesTheBatcher: the bootstraps' refits and the goodness-of-fit checks'
// evaluations run in the fit's batches beside the other subjects' restarts, and each
// subject's result, intervals and refits included, is bit for bit the one of the subject
// fitted alone, with every subject at once and through a queue of one subject.
func TestBootstrapSharesTheBatcher(t *testing.T) {
	var subjects []Subject
	for i := range 3 {
		subjects = append(subjects, Subject{ID: string(rune('a' + i)), Trials: simulate(t, "linear", control.ObservePartial, 12, 0, uint64(20+i))})
	}
	agents, err := likelihood.ParseAgentVariants("ours,ours-nonoise")
	require.NoError(t, err)
	base := Options{Restarts: 2, Seed: 4, MaxIter: 25, Uncertainty: UncertaintyBootstrap, Bootstrap: 6, BootstrapAgents: agents, CheckDraws: 5}
	alone := map[string]Result{}
	for _, s := range subjects {
		f := newFitter(t, "linear", likelihood.Options{}, base)
		evaluated := 0 // what the fit's batcher evaluated
		f.SetProgress(func(p Progress) { evaluated = p.Evaluations })
		r := fitAll(t, f, []Subject{s})[s.ID]
		require.NotNil(t, r.Bootstrap, "subject %s: %s", s.ID, r.BootstrapErr)
		require.NotNil(t, r.Check, "subject %s: %s", s.ID, r.CheckErr)
		// Every evaluation ran in the fit's batches: the restarts' and the Hessian's, the
		// refits', the bootstrap's data sets at the estimate and the check's.
		assert.Equal(t, r.Evaluations+r.Bootstrap.Evaluations+base.Bootstrap+r.Check.Draws+r.Check.NonFinite, evaluated, "subject %s", s.ID)
		alone[s.ID] = r
	}
	for _, queue := range []int{-1, base.Restarts} {
		opts := base
		opts.Queue = queue
		f := newFitter(t, "linear", likelihood.Options{}, opts)
		got := fitAll(t, f, subjects)
		t.Logf("queue %d: largest batch %d, batches %d", queue, f.LargestBatch(), f.Batches())
		for _, s := range subjects {
			r, w := got[s.ID], alone[s.ID]
			require.Empty(t, r.Err)
			require.NotNil(t, r.Bootstrap, "subject %s: %s", s.ID, r.BootstrapErr)
			require.NotNil(t, r.Check, "subject %s: %s", s.ID, r.CheckErr)
			assert.Equal(t, base.Bootstrap, r.Bootstrap.Refits)
			r.Seconds, w.Seconds = 0, 0
			assert.Equal(t, w, r, "queue %d, subject %s", queue, s.ID)
		}
	}
}

// TestBatchOrder: a round's requests are evaluated in one order whatever order the workers
// asked in (by row, then parameter vector), so that a fit on a backend where a row's last bits
// depend on its place in its chunk (XLA's CPU plugin without lanes) gives the same numbers
// from run to run.
func TestBatchOrder(t *testing.T) {
	reqs := []*request{
		{row: 1, theta: []float64{0.5, 2}},
		{row: 0, theta: []float64{0.5, 1}},
		{row: 1, theta: []float64{0.5, 1}},
		{row: 0, theta: []float64{-1, 3}},
		{row: 1, theta: []float64{0.25, 9}},
	}
	want := [][]float64{{-1, 3}, {0.5, 1}, {0.25, 9}, {0.5, 1}, {0.5, 2}}
	wantRows := []int{0, 0, 1, 1, 1}
	for _, perm := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}} {
		in := make([]*request, len(reqs))
		for i, j := range perm {
			in[i] = reqs[j]
		}
		var got [][]float64
		var rows []int
		for _, k := range batchOrder(in) {
			got, rows = append(got, in[k].theta), append(rows, in[k].row)
		}
		assert.Equal(t, want, got, "arrival order %v", perm)
		assert.Equal(t, wantRows, rows, "arrival order %v", perm)
	}
}
