package likelihood

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/nioc-gpu/nioc-gpu/graph"
)

// Kept data (Batching.Keep). A fit's rounds, a sampler's chains and a population's E-steps
// evaluate the same subjects' trials again and again at new parameters; a chunk whose rows
// are those of a chunk of the call before reuses its packed Data and, in the looped form, the
// tensors uploaded for it, whose device buffers stay on the device between calls. On an H200
// packing and uploading took half the wall time of a 100-subject fit (docs/backends.md,
// "Where a GPU fit's time goes").

// dataTensors are the looped form's inputs of a Data's trials: one tensor per step of the
// states and, for trials of their own length, of the steps observed, the ends and
// LinearizeMean's nominal (cols columns: N, or 1 with HorizonTask), and the mask.
type dataTensors struct {
	once                      sync.Once // a kept Data's are made once (Data.tensors)
	X, running, ends, nominal []*tensors.Tensor
	mask                      *tensors.Tensor
	cols                      int
	// stacked: each series is one tensor [k, steps, batch...] (graph.StackSeries), for
	// engines that run while loops; otherwise a tensor per step.
	stacked bool
}

// tensors returns the looped form's inputs of d (n states) and a function that frees them
// when the evaluation is done: a kept chunk's (Batching.Keep) are made on first use and live
// as long as its entry (release), so the function does nothing for them; a chunk gathered on
// the device (Data.dev) has them already.
func (d *Data) tensors(n int, stacked bool) (*dataTensors, func()) {
	if d.dev != nil && d.kept == nil {
		if !stacked {
			panic("likelihood: data gathered on the device asked for one tensor per step")
		}
		return d.dev, d.dev.release
	}
	if d.kept == nil {
		k := &dataTensors{stacked: stacked}
		k.make(d, n)
		return k, k.release
	}
	d.kept.once.Do(func() { d.kept.stacked = stacked; d.kept.make(d, n) })
	if d.kept.stacked != stacked {
		panic("likelihood: kept data asked for in two layouts")
	}
	return d.kept, func() {}
}

// make fills k with d's tensors.
func (k *dataTensors) make(d *Data, n int) {
	T, P, N := d.Steps, d.Rows, d.Trials
	series := func(data []float64, steps, size int, dims ...int) []*tensors.Tensor {
		if k.stacked {
			return []*tensors.Tensor{graph.StackSeries(data, steps, dims[0], dims[1:]...)}
		}
		out := make([]*tensors.Tensor, steps)
		for t := range out {
			out[t] = graph.NewTensor(data[t*size:(t+1)*size], dims...)
		}
		return out
	}
	k.X = series(d.states, T+1, n*P*N, n, P, N)
	k.mask = graph.NewTensor(d.mask, 1, P, N)
	if d.running != nil {
		k.running = series(d.running, T, P*N, 1, P, N)
	}
	if d.ends != nil {
		k.ends = series(d.ends, T, P*N, 1, P, N)
	}
	if d.nominal != nil {
		k.cols = len(d.nominal) / ((T + 1) * n * P)
		k.nominal = series(d.nominal, T+1, n*P*k.cols, n, P, k.cols)
	}
}

// release frees the device memory of k's tensors.
func (k *dataTensors) release() {
	for _, group := range [][]*tensors.Tensor{k.X, k.running, k.ends, k.nominal, {k.mask}} {
		for _, t := range group {
			if t != nil {
				_ = t.FinalizeAll()
			}
		}
	}
}

// dataCache holds the Data of the chunks of EvalRows' last call with Batching.Keep.
type dataCache struct {
	mu           sync.Mutex
	calls        uint64
	entries      map[string]*keptData
	hits, misses int
}

type keptData struct {
	d   *Data
	err error         // why prepare failed
	ok  chan struct{} // closed when d (or err) is set
	// rows are the chunk's rows, held so that the memory by which the key knows them is not
	// reused for other trials while the entry lives.
	rows [][][][]float64
	refs int    // evaluations using d now
	used uint64 // the last call that used it
}

// rowsKey identifies a chunk of rows by the trials it holds (each row's slice, which the
// caller does not change between calls: Batching.Keep) and the shape it is prepared to.
func rowsKey(rows [][][][]float64, trials, steps int) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(trials))
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(steps))
	for _, r := range rows {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatUint(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(r)))), 16))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(len(r)))
	}
	return b.String()
}

// begin starts a call of EvalRows and returns its number.
func (c *dataCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.entries == nil {
		c.entries = map[string]*keptData{}
	}
	return c.calls
}

// get returns the kept Data of the chunk rows in call, preparing it with prepare where no
// entry holds it (a chunk asked for again while it is being prepared waits for it); put must
// follow with the entry when its evaluation is done, unless get returned an error.
func (c *dataCache) get(call uint64, rows [][][][]float64, trials, steps int, prepare func() (*Data, error)) (*Data, *keptData, error) {
	key := rowsKey(rows, trials, steps)
	c.mu.Lock()
	if k, ok := c.entries[key]; ok {
		k.refs++
		k.used = max(k.used, call)
		c.hits++
		c.mu.Unlock()
		<-k.ok
		if k.err != nil {
			return nil, nil, k.err
		}
		return k.d, k, nil
	}
	k := &keptData{ok: make(chan struct{}), rows: rows, refs: 1, used: call}
	c.entries[key] = k
	c.misses++
	c.mu.Unlock()
	d, err := prepare()
	if err != nil {
		c.mu.Lock()
		delete(c.entries, key)
		c.mu.Unlock()
		k.err = err
		close(k.ok)
		return nil, nil, err
	}
	if d.dev != nil {
		d.kept = d.dev
		d.kept.once.Do(func() {}) // made: prepareChunk gathered them
	} else {
		d.kept = &dataTensors{}
	}
	k.d = d
	close(k.ok)
	return d, k, nil
}

// put ends an evaluation of the entry k.
func (c *dataCache) put(k *keptData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k.refs--
}

// end ends call: it frees every entry that no evaluation uses and this call did not use, so
// that the cache holds at most the chunks of the last call (and of calls still running).
func (c *dataCache) end(call uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, k := range c.entries {
		if k.refs == 0 && k.used < call {
			if k.d.kept != nil {
				k.d.kept.release()
			}
			delete(c.entries, key)
		}
	}
}

// Kept returns the number of chunks EvalRows holds for Batching.Keep, and how many chunks of
// its calls with Keep it found kept (reused) and had to pack (packed).
func (e *Evaluator) Kept() (chunks, reused, packed int) {
	e.kept.mu.Lock()
	defer e.kept.mu.Unlock()
	return len(e.kept.entries), e.kept.hits, e.kept.misses
}
