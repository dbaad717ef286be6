// The programs of a looped Flow's stages: compiling and caching them (Engine.program), running
// them, and building each stage's graph from its step function (stageBuilder).

package graph

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// program returns the program of key, building its graph with build the first time. The graph
// is compiled by the first compile or execute of it, so that a dry run (Tape.Dry) can build
// every program in order, each from the layouts of the last, and compile them concurrently.
// waits says the caller waits for the build alone (not within a timed batch): stats.Waited.
func (e *Engine) program(key string, waits bool, build func(g *G.Graph) ([]*G.Node, []outGroup, rewriteFunc)) *stageProg {
	e.mu.Lock()
	p, ok := e.progs[key]
	if !ok {
		p = &stageProg{name: strings.SplitN(key, "|", 2)[0]}
		e.progs[key] = p
	}
	e.mu.Unlock()
	p.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				p.err = fmt.Errorf("building %s: %v", p.name, r)
			}
		}()
		t0 := time.Now()
		g := G.NewGraph(e.backend, p.name)
		outputs, outs, rewrite := build(g)
		p.outs, p.rewrite = outs, rewrite
		if len(outputs) == 0 { // every output is a constant: nothing to run
			return
		}
		p.g, p.outputs = g, outputs
		e.mu.Lock()
		e.stats.Builds++
		e.stats.Nodes = max(e.stats.Nodes, len(g.Nodes()))
		e.stats.BuildTime += time.Since(t0)
		if waits {
			e.stats.Waited += time.Since(t0)
		}
		e.mu.Unlock()
	})
	if p.err != nil {
		panic(p.err)
	}
	return p
}

// compile compiles p's graph if nobody has yet (concurrent callers wait for the first), and
// panics with the error if compiling failed; late says the caller is about to run p (stats).
func (e *Engine) compile(p *stageProg, late bool) {
	p.compileOnce.Do(func() {
		defer p.compiled.Store(true)
		if p.g == nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				p.cerr = fmt.Errorf("compiling %s: %v", p.name, r)
			}
		}()
		t0 := time.Now()
		if !CompilesSlowly(e.backend) && tapesEnabled() && p.rewrite == nil {
			params := make([]*G.Node, p.g.NumParameters())
			for h := range params {
				params[h] = p.g.GetParameterByHandle(G.ParameterHandle(h))
			}
			p.tape, _ = compileTape(p.g, params, p.outputs) // nil: simplego runs p.g
		}
		if p.rewrite != nil || p.tape == nil {
			if text := compileGraph(e.backend, p.g, p.rewrite, p.outputs...); e.replaysAsPrograms() {
				p.text = text
			}
		}
		p.took = time.Since(t0)
		if traceCompiles {
			fmt.Fprintf(os.Stderr, "nioc compile %-24s %9.3f s\n", p.name, time.Since(t0).Seconds())
		}
		e.mu.Lock()
		e.stats.CompileTime += time.Since(t0)
		e.stats.Compiles++
		if late {
			e.stats.Late++
			e.stats.Waited += time.Since(t0)
		}
		e.mu.Unlock()
	})
	if p.cerr != nil {
		panic(p.cerr)
	}
}

// parallel runs tasks (building and compiling programs) concurrently, Workers at a time,
// adds the wall time to stats.Waited, and returns their panics as errors. Compiling dominates
// an XLA evaluation's first call and the programs are independent, so compiling them this way
// divides that time by the cores available.
func (e *Engine) parallel(tasks []func()) error {
	t0 := time.Now()
	defer func() {
		e.mu.Lock()
		e.stats.Waited += time.Since(t0)
		e.mu.Unlock()
	}()
	errs := make([]error, len(tasks))
	sem := make(chan struct{}, Workers())
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("%v", r)
				}
				<-sem
				wg.Done()
			}()
			task()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *Engine) execute(p *stageProg, in []*tensors.Tensor) []*tensors.Tensor {
	if p.g == nil {
		return nil
	}
	e.compile(p, true)
	args := make([]any, len(in))
	for i, t := range in {
		args[i] = t
	}
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	if traceCalls {
		defer traceCall(p.name, in, time.Now())
	}
	if p.tape != nil {
		out, err := p.tape.runTensors(in)
		if err != nil {
			panic(err)
		}
		return out
	}
	return p.g.Run(args...)
}

// vjpSpec says which output groups receive cotangents, which input groups are differentiated
// and which of those add to a cotangent they already have.
type vjpSpec struct {
	ctOut, gradIn, accIn []bool
}

// stageBuilder builds the graph of a call: its parameters, the unpacked scalars and f.
type stageBuilder struct {
	g     *G.Graph
	c     *call
	rank  int         // rank of the scalars f sees
	in    [][]S       // per group
	nodes [][]*G.Node // per group: the node of each non-constant entry (gradient targets)
	outs  [][]*G.Node // per output group: packed [K, (T,) batch...], nil if no nodes
	lays  []outGroup  //
	nextP int

	// The program's parameters (argPlan) and where each value is among them:
	e       *Engine    // whose statistics count a while loop's step program
	argDims [][]int    // the program's parameters' dimensions, in order
	args    []*G.Node  // the program's parameters
	saved   int        // a while loop's VJP: the saved carries' parameter
	in0     []groupSrc // each input group's values
	cts     []groupSrc // each output group's cotangents (vjp)
	accs    []groupSrc // each input group's cotangents so far (vjp)
	inside  []*G.Node  // a fused call's: the packed outputs of its calls so far, by slot
}

