package graph

import (
	"fmt"
	"sync"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// gatherProgs are an Engine's compiled Gather programs, one per (dimensions, axis, index
// length).
type gatherProgs struct {
	mu    sync.Mutex
	progs map[string]*gatherProg
}

type gatherProg struct {
	once sync.Once
	err  error
	g    *G.Graph
}

// Gather returns, on the device, the tensor whose slices along axis are t's slices index[0],
// index[1], …: t of dimensions [d0, …, d_axis, …] gives [d0, …, len(index), …]. It is one
// program call (counted by Calls), compiled once per t's dimensions, axis and len(index), and
// copies each value as it is. t stays the caller's; the result is the caller's to free
// (FinalizeAll). It is for engines whose programs run on an accelerator (WhileLoops), where
// it builds a batch of many rows from the few distinct ones the host uploaded; it panics if an
// index is outside t or axis outside its rank.
func (e *Engine) Gather(t *tensors.Tensor, axis int, index []int) *tensors.Tensor {
	dims := t.Shape().Dimensions
	if axis < 0 || axis >= len(dims) {
		panic(fmt.Sprintf("graph: gather along axis %d of a tensor of dimensions %v", axis, dims))
	}
	idx := make([]int32, len(index))
	for i, k := range index {
		if k < 0 || k >= dims[axis] {
			panic(fmt.Sprintf("graph: gather of slice %d of %d", k, dims[axis]))
		}
		idx[i] = int32(k)
	}
	key := fmt.Sprint(dims, axis, len(index))
	e.gathers.mu.Lock()
	if e.gathers.progs == nil {
		e.gathers.progs = map[string]*gatherProg{}
	}
	p, ok := e.gathers.progs[key]
	if !ok {
		p = &gatherProg{}
		e.gathers.progs[key] = p
	}
	e.gathers.mu.Unlock()
	p.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				p.err = fmt.Errorf("compiling gather %s: %v", key, r)
			}
		}()
		t0 := time.Now()
		g := G.NewGraph(e.backend, "gather")
		x := G.Parameter(g, "x", shapes.Make(t.DType(), dims...))
		at := G.Parameter(g, "index", shapes.Make(dtypes.Int32, len(index), 1))
		// XLA's gather: the index picks a start along axis (start_index_map), that axis is
		// collapsed to the index's own axis, the other axes are kept whole (offset_dims) and
		// keep their places around it.
		var offset []int
		sizes := make([]int, len(dims))
		for i, d := range dims {
			sizes[i] = d
			if i != axis {
				offset = append(offset, i)
			}
		}
		sizes[axis] = 1
		out := G.BackendGather(x, at, 1, offset, []int{axis}, []int{axis}, sizes, false)
		compileGraph(e.backend, g, nil, out)
		p.g = g
		e.mu.Lock()
		e.stats.Builds++
		e.stats.Compiles++
		e.stats.CompileTime += time.Since(t0)
		e.stats.Waited += time.Since(t0)
		e.mu.Unlock()
	})
	if p.err != nil {
		panic(p.err)
	}
	at := tensors.FromFlatDataAndDimensions(idx, len(idx), 1)
	defer func() { _ = at.FinalizeAll() }()
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	return p.g.Run(t, at)[0]
}
