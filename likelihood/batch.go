package likelihood

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gomlx/gomlx/backends"

	"github.com/nioc-gpu/nioc-gpu/graph"
)

// DefaultMaxBatch is the default bound on rows × trials of one graph run of EvalRows.
const DefaultMaxBatch = 2500

// AcceleratorBatchSteps is the default bound on the trajectory steps (rows × trials × steps)
// of one graph run of EvalRows on an accelerator (MaxBatchFor): 25,000 trajectories of 50
// steps. A GPU's time per evaluation hardly grows with the batch up to hundreds of parameter
// vectors (reaching, 50 trials: on the H200 66 ms for 50 vectors, 83 ms for 500, 484 ms for
// 5,000; docs/backends.md, "JAX on the same GPU"), so DefaultMaxBatch's 50 vectors leave it
// nearly idle; at 500 it runs at 60 % of its saturated rate, and two such runs in flight (a
// fit's queue) take about 8 GB of device memory at the H100's measured ≤ 3.2 kB a trajectory
// step (docs/backends.md, "GPU"), so that the default fits a GPU of 16 GB or more.
const AcceleratorBatchSteps = 1_250_000

// MaxBatchFor returns the default Batching.MaxBatch on backend b for trials of up to steps
// steps: DefaultMaxBatch on the Go backend and XLA's CPU plugin (graph.RunsOnHost), and on an
// accelerator AcceleratorBatchSteps / steps trajectories, at least DefaultMaxBatch.
func MaxBatchFor(b backends.Backend, steps int) int {
	if runsOnHost(b) {
		return DefaultMaxBatch
	}
	return max(DefaultMaxBatch, AcceleratorBatchSteps/max(steps, 1))
}

// HostBatch bounds rows × trials of one graph run of EvalRows on the CPU (the Go backend; XLA's
// CPU plugin has XLAHostBatch), below MaxBatch: there a chunk runs on one core, and smaller chunks keep
// their buffers in the core's caches. 12 reaching subjects, 5 restarts each, 50 trials, on 2
// cores: the CPU plugin (kernels run sequentially, graph/xlapatch) 17.3–18.7 s in chunks of 50
// rows, 8.7–9.2 s in chunks of 5 to 15 (docs/backends.md, "Sequential thunks"); the Go backend's
// default fit 16.5 s in chunks of 30 rows, 11.2 s in chunks of 10, one subject of cart-pole with
// 50 restarts 18.6–21.0 s against 14.3–14.7 s (docs/speed.md, change 17).
const HostBatch = 500

// XLAHostBatch and HostBatchSteps bound one graph run of EvalRows on XLA's CPU plugin, below
// HostBatch: rows × trials at most XLAHostBatch, and rows × trials × steps at most
// HostBatchSteps, since a chunk's recursions keep every step's values for their VJPs and long
// trials outgrow a core's caches. On 2 cores, 50 restarts, Hessian only, programs cached,
// chunks of 10 rows of 50 trials (HostBatch) against 5: cart-pole (200 steps) 20.7–20.9 →
// 13.4–14.3 s (chunks of 2: 17.1 s; the Go backend 12.6–13.9 s with either), reaching
// 5.16–5.81 → 4.46–5.16 s, pendulum 1.98–2.07 → 1.76–1.99 s, navigation 4.10–4.31 against
// 4.15–4.44 s; 12 reaching subjects of 5 restarts 7.5–8.3 → 6.8–7.0 s (docs/backends.md,
// "Chunks of XLA's CPU plugin").
const (
	XLAHostBatch   = 250
	HostBatchSteps = 50_000
)

// Batching says how EvalRows splits its rows into graph runs.
type Batching struct {
	// Trials is the number of trials every row is padded to (Prepare), the same in every
	// call so that the compiled graphs are reused; 0 means the most of any row of the call.
	Trials int
	// MaxBatch bounds rows × Trials per graph run, which bounds memory; 0 means
	// DefaultMaxBatch. A row of more trials than MaxBatch is evaluated in parts of at most
	// MaxBatch trials whose log-likelihoods and gradients are summed (not under
	// LinearizeMean, whose control law depends on all of a row's trials together).
	MaxBatch int
	// Most is the most rows any call will pass, or 0 if unknown. On a backend whose compiles
	// are slow (XLA) chunks have one size, at most Most rows, and a smaller one only once
	// padding small calls into it has cost as much as compiling it (chunkRows).
	Most int
	// Keep says that the trials of the rows do not change between calls (a fit's subjects, a
	// sampler's): a chunk whose rows are those of a chunk of the last call reuses its packed
	// data and, in the looped form, the tensors uploaded for it (keep.go), so that on an
	// accelerator the trials stay on the device. A row is known by its slice: the caller must
	// not change a row's trials in place while it keeps them.
	Keep bool
	// lanes: the rows are single trials that EvalRows runs as lanes (evalLanes).
	lanes bool
}