// arg returns the program's parameter k, or for k < -1 the packed output -2-k of an earlier
// call of the same fused call (argPlan.inside; -1 is groupSrc's "none").
func (b *stageBuilder) arg(k int) *G.Node {
	if k < -1 {
		return b.inside[-2-k]
	}
	return b.args[k]
}

// params creates the program's parameters, of dimensions dims.
func (b *stageBuilder) params(dims [][]int) []*G.Node {
	out := make([]*G.Node, len(dims))
	for k, d := range dims {
		out[k] = b.param(d)
	}
	return out
}

// srcNode returns the node of a value of dimensions dims at s.
func (b *stageBuilder) srcNode(s source, dims []int) *G.Node {
	a := b.arg(s.arg)
	if s.row < 0 {
		return a
	}
	return G.Reshape(G.Slice(a, G.AxisRange(), G.AxisRange(s.row, s.row+1)), dims...)
}

// seqNode returns the values of a sequence at gs, each of dimensions dims ([K, batch...]), as
// one node [K, T, batch...].
func (b *stageBuilder) seqNode(gs groupSrc, dims []int) *G.Node {
	if gs.whole != -1 { // a parameter, or a node of the program's own (arg)
		a := b.arg(gs.whole)
		if gs.from == 0 && a.Shape().Dimensions[seqAxis] == gs.n {
			return a
		}
		return G.Slice(a, G.AxisRange(), G.AxisRange(gs.from, gs.from+gs.n))
	}
	ns := make([]*G.Node, len(gs.srcs))
	for t, s := range gs.srcs {
		ns[t] = b.srcNode(s, dims)
	}
	return G.Stack(ns, seqAxis)
}

func newStageBuilder(g *G.Graph, c *call) *stageBuilder {
	b := &stageBuilder{g: g, c: c}
	for i := range c.groups() {
		b.rank = max(b.rank, len(c.group(i)[0].batch))
	}
	if c.steps > 0 {
		b.rank++
	}
	return b
}

func (b *stageBuilder) param(dims []int) *G.Node {
	p := G.Parameter(b.g, fmt.Sprintf("in%d", b.nextP), shapes.Make(dtypes.Float64, dims...))
	b.nextP++
	return p
}

// padded returns dims with leading 1s up to the builder's rank.
func (b *stageBuilder) padded(dims []int) []int {
	out := slices.Clone(dims)
	for len(out) < b.rank {
		out = append([]int{1}, out...)
	}
	return out
}

// unpack creates the parameters of the inputs and their scalars.
func (b *stageBuilder) unpack() {
	c := b.c
	b.in = make([][]S, c.groups())
	b.nodes = make([][]*G.Node, c.groups())
	for i := range c.groups() {
		vals := c.group(i)
		v0 := vals[0]
		s := make([]S, v0.Len())
		var packed *G.Node
		var entryDims []int
		if v0.lay.nodes > 0 {
			if i < len(c.seqs) {
				packed = b.seqNode(b.in0[i], valueDims(v0)) // [K, T, batch...]
			} else {
				packed = b.srcNode(b.in0[i].srcs[0], valueDims(v0))
			}
			entryDims = b.padded(v0.batch)
			if i < len(c.seqs) {
				entryDims = append([]int{c.steps}, v0.batch...)
			}
		}
		k := 0
		for e, isNode := range v0.lay.isNode {
			if !isNode {
				s[e] = C(v0.lay.consts[e])
				continue
			}
			n := G.Reshape(G.Slice(packed, G.AxisRange(k, k+1)), entryDims...)
			b.nodes[i] = append(b.nodes[i], n)
			s[e] = N(n)
			k++
		}
		b.in[i] = s
	}
}

// pack packs f's outputs.
func (b *stageBuilder) pack(res [][]S) {
	c := b.c
	b.outs = make([][]*G.Node, len(res))
	b.lays = make([]outGroup, len(res))
	for j, r := range res {
		var lay *layout
		var batch []int
		if j == 0 && c.dense != nil {
			lay, batch = denseLayout(len(r)), slices.Clone(c.dense)
		} else {
			lay = newLayout(r)
			var nodes []*G.Node
			for _, x := range r {
				if !x.IsConst() {
					nodes = append(nodes, x.n)
				}
			}
			batch = broadcastDims(nodes...)
			if c.steps > 0 && len(batch) > 0 {
				batch = batch[1:]
			}
		}
		b.lays[j] = outGroup{lay: lay, batch: batch}
		if lay.nodes == 0 {
			continue
		}
		dims := b.padded(batch)
		if c.steps > 0 {
			dims = append([]int{c.steps}, batch...)
		}
		var entries []*G.Node
		for e, x := range r {
			if lay.isNode[e] {
				entries = append(entries, Materialize(b.g, x, dims...))
			}
		}
		packedDims := dims // [T, batch...] for a step map
		if c.steps == 0 {
			packedDims = batch
		}
		b.outs[j] = append(b.outs[j], G.Reshape(G.Stack(entries, 0), append([]int{lay.nodes}, packedDims...)...))
	}
}

