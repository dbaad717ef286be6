package graph

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// BuildFunc builds the outputs of a computation from its inputs (float64 parameters of the
// shapes given to Program.Run) in graph g.
type BuildFunc func(g *G.Graph, inputs []*G.Node) []*G.Node

// Program is a computation compiled once per combination of input shapes and then run many
// times. It is safe for concurrent use, and runs of one compiled graph may overlap (on the Go
// backend each run uses its own buffers, so concurrent runs use several cores).
type Program struct {
	backend backends.Backend
	name    string
	build   BuildFunc

	mu       sync.Mutex
	compiled map[string]*compiledGraph
	stats    ProgramStats
}

// ProgramStats reports the cost of building and compiling a Program's graphs.
type ProgramStats struct {
	Builds      int           // graphs built (one per distinct input shapes)
	Compiles    int           // graphs compiled
	Late        int           // of Compiles, those compiled one at a time by their first run (Engine)
	Tapes       int           // of Compiles, those the Go backend runs as a tape (see tape)
	Nodes       int           // nodes of the most recently built graph
	BuildTime   time.Duration // total time spent creating graph nodes (autodiff included)
	CompileTime time.Duration // total time the backend spent compiling
	// Waited is the wall time callers spent waiting for building and compiling: BuildTime +
	// CompileTime where graphs are built and compiled one at a time, less where an Engine
	// builds and compiles several at once (BuildTime and CompileTime sum over them). A
	// Program builds graphs of different shapes concurrently and adds each build's time.
	Waited time.Duration
	// Replays counts the evaluations an Engine ran as replays of a recorded one (Tape.Replay),
	// ReplayPrograms those of them that ran as one program (SetReplayPrograms).
	Replays, ReplayPrograms int
}

type compiledGraph struct {
	once sync.Once // builds and compiles g
	err  error
	g    *G.Graph
	tape *tape // the Go backend's executor for g, when it supports g's operations
}

// NewProgram returns a Program named name that builds its graph with build on backend b.
func NewProgram(b backends.Backend, name string, build BuildFunc) *Program {
	return &Program{backend: b, name: name, build: build, compiled: make(map[string]*compiledGraph)}
}

// Stats returns the build statistics so far.
func (p *Program) Stats() ProgramStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Backend returns the program's backend.
func (p *Program) Backend() backends.Backend { return p.backend }

// Compile builds and compiles the graph for the given input dimensions if it is not compiled
// yet. Run does this implicitly; Compile lets callers time it separately.
func (p *Program) Compile(dims ...[]int) error {
	_, err := p.get(dims)
	return err
}

func dimsKey(dims [][]int) string {
	var key strings.Builder
	for _, d := range dims {
		fmt.Fprint(&key, d, ";")
	}
	return key.String()
}

func (p *Program) get(dims [][]int) (*compiledGraph, error) {
	key := dimsKey(dims)
	// Graphs of different shapes are built concurrently; a caller asking for a shape that is
	// being built waits for it.
	p.mu.Lock()
	cg, ok := p.compiled[key]
	if !ok {
		cg = &compiledGraph{}
		p.compiled[key] = cg
	}
	p.mu.Unlock()
	cg.once.Do(func() { cg.err = p.build1(cg, dims) })
	return cg, cg.err
}

// build1 builds and compiles cg's graph for inputs of dims.
func (p *Program) build1(cg *compiledGraph, dims [][]int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("building graph %s: %v", p.name, r)
		}
	}()
	t0 := time.Now()
	if !CompilesSlowly(p.backend) {
		defer pauseGC()()
	}
	g := G.NewGraph(p.backend, p.name)
	inputs := make([]*G.Node, len(dims))
	for i, d := range dims {
		inputs[i] = G.Parameter(g, fmt.Sprintf("in%d", i), shapes.Make(dtypes.Float64, d...))
	}
	outputs := p.build(g, inputs)
	t1 := time.Now()
	var tp *tape
	if !CompilesSlowly(p.backend) && tapesEnabled() {
		tp, _ = compileTape(g, inputs, outputs) // nil: an operation it lacks, simplego runs g
	}
	if tp == nil {
		compileGraph(p.backend, g, nil, outputs...)
	}
	t2 := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Builds++
	p.stats.Compiles++
	if tp != nil {
		p.stats.Tapes++
	}
	p.stats.Nodes = len(g.Nodes())
	p.stats.BuildTime += t1.Sub(t0)
	p.stats.CompileTime += t2.Sub(t1)
	p.stats.Waited += t2.Sub(t0)
	cg.g, cg.tape = g, tp
	if tp != nil {
		// The tape holds all it runs: the graph's million nodes would only stay live for
		// the collector to mark them at every cycle of the fit.
		g.Finalize()
		cg.g = nil
	}
	return nil
}

// Run runs the program on the inputs (float64 tensors), compiling it first for new input
// shapes, and returns the outputs as flat float64 slices with their dimensions.
func (p *Program) Run(inputs ...*tensors.Tensor) (out []Tensor, err error) {
	dims := make([][]int, len(inputs))
	for i, t := range inputs {
		dims[i] = t.Shape().Dimensions
	}
	cg, err := p.get(dims)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("running graph %s: %v", p.name, r)
		}
	}()
	if cg.tape != nil {
		return cg.tape.run(inputs)
	}
	args := make([]any, len(inputs))
	for i, t := range inputs {
		args[i] = t
	}
	results := cg.g.Run(args...)
	out = make([]Tensor, len(results))
	for i, r := range results {
		out[i] = Tensor{Data: tensors.MustCopyFlatData[float64](r), Dims: r.Shape().Dimensions}
		_ = r.FinalizeAll()
	}
	return out, nil
}

// Tensor is a float64 array in row-major order.
type Tensor struct {
	Data []float64
	Dims []int
}

// NewTensor returns a GoMLX tensor holding data with the given dimensions. It panics if the
// sizes differ.
func NewTensor(data []float64, dims ...int) *tensors.Tensor {
	size := 1
	for _, d := range dims {
		size *= d
	}
	if size != len(data) {
		panic(fmt.Sprintf("graph: %d values for dimensions %v", len(data), dims))
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}
