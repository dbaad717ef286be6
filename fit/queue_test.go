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
