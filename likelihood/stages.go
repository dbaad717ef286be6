package likelihood

import (
	"fmt"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/nioc-gpu/nioc-gpu/graph"
)

// StageSize is the size of one stage of the unrolled likelihood graph.
type StageSize struct {
	Name  string // the stage's name in the pipeline (controls, linearize, backward, tracking, …)
	Nodes int    // graph nodes its forward computation adds, every time step included
}

// GraphSizes builds the unrolled likelihood graph (value and, unless Options.ValueOnly,
// gradient) for rows parameter vectors × trials trials of steps time steps and returns the
// nodes each stage of the pipeline adds to the forward computation, in pipeline order, and
// the whole graph's nodes, the gradient's included. On the Go backend a graph run costs a
// fixed time per node plus a time per node and trajectory, and at the batch sizes of one
// fit's restarts the first dominates, so these counts are where an evaluation's time goes
// (docs/benchmarks.md, "Speed"). It builds a graph of its own and leaves the evaluator's unchanged.
func (e *Evaluator) GraphSizes(steps, rows, trials int) (stages []StageSize, total int, err error) {
	d, err := e.prepare(syntheticRows(len(e.sym.Spec.States), steps, rows, trials), trials, steps)
	if err != nil {
		return nil, 0, err
	}
	if e.opts.Linearize == LinearizeILQG {
		return nil, 0, fmt.Errorf("graph sizes: not for --linearize ilqg")
	}
	cf := &countingFlow{index: map[string]int{}}
	prog := graph.NewProgram(e.backend, "sizes_"+e.sym.Spec.Name, func(gg *G.Graph, in []*G.Node) []*G.Node {
		cf.g = gg
		return e.buildUnrolledWith(cf, gg, in)
	})
	copies := 1
	if e.perTrajectory() {
		copies = trials
	}
	dims := [][]int{{len(e.spec.Params), rows, copies}, {steps + 1, len(e.sym.Spec.States), rows, trials}, {rows, trials}}
	for _, t := range d.unrolledInputs(len(e.sym.Spec.States)) {
		dims = append(dims, t.Shape().Dimensions)
	}
	if err := prog.Compile(dims...); err != nil {
		return nil, 0, err
	}
	return cf.sizes, prog.Stats().Nodes, nil
}

// syntheticRows returns rows × trials trials of steps steps of zero states (only the shapes
// matter to GraphSizes).
func syntheticRows(n, steps, rows, trials int) [][][][]float64 {
	out := make([][][][]float64, rows)
	for r := range out {
		out[r] = make([][][]float64, trials)
		for i := range out[r] {
			out[r][i] = make([][]float64, steps+1)
			for t := range out[r][i] {
				out[r][i][t] = make([]float64, n)
			}
		}
	}
	return out
}

// countingFlow is the unrolled Flow that counts the nodes each named stage adds.
type countingFlow struct {
	g     *G.Graph
	sizes []StageSize
	index map[string]int
}

func (c *countingFlow) count(name string, build func()) {
	before := len(c.g.Nodes())
	build()
	i, ok := c.index[name]
	if !ok {
		i = len(c.sizes)
		c.index[name] = i
		c.sizes = append(c.sizes, StageSize{Name: name})
	}
	c.sizes[i].Nodes += len(c.g.Nodes()) - before
}

func (c *countingFlow) Map(name string, f graph.MapFunc, in ...*graph.Value) (out []*graph.Value) {
	c.count(name, func() { out = graph.Unrolled{}.Map(name, f, in...) })
	return out
}

func (c *countingFlow) MapSteps(name string, f graph.MapFunc, seqs [][]*graph.Value, shared ...*graph.Value) (out [][]*graph.Value) {
	c.count(name, func() { out = graph.Unrolled{}.MapSteps(name, f, seqs, shared...) })
	return out
}

func (c *countingFlow) Scan(name string, step graph.StepFunc, init *graph.Value, xs [][]*graph.Value, params []*graph.Value, reverse bool) (final *graph.Value, ys []*graph.Value) {
	c.count(name, func() { final, ys = graph.Unrolled{}.Scan(name, step, init, xs, params, reverse) })
	return final, ys
}
