package likelihood

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/graph"
)

// DefaultMaxBatch is the default bound on rows × trials of one graph run of EvalRows.
const DefaultMaxBatch = 2500

// Batching says how EvalRows splits its rows into graph runs.
type Batching struct {
	// Trials is the number of trials every row is padded to (Prepare), the same in every
	// call so that the compiled graphs are reused; 0 means the most of any row of the call.
	Trials int
	// MaxBatch bounds rows × Trials per graph run, which bounds memory; 0 means
	// DefaultMaxBatch.
	MaxBatch int
	// Most is the most rows any call will pass, or 0 if unknown. On a backend whose compiles
	// are slow (XLA) every chunk has the same size, at most Most rows, so that one graph is
	// compiled for all calls.
	Most int
}

// EvalRows returns the log-likelihood of the trials rows[i] at the parameters theta[i] (fitting
// scale) and its gradient, for every i, as Eval does, in chunks of a few fixed sizes, so that
// only a few graph shapes are ever compiled, run concurrently, one per core. The largest chunk
// is what fits b.MaxBatch; smaller ones halve it, and the rows are split into at least as
// many chunks as there are cores when there are enough of them. On a backend whose compiles
// are slow (XLA) every chunk has one size, the largest needed (at most b.Most rows), and is
// padded with copies of the last row: one graph is compiled for all calls. Every chunk
// evaluates as many steps as the longest trial of the call (see Data). The result does not
// depend on how the rows were chunked.
func (e *Evaluator) EvalRows(rows [][][][]float64, theta [][]float64, b Batching) ([]float64, [][]float64, error) {
	if len(rows) != len(theta) {
		return nil, nil, fmt.Errorf("%d rows for %d parameter vectors", len(rows), len(theta))
	}
	if len(rows) == 0 {
		return nil, nil, nil
	}
	trials, steps := b.Trials, 0
	for _, r := range rows {
		if b.Trials <= 0 {
			trials = max(trials, len(r))
		}
		for _, tr := range r {
			steps = max(steps, len(tr)-1)
		}
	}
	maxBatch := b.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	chunk := max(1, maxBatch/trials)
	if !graph.CompilesSlowly(e.Backend()) {
		want := (len(rows) + workers - 1) / workers
		for chunk > 1 && want <= chunk/2 {
			chunk = (chunk + 1) / 2
		}
	} else if b.Most > 0 {
		chunk = min(chunk, b.Most)
	}
	n := (len(rows) + chunk - 1) / chunk
	ll := make([]float64, len(rows))
	grad := make([][]float64, len(rows))
	errs := make([]error, n)
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for c := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := c * chunk
			end := min(start+chunk, len(rows))
			dataRows := make([][][][]float64, chunk)
			thetas := make([][]float64, chunk)
			for i := range chunk {
				k := min(start+i, end-1) // pad with copies of the last row
				dataRows[i], thetas[i] = rows[k], theta[k]
			}
			d, err := e.prepare(dataRows, trials, steps)
			if err != nil {
				errs[c] = err
				return
			}
			l, g, err := e.Eval(d, thetas)
			if err != nil {
				errs[c] = err
				return
			}
			copy(ll[start:end], l)
			copy(grad[start:end], g)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return ll, grad, nil
}