// split returns the per-step tensors [K, batch...] of a packed [K, T, batch...] node, or the
// node itself for a call without steps.
func (b *stageBuilder) split(packed *G.Node) []*G.Node {
	if b.c.steps == 0 {
		return []*G.Node{packed}
	}
	d := packed.Shape().Dimensions
	rest := append([]int{d[0]}, d[2:]...)
	out := make([]*G.Node, b.c.steps)
	for t := range out {
		out[t] = G.Reshape(G.Slice(packed, G.AxisRange(), G.AxisRange(t, t+1)), rest...)
	}
	return out
}

func (b *stageBuilder) forward() ([]*G.Node, []outGroup) {
	b.unpack()
	b.pack(b.c.f(b.in))
	var out []*G.Node
	for _, o := range b.outs {
		for _, p := range o {
			if b.c.stackOut {
				out = append(out, p) // [K, T, batch...]
				continue
			}
			out = append(out, b.split(p)...)
		}
	}
	return out, b.lays
}

// loss returns Σ_j ⟨output group j, its cotangent⟩ over the output groups ctOut names (nil if
// none): the scalar whose gradient is the vector–Jacobian product. pack must have run.
func (b *stageBuilder) loss(ctOut []bool) *G.Node {
	var loss *G.Node
	for j, o := range b.outs {
		if !ctOut[j] {
			continue
		}
		lay := b.lays[j]
		dims := append([]int{lay.lay.nodes}, lay.batch...)
		var ct *G.Node
		if b.c.steps > 0 {
			ct = b.seqNode(b.cts[j], dims)
		} else {
			ct = b.srcNode(b.cts[j].srcs[0], dims)
		}
		term := G.ReduceAllSum(G.Mul(o[0], ct))
		if loss == nil {
			loss = term
		} else {
			loss = G.Add(loss, term)
		}
	}
	return loss
}

func (b *stageBuilder) vjp(v *vjpSpec) []*G.Node {
	b.unpack()
	b.pack(b.c.f(b.in))
	loss := b.loss(v.ctOut)
	var targets []*G.Node
	for i := range b.c.groups() {
		if v.gradIn[i] {
			targets = append(targets, b.nodes[i]...)
		}
	}
	grads := G.Gradient(loss, targets...)
	var out []*G.Node
	k := 0
	for i := range b.c.groups() {
		if !v.gradIn[i] {
			continue
		}
		n := b.c.group(i)[0].lay.nodes
		out = append(out, b.gradOut(i, b.entryGrads(i, grads[k:k+n]), v.accIn[i])...)
		k += n
	}
	return out
}

// entryGrads returns the gradients gs of input group i's node entries in the dimensions of its
// values: [T, batch...] for a sequence, batch for a shared input (one cotangent, not one per
// step).
func (b *stageBuilder) entryGrads(i int, gs []*G.Node) []*G.Node {
	if i < len(b.c.seqs) {
		return gs
	}
	out := make([]*G.Node, len(gs))
	for e, g := range gs {
		out[e] = G.Reshape(g, b.c.group(i)[0].batch...)
	}
	return out
}

// gradOut returns the cotangent tensors of input group i from the gradients gs of its node
// entries (entryGrads), with acc what the group's values held before (b.accs[i]) added.
func (b *stageBuilder) gradOut(i int, gs []*G.Node, acc bool) []*G.Node {
	v0 := b.c.group(i)[0]
	packed := G.Stack(gs, 0) // [K, T, batch...] for a sequence, [K, batch...] for a shared input
	dims := valueDims(v0)
	if i < len(b.c.seqs) && b.c.stackOut {
		if acc {
			packed = G.Add(packed, b.seqNode(b.accs[i], dims))
		}
		return []*G.Node{packed}
	}
	parts := []*G.Node{packed}
	if i < len(b.c.seqs) {
		parts = b.split(packed)
	}
	if acc {
		for t := range parts {
			parts[t] = G.Add(parts[t], b.srcNode(b.accs[i].srcs[t], dims))
		}
	}
	return parts
}

// traceCalls and traceCompiles are EnvTraceCalls, read once: 1 traces calls and compiles,
// "compiles" compiles alone.
var (
	traceCalls    = os.Getenv(EnvTraceCalls) == "1"
	traceCompiles = traceCalls || os.Getenv(EnvTraceCalls) == "compiles"
)

// traceCall writes one program call to stderr (EnvTraceCalls): its name, its first input's
// dimensions and the wall time since start, results included.
func traceCall(name string, in []*tensors.Tensor, start time.Time) {
	dims := "-"
	if len(in) > 0 && in[0] != nil {
		dims = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(in[0].Shape().Dimensions)), "×"), "[]")
	}
	fmt.Fprintf(os.Stderr, "nioc call %-24s %-16s %9.3f ms\n", name, dims, float64(time.Since(start).Nanoseconds())/1e6)
}