// EvalRows returns the log-likelihood of the trials rows[i] at the parameters theta[i] (fitting
// scale) and its gradient, for every i, as Eval does, in chunks of a few fixed sizes (see
// chunkRows; a smaller size is built only once padding into a larger one has cost as much
// as its build, see chunkPlanner), so that only a few graph shapes are ever
// compiled, run concurrently, one per core, the last chunk padded with copies of the last
// row. Every chunk evaluates as many steps as the longest trial of the call (see Data). The
// result does not depend on how the rows were chunked.
func (e *Evaluator) EvalRows(rows [][][][]float64, theta [][]float64, b Batching) ([]float64, [][]float64, error) {
	if len(rows) != len(theta) {
		return nil, nil, fmt.Errorf("%d rows for %d parameter vectors", len(rows), len(theta))
	}
	if len(rows) == 0 {
		return nil, nil, nil
	}
	if !b.lanes && e.lanes() {
		return e.evalLanes(rows, theta, b)
	}
	if b.MaxBatch > 0 && e.splitsTrials() {
		if ll, grad, ok, err := e.evalSplit(rows, theta, b); ok {
			return ll, grad, err
		}
	}
	trials, steps, ladder, ideal := e.plan(rows, b)
	workers := graph.Workers()
	slow := graph.CompilesSlowly(e.Backend())
	host := runsOnHost(e.Backend())
	var chunk int
	if !slow {
		chunk, _ = e.chunks.choose(ideal, len(rows), workers, trials, steps, ladder, e.meanBuild(), false, false)
	} else {
		var start bool
		chunk, start = e.chunks.choose(ideal, len(rows), rungWorkers(workers, slow, host), trials, steps, ladder, e.shapeBuild(), true, !host || b.lanes)
		if start {
			e.buildChunk(ideal, rows, theta, trials, steps)
		}
	}
	fresh := !e.chunks.isBuilt(chunk, trials, steps)
	n := (len(rows) + chunk - 1) / chunk
	if !slow {
		if ll, grad, ok, err := e.evalFlat(rows, theta, chunk, n, trials, steps, workers); ok {
			return ll, grad, err
		}
	}
	ll := make([]float64, len(rows))
	grad := make([][]float64, len(rows))
	errs := make([]error, n)
	var call uint64
	if b.Keep {
		call = e.kept.begin()
		defer e.kept.end(call)
	}
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
			var d *Data
			var err error
			if b.Keep {
				var k *keptData
				d, k, err = e.kept.get(call, dataRows, trials, steps, func() (*Data, error) { return e.prepareChunk(dataRows, trials, steps) })
				if err == nil {
					defer e.kept.put(k)
				}
			} else {
				d, err = e.prepareChunk(dataRows, trials, steps)
			}
			if err != nil {
				errs[c] = err
				return
			}
			t0 := time.Now()
			l, g, err := e.Eval(d, thetas)
			e.chunks.done(chunk, trials, steps, time.Since(t0), fresh)
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

// plan returns the trials every row of a call of rows is padded to, its most steps, the chunk
// sizes EvalRows chooses from (chunkLadder) and the ideal one for the call (chunkRows).
func (e *Evaluator) plan(rows [][][][]float64, b Batching) (trials, steps int, ladder []int, ideal int) {
	trials = b.Trials
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
	workers := graph.Workers()
	slow := graph.CompilesSlowly(e.Backend())
	host := runsOnHost(e.Backend())
	ladder = chunkLadder(chunkMost(maxBatch, trials, steps, host, slow), b.Most, workers, slow, host)
	if b.lanes {
		for i, c := range ladder {
			ladder[i] = laneChunk(c)
		}
	}
	return trials, steps, ladder, ladderRung(ladder, len(rows), rungWorkers(workers, slow, host))
}

// runsOnHost is graph.RunsOnHost, a variable so that tests run XLA's CPU plugin as an
// accelerator.
var runsOnHost = graph.RunsOnHost

// buildChunk compiles the programs of chunks of size rows in the background, by evaluating
// one (the first rows of rows, padded with copies of the last) and discarding the result; the
// chunk planner uses the size once it has compiled (chunkPlanner.built). On XLA the compile
// then runs beside the calls that pad into the larger size meanwhile: on a GPU on host cores
// that would otherwise wait for the device.
func (e *Evaluator) buildChunk(size int, rows [][][][]float64, theta [][]float64, trials, steps int) {
	dataRows := make([][][][]float64, size)
	thetas := make([][]float64, size)
	for i := range size {
		k := min(i, len(rows)-1)
		dataRows[i], thetas[i] = rows[k], slices.Clone(theta[k])
	}
	go func() {
		d, err := e.prepareChunk(dataRows, trials, steps)
		if err == nil {
			_, _, err = e.Eval(d, thetas)
		}
		e.chunks.built(size, trials, steps, err == nil)
	}()
}

// meanBuild returns the mean time the evaluator has spent building (and compiling) a graph.
func (e *Evaluator) meanBuild() time.Duration {
	st := e.Stats()
	if st.Builds == 0 {
		return 0
	}
	return (st.BuildTime + st.CompileTime) / time.Duration(st.Builds)
}

// shapeBuild returns what a new chunk size costs the looped form, where a size is all the
// programs of a shape (a few dozen on XLA, compiled concurrently): the wall time callers
// have waited for compiles (graph.ProgramStats.Waited, less where NIOC_XLA_CACHE held the
// programs) per shape evaluated.
func (e *Evaluator) shapeBuild() time.Duration {
	waited := e.engine.Stats().Waited
	e.mu.Lock()
	shapes := len(e.shapes)
	e.mu.Unlock()
	return waited / time.Duration(max(1, shapes))
}

// chunkRows returns the rows per chunk with which EvalRows evaluates rows rows on workers
// cores, most rows fitting one chunk (MaxBatch / trials), where every size of the ladder is
// built. Every graph shape costs a build (the Go backend: building and differentiating the
// unrolled graph, 0.1–2.5 s by task) or a compile (XLA: seconds), so the sizes come from a
// short ladder fixed for the whole fit, and EvalRows builds a smaller size only once padding
// into a larger one has cost as much (chunkPlanner):
//
//   - on XLA's CPU plugin (graph.RunsOnHost), one size, ⌈Most / (k · workers)⌉ rows with k the
//     smallest that makes it at most most, which EvalRows takes from XLAHostBatch there, so
//     that the chunks of a call run k per core as on the Go backend, none of them a padded
//     remainder, and a call of fewer rows pads into fewer chunks
//     (docs/backends.md, "Sequential thunks"): a second size would compile on the cores the
//     fit runs on;
//   - on an accelerator, the largest size needed (Most rows, at most most), one program for
//     the whole batch, and top/16 (at least 1) for calls it holds in one chunk (a fit's last
//     restarts, a profile's constrained fits, a Hessian's points), compiled in the background
//     once padding them has cost what a compile does (chunkPlanner);
//   - on the Go backend, top = ⌈Most / workers⌉ rows (at most most), then top/4, top/16,
//     …, and 1: the smallest size that puts every row in one round of chunks over the cores, or
//     top when none does. A chunk's time there is a fixed cost per graph node plus a cost per
//     trajectory, and the fixed cost dominates small chunks (navigation: 48 ms for the
//     graph's 271,517 nodes against 0.2 ms a trajectory), so padding a chunk up to the next
//     rung costs less than building the graph of another size (docs/benchmarks.md, "Speed").
//
// Most is the most rows any call of the fit passes (0: unknown, then top is most).
func chunkRows(rows, most, Most, workers int, compilesSlowly, onHost bool) int {
	return ladderRung(chunkLadder(most, Most, workers, compilesSlowly, onHost), rows, rungWorkers(workers, compilesSlowly, onHost))
}

// rungWorkers returns the chunks that run at once: one per core, but one on an accelerator,
// which runs a call's chunks one after another.
func rungWorkers(workers int, compilesSlowly, onHost bool) int {
	if compilesSlowly && !onHost {
		return 1
	}
	return workers
}

// ladderRung returns the smallest size of ladder (largest first) that puts rows rows in one
// round of chunks over workers cores, or the largest when none does.
func ladderRung(ladder []int, rows, workers int) int {
	chunk := ladder[0]
	for _, c := range ladder[1:] {
		if (rows+c-1)/c > workers {
			break
		}
		chunk = c
	}
	return chunk
}

// chunkMost returns the most rows of trials trials that one chunk holds: maxBatch / trials, and
// at most HostBatch / trials on the Go backend, and on XLA's CPU plugin (onHost and
// compilesSlowly) at most XLAHostBatch / trials and HostBatchSteps / (trials × steps); at
// least 1.
func chunkMost(maxBatch, trials, steps int, onHost, compilesSlowly bool) int {
	switch {
	case onHost && compilesSlowly:
		maxBatch = min(maxBatch, XLAHostBatch, HostBatchSteps/max(steps, 1))
	case onHost:
		maxBatch = min(maxBatch, HostBatch)
	}
	return max(1, maxBatch/max(trials, 1))
}

// chunkLadder returns the chunk sizes chunkRows chooses from, largest first.
func chunkLadder(most, Most, workers int, compilesSlowly, onHost bool) []int {
	top := most
	if Most > 0 {
		perWorker := (Most + workers - 1) / workers
		top = min(top, perWorker)
		switch {
		case compilesSlowly && !onHost:
			top = min(most, Most)
		case compilesSlowly:
			// XLA's CPU plugin: equal chunks, k a core, the fewest that fit most, so that a
			// call of Most rows runs in k rounds without a padded extra chunk.
			k := (perWorker + most - 1) / most
			top = (perWorker + k - 1) / k
		}
	}
	ladder := []int{max(top, 1)}
	if compilesSlowly {
		if small := max(top/16, 1); !onHost && small < ladder[0] {
			ladder = append(ladder, small)
		}
		return ladder
	}
	for c := top / 4; ladder[len(ladder)-1] > 1; c /= 4 {
		ladder = append(ladder, max(c, 1))
	}
	return ladder
}

// splitsTrials reports whether a row's log-likelihood is the sum of those of any partition
// of its trials: every linearization but LinearizeMean (one control law from the mean of all
// of a row's trials).
func (e *Evaluator) splitsTrials() bool { return e.opts.Linearize != LinearizeMean }

// evalSplit is EvalRows for rows with more trials than b.MaxBatch: each such row is split
// into parts of at most MaxBatch trials (as evenly as possible), the parts evaluated as rows
// of their own at the row's θ, and their log-likelihoods and gradients summed. ok is false
// when no row needs it.
func (e *Evaluator) evalSplit(rows [][][][]float64, theta [][]float64, b Batching) (ll []float64, grad [][]float64, ok bool, err error) {
	var parts [][][][]float64
	var thetas [][]float64
	var owner []int
	for i, r := range rows {
		n := (len(r) + b.MaxBatch - 1) / b.MaxBatch
		if n > 1 {
			ok = true
		}
		n = max(n, 1)
		for k := range n {
			parts = append(parts, r[k*len(r)/n:(k+1)*len(r)/n])
			thetas = append(thetas, theta[i])
			owner = append(owner, i)
		}
	}
	if !ok {
		return nil, nil, false, nil
	}
	sub := b
	sub.Trials = min(b.MaxBatch, max(b.Trials, 0))
	if b.Most > 0 {
		sub.Most = len(parts) * b.Most / len(rows)
	}
	pll, pgrad, err := e.EvalRows(parts, thetas, sub)
	if err != nil {
		return nil, nil, true, err
	}
	ll = make([]float64, len(rows))
	grad = make([][]float64, len(rows))
	for j, i := range owner {
		ll[i] += pll[j]
		if grad[i] == nil {
			grad[i] = make([]float64, len(pgrad[j]))
		}
		for k, g := range pgrad[j] {
			grad[i][k] += g
		}
	}
	return ll, grad, true, nil
}
