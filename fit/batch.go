package fit

import (
	"context"
	"sync"
)

// request is one likelihood evaluation asked for by a worker.
type request struct {
	row   int       // index of the trial set (subject) to evaluate on
	theta []float64 // full parameter vector in fitting scale
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

// call submits an evaluation and blocks until the batch containing it has run.
func (b *batcher) call(ctx context.Context, row int, theta []float64) (float64, []float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	r := &request{row: row, theta: theta, done: make(chan response, 1)}
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
