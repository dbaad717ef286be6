package likelihood

import (
	"unsafe"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/nioc-gpu/nioc-gpu/graph"
)

// Chunks of few distinct rows. A fit's chunk holds each subject's restarts side by side and a
// sampler's each subject's chains: 2,500 rows of a GPU chunk are some 50 subjects' trials. On
// an engine that runs while loops (XLA), prepareChunk packs and uploads each distinct row once
// and the device copies it into its rows (graph.Engine.Gather): on an H200 packing a chunk's
// rows and copying them into tensors took 20 of the 39 CPU-seconds of a 100-subject fit
// (docs/backends.md, "Where a GPU fit's time goes").

// distinctRows returns the distinct rows of rows, in the order they first appear, and for
// each row the index of its distinct row. A row is known by its slice (as Batching.Keep knows
// it): the rows of a fit's subject are one slice.
func distinctRows(rows [][][][]float64) (distinct [][][][]float64, index []int) {
	type id struct {
		p *[][]float64
		n int
	}
	at := map[id]int{}
	index = make([]int, len(rows))
	for i, r := range rows {
		key := id{unsafe.SliceData(r), len(r)}
		k, ok := at[key]
		if !ok {
			k = len(distinct)
			at[key] = k
			distinct = append(distinct, r)
		}
		index[i] = k
	}
	return distinct, index
}

// distinctBucket returns the number of rows prepareChunk packs for u distinct rows: the next
// power of two, so that few gather programs compile.
func distinctBucket(u int) int {
	b := 1
	for b < u {
		b *= 2
	}
	return b
}

// prepareChunk is prepare for a chunk of EvalRows. Where the engine runs while loops and the
// chunk's distinct rows, rounded up to a power of two, are at most half of its rows, it packs
// those alone (padded with copies of the last) and gathers the chunk's states on the device:
// the Data it returns then holds its states only there (Data.dev), so that it serves only the
// looped form. Trials of their own length (Data.Varying) are packed as before, as are any
// rows prepare refuses (its errors name the chunk's rows).
func (e *Evaluator) prepareChunk(rows [][][][]float64, trials, steps int) (*Data, error) {
	if e.lanes() && trials == 1 && len(rows)%LaneWidth == 0 {
		d, err := e.prepare(rows, trials, steps)
		if err == nil {
			packLanes(d)
		}
		return d, err
	}
	if !e.looped() || !e.engine.WhileLoops() {
		return e.prepare(rows, trials, steps)
	}
	distinct, index := distinctRows(rows)
	U := distinctBucket(len(distinct))
	if 2*U > len(rows) {
		return e.prepare(rows, trials, steps)
	}
	for len(distinct) < U {
		distinct = append(distinct, distinct[len(distinct)-1])
	}
	u, err := e.prepare(distinct, trials, steps)
	if err != nil || u.Varying() {
		return e.prepare(rows, trials, steps)
	}
	n, P, N, T := len(e.spec.States), len(rows), u.Trials, u.Steps
	d := &Data{Rows: P, Trials: N, Steps: T, mask: make([]float64, P*N), initial: make([][]float64, P)}
	for p, k := range index {
		copy(d.mask[p*N:(p+1)*N], u.mask[k*N:(k+1)*N])
		d.initial[p] = u.initial[k]
	}
	x := graph.StackSeries(u.states, T+1, n, U, N) // [n, T+1, U, N]
	defer func() { _ = x.FinalizeAll() }()
	d.dev = &dataTensors{stacked: true, X: []*tensors.Tensor{e.engine.Gather(x, 2, index)}, mask: graph.NewTensor(d.mask, 1, P, N)}
	return d, nil
}
