package fit

import (
	"cmp"
	"context"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

// request is one likelihood evaluation asked for by a worker.
type request struct {
	// row names the trial set, data: a subject's index in the fit (a data set made from a
	// subject's estimate: Fitter.setKey), so that a batch groups the requests on one data set
	// side by side.
	row   int
	data  [][][]float64 // the trials to evaluate on
	theta []float64     // full parameter vector in fitting scale
	done  chan response
}

type response struct {
	loglik float64
	grad   []float64
	err    error
}

// batchFunc evaluates many requests at once, in one or a few graph runs.
type batchFunc func(reqs []*request) ([]float64, [][]float64, error)

// batcher lets many goroutines (one per restart of each subject) call a likelihood as if
// alone, while their calls are answered together: it waits until every live worker has a
// request pending (or has finished), then evaluates all of them in one batch. This keeps
// the optimizers' code sequential and the graph evaluations batched.
type batcher struct {
	mu      sync.Mutex
	live    int
	pending []*request
	wake    chan struct{}
	eval    batchFunc
	batches int
	largest int // requests of the largest batch
	// admit, if set, is called by run whenever every live worker waits (or none is live),
	// with the requests pending; it may start workers (each registered with enter before it
	// returns) and says whether it did. A fit's subject queue (Options.Queue) is one.
	admit func(pending int) bool
}

func newBatcher(eval batchFunc) *batcher {
	return &batcher{eval: eval, wake: make(chan struct{}, 1)}
}

// enter registers a worker; every enter must be followed by one exit.
func (b *batcher) enter() {
	b.mu.Lock()
	b.live++
	b.mu.Unlock()
}

// exit unregisters a worker.
func (b *batcher) exit() {
	b.mu.Lock()
	b.live--
	b.mu.Unlock()
	b.signal()
}

func (b *batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// call submits an evaluation of the trials data (named row: request.row) at theta and blocks
// until the batch containing it has run.
func (b *batcher) call(ctx context.Context, row int, data [][][]float64, theta []float64) (float64, []float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	r := &request{row: row, data: data, theta: theta, done: make(chan response, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	b.mu.Unlock()
	b.signal()
	res := <-r.done
	return res.loglik, res.grad, res.err
}

// run serves batches until no worker is live and stop has been closed.
func (b *batcher) run(stop <-chan struct{}) {
	stopped := false
	for {
		b.mu.Lock()
		ready := b.live > 0 && len(b.pending) == b.live
		if b.admit != nil && (ready || b.live == 0) {
			n := len(b.pending)
			b.mu.Unlock()
			if b.admit(n) {
				continue // the new workers' first requests join this round
			}
			b.mu.Lock()
			ready = b.live > 0 && len(b.pending) == b.live
		}
		var batch []*request
		if ready {
			batch, b.pending = b.pending, nil
		}
		finished := stopped && b.live == 0
		b.mu.Unlock()
		if finished {
			return
		}
		if !ready {
			select {
			case <-b.wake:
			case <-stop:
				stopped = true
			}
			continue
		}
		b.batches++
		b.largest = max(b.largest, len(batch))
		ll, grad, err := b.eval(batch)
		for i, r := range batch {
			if err != nil {
				r.done <- response{err: err}
				continue
			}
			r.done <- response{loglik: ll[i], grad: grad[i]}
		}
	}
}

// serve runs fn with a batcher of its own, whose batches evalBatch evaluates for rows padded
// to trials trials and at most most requests a batch, and returns once fn has: fn's workers
// must have exited by then.
func (f *Fitter) serve(trials, most int, fn func(b *batcher)) {
	b := newBatcher(func(reqs []*request) ([]float64, [][]float64, error) {
		return f.evalBatch(trials, most, reqs)
	})
	stop, served := make(chan struct{}), make(chan struct{})
	go func() { b.run(stop); close(served) }()
	fn(b)
	close(stop)
	<-served
}

// queueRows returns the restarts the fit keeps in flight across subjects (Options.Queue) for
// rows padded to trials trials, or 0 for every subject at once.
func (f *Fitter) queueRows(trials int) int {
	q := f.opts.Queue
	switch {
	case q < 0:
		return 0
	case q > 0:
		return max(q, f.opts.Restarts)
	}
	chunk := max(1, cmp.Or(f.opts.MaxBatch, likelihood.DefaultMaxBatch)/max(trials, 1))
	// The Go backend: four chunks per core. On 2 cores one a core took 4–8 % longer than all
	// subjects at once (20 reaching subjects, 10 restarts), four took the same (80 subjects:
	// 97.2 against 96.4 s).
	chunks := 4 * graph.Workers()
	if b := f.e.Backend(); graph.CompilesSlowly(b) && !graph.RunsOnHost(b) {
		// XLA on an accelerator: two chunks, one prepared and uploaded while the other runs;
		// on an H200 one chunk alone took 23–40 % longer (100 reaching subjects) and every
		// subject at once ran out of memory (1,000 subjects): docs/backends.md, "H200,
		// measured 2026-11-25". XLA's CPU plugin runs chunks of XLAHostBatch trajectories a core,
		// as the Go backend does, and takes the Go backend's queue.
		chunks = 2
	}
	return max(chunk*chunks, f.opts.Restarts)
}
