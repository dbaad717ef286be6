package graph

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Engine compiles and keeps the programs of looped Flows (Tapes) for one owner, whose
// functions it identifies by name: one program per (name, input layouts and shapes), and one
// vector–Jacobian-product program per (name, shapes, which cotangents arrive). It is safe for
// concurrent use; each evaluation uses a Tape of its own.
type Engine struct {
	backend backends.Backend

	mu    sync.Mutex
	progs map[string]*stageProg
	stats ProgramStats
	calls int
}

// NewEngine returns an Engine that compiles for backend b.
func NewEngine(b backends.Backend) *Engine {
	return &Engine{backend: b, progs: map[string]*stageProg{}}
}

// Stats returns the engine's build statistics: Builds counts programs compiled, Nodes the
// largest program's node count.
func (e *Engine) Stats() ProgramStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Calls returns the number of program runs so far (forward and vector–Jacobian products).
func (e *Engine) Calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

type stageProg struct {
	once sync.Once
	err  error
	g    *G.Graph
	outs []outGroup
}

type outGroup struct {
	lay   *layout
	batch []int
}

// call is one stage run: f over the groups seqs[i][t] (stacked over t) and shared, once
// (steps == 0) or for all steps at once.
type call struct {
	name   string
	f      MapFunc
	steps  int
	seqs   [][]*Value
	shared []*Value
	dense  []int // non-nil: output group 0 holds every entry, with these batch dimensions
	outs   [][]*Value
	marker []*Value // non-nil: no stage, but give these values a zero cotangent if they have none
}

func (c *call) groups() int { return len(c.seqs) + len(c.shared) }

// group returns the values of input group i (seqs first, then shared).
func (c *call) group(i int) []*Value {
	if i < len(c.seqs) {
		return c.seqs[i]
	}
	return c.shared[i-len(c.seqs) : i-len(c.seqs)+1]
}

// Tape is a looped Flow: it runs each stage as a compiled program of its Engine right away,
// keeps the results where the backend put them, and records the runs for Backward. It is
// not safe for concurrent use.
type Tape struct {
	e      *Engine
	record bool
	recs   []*call
	ct     map[*Value]*tensors.Tensor
	owned  []*tensors.Tensor
}

// NewTape returns an empty Tape; with grad it records what Backward needs.
func (e *Engine) NewTape(grad bool) *Tape {
	return &Tape{e: e, record: grad, ct: map[*Value]*tensors.Tensor{}}
}

// Input uploads data, k values each of dimensions batch, as a value whose entries are all
// nodes; grad marks it as differentiated (Backward gives its cotangent).
func (tp *Tape) Input(data []float64, k int, batch []int, grad bool) *Value {
	dims := append([]int{k}, batch...)
	t := NewTensor(data, dims...)
	tp.owned = append(tp.owned, t)
	return &Value{t: t, lay: denseLayout(k), batch: slices.Clone(batch), grad: grad}
}

// Series uploads data, steps groups of k values each of dimensions batch laid out as
// [steps][k][batch...], as one value per step (see Input).
func (tp *Tape) Series(data []float64, steps, k int, batch []int, grad bool) []*Value {
	size := k
	for _, d := range batch {
		size *= d
	}
	if len(data) != steps*size {
		panic(fmt.Sprintf("graph: %d values for %d steps of %d", len(data), steps, size))
	}
	out := make([]*Value, steps)
	for t := range out {
		out[t] = tp.Input(data[t*size:(t+1)*size], k, batch, grad)
	}
	return out
}

// Fetch returns the values of v as a flat [K][batch...] array, constants included.
func (tp *Tape) Fetch(v *Value) []float64 {
	size := 1
	for _, d := range v.batch {
		size *= d
	}
	out := make([]float64, v.Len()*size)
	var data []float64
	if v.t != nil {
		data = tensors.MustCopyFlatData[float64](v.t)
	}
	k := 0
	for i, isNode := range v.lay.isNode {
		for j := range size {
			if isNode {
				out[i*size+j] = data[k*size+j]
			} else {
				out[i*size+j] = v.lay.consts[i]
			}
		}
		if isNode {
			k++
		}
	}
	return out
}

// Grad returns the cotangent of v after Backward as a flat [K][batch...] array (zeros where
// nothing flowed); constant entries get 0.
func (tp *Tape) Grad(v *Value) []float64 {
	size := 1
	for _, d := range v.batch {
		size *= d
	}
	out := make([]float64, v.Len()*size)
	t := tp.ct[v]
	if t == nil {
		return out
	}
	data := tensors.MustCopyFlatData[float64](t)
	k := 0
	for i, isNode := range v.lay.isNode {
		if isNode {
			copy(out[i*size:(i+1)*size], data[k*size:(k+1)*size])
			k++
		}
	}
	return out
}

// Release frees the device memory of everything the tape made or uploaded.
func (tp *Tape) Release() {
	for _, t := range tp.owned {
		_ = t.FinalizeAll()
	}
	for _, t := range tp.ct {
		_ = t.FinalizeAll()
	}
	tp.owned, tp.ct, tp.recs = nil, nil, nil
}

// Map implements Flow.
func (tp *Tape) Map(name string, f MapFunc, in ...*Value) []*Value {
	c := &call{name: name, f: f, shared: in}
	tp.run(c)
	out := make([]*Value, len(c.outs))
	for j, o := range c.outs {
		out[j] = o[0]
	}
	return out
}

// MapSteps implements Flow.
func (tp *Tape) MapSteps(name string, f MapFunc, seqs [][]*Value, shared ...*Value) [][]*Value {
	c := &call{name: name, f: f, steps: seqLen(seqs), seqs: seqs, shared: shared}
	tp.run(c)
	return c.outs
}

// Scan implements Flow.
func (tp *Tape) Scan(name string, step StepFunc, init *Value, xs [][]*Value, params []*Value, reverse bool) (*Value, []*Value) {
	T := seqLen(xs)
	full := slices.Clone(init.batch)
	for _, x := range xs {
		full = broadcastInts(full, x[0].batch)
	}
	for _, p := range params {
		full = broadcastInts(full, p.batch)
	}
	carry := init
	if !init.lay.dense() || !slices.Equal(init.batch, full) {
		c := &call{name: name + "/init", f: func(in [][]S) [][]S { return in }, shared: []*Value{init}, dense: full}
		tp.run(c)
		carry = c.outs[0][0]
	}
	stepF := func(in [][]S) [][]S {
		next, y := step(in[0], in[1:1+len(xs)], in[1+len(xs):])
		if len(next) != len(in[0]) {
			panic(fmt.Sprintf("graph: step %s changed the carry from %d to %d scalars", name, len(in[0]), len(next)))
		}
		return [][]S{next, y}
	}
	ys := make([]*Value, T)
	for i := range T {
		t := i
		if reverse {
			t = T - 1 - i
		}
		shared := []*Value{carry}
		for _, x := range xs {
			shared = append(shared, x[t])
		}
		c := &call{name: name, f: stepF, shared: append(shared, params...), dense: full}
		tp.run(c)
		carry, ys[t] = c.outs[0][0], c.outs[1][0]
	}
	if tp.record {
		// Visited first by Backward: the recursion's last carry and its parameters get zero
		// cotangents if nothing else gave them one, so that every step's vector–Jacobian
		// product is the same program.
		tp.recs = append(tp.recs, &call{marker: append([]*Value{carry}, params...)})
	}
	return carry, ys
}

// broadcastInts returns the dimensions of the implicit broadcast of dimensions a and b (nil
// broadcasts to anything), the shorter padded with leading 1s.
func broadcastInts(a, b []int) []int {
	if a == nil {
		return slices.Clone(b)
	}
	if b == nil {
		return a
	}
	for len(a) < len(b) {
		a = append([]int{1}, a...)
	}
	for len(b) < len(a) {
		b = append([]int{1}, b...)
	}
	out := slices.Clone(a)
	for i := range b {
		switch {
		case out[i] == 1:
			out[i] = b[i]
		case b[i] != 1 && b[i] != out[i]:
			panic(fmt.Sprintf("graph: cannot broadcast dimensions %v and %v", a, b))
		}
	}
	return out
}

// run compiles (once) and runs c forward, setting c.outs, and records it.
func (tp *Tape) run(c *call) {
	T := max(c.steps, 1)
	for i := range len(c.seqs) {
		for _, v := range c.seqs[i][1:] {
			if v.lay.key != c.seqs[i][0].lay.key || !slices.Equal(v.batch, c.seqs[i][0].batch) {
				panic(fmt.Sprintf("graph: %s: sequence %d changes its layout over time", c.name, i))
			}
		}
	}
	var key strings.Builder
	fmt.Fprintf(&key, "%s|T%d|dense%v", c.name, c.steps, c.dense)
	tp.inputKey(&key, c)
	prog := tp.e.program(key.String(), func(g *G.Graph) ([]*G.Node, []outGroup) {
		b := newStageBuilder(g, c)
		return b.forward()
	})
	out := tp.e.execute(prog, tp.inputTensors(c))
	grad := false
	for i := range c.groups() {
		for _, v := range c.group(i) {
			grad = grad || v.grad
		}
	}
	c.outs = make([][]*Value, len(prog.outs))
	k := 0
	for j, og := range prog.outs {
		c.outs[j] = make([]*Value, T)
		for t := range T {
			v := &Value{lay: og.lay, batch: og.batch, grad: grad}
			if og.lay.nodes > 0 {
				v.t = out[k]
				k++
			}
			c.outs[j][t] = v
		}
	}
	tp.owned = append(tp.owned, out...)
	if tp.record && grad {
		tp.recs = append(tp.recs, c)
	}
}

func (tp *Tape) inputKey(key *strings.Builder, c *call) {
	for i := range c.groups() {
		v := c.group(i)[0]
		fmt.Fprintf(key, "|%s%v", v.lay.key, v.batch)
	}
}

func (tp *Tape) inputTensors(c *call) []*tensors.Tensor {
	var in []*tensors.Tensor
	for i := range c.groups() {
		for _, v := range c.group(i) {
			if v.lay.nodes > 0 {
				in = append(in, v.t)
			}
		}
	}
	return in
}

// zeros returns a zero cotangent for v.
func (tp *Tape) zeros(v *Value) *tensors.Tensor {
	size := v.lay.nodes
	for _, d := range v.batch {
		size *= d
	}
	return NewTensor(make([]float64, size), append([]int{v.lay.nodes}, v.batch...)...)
}

// Backward computes the cotangents of every differentiated value that out depends on, for the
// cotangent 1 of every entry of out (the gradient of the sum of out's entries); read them with
// Grad. It panics if the tape did not record.
func (tp *Tape) Backward(out *Value) {
	if !tp.record {
		panic("graph: Backward of a tape that does not record")
	}
	if out.lay.nodes == 0 {
		return
	}
	size := out.lay.nodes
	for _, d := range out.batch {
		size *= d
	}
	ones := make([]float64, size)
	for i := range ones {
		ones[i] = 1
	}
	tp.ct[out] = NewTensor(ones, append([]int{out.lay.nodes}, out.batch...)...)
	for i := len(tp.recs) - 1; i >= 0; i-- {
		c := tp.recs[i]
		if c.marker != nil {
			for _, v := range c.marker {
				if v.grad && v.lay.nodes > 0 && tp.ct[v] == nil {
					tp.ct[v] = tp.zeros(v)
				}
			}
			continue
		}
		tp.vjp(c)
	}
}

// vjp runs the vector–Jacobian product of call c: the cotangents of its outputs (missing ones
// as zeros within a group that has some) give, added to what they already hold, those of its
// differentiated inputs.
func (tp *Tape) vjp(c *call) {
	v := &vjpSpec{ctOut: make([]bool, len(c.outs)), gradIn: make([]bool, c.groups()), accIn: make([]bool, c.groups())}
	var cts []*tensors.Tensor
	flows := false
	for j, o := range c.outs {
		for _, x := range o {
			v.ctOut[j] = v.ctOut[j] || (x.lay.nodes > 0 && tp.ct[x] != nil)
		}
		if v.ctOut[j] {
			flows = true
			for _, x := range o {
				t := tp.ct[x]
				if t == nil {
					t = tp.zeros(x)
				}
				cts = append(cts, t)
			}
		}
	}
	if !flows {
		return
	}
	seen := map[*Value]bool{}
	var accs []*tensors.Tensor
	for i := range c.groups() {
		g := c.group(i)
		v.gradIn[i] = g[0].grad && g[0].lay.nodes > 0
		if !v.gradIn[i] {
			continue
		}
		for _, x := range g {
			if seen[x] {
				panic(fmt.Sprintf("graph: %s takes the same differentiated value twice", c.name))
			}
			seen[x] = true
			v.accIn[i] = v.accIn[i] || tp.ct[x] != nil
		}
		if v.accIn[i] {
			for _, x := range g {
				t := tp.ct[x]
				if t == nil {
					t = tp.zeros(x)
				}
				accs = append(accs, t)
			}
		}
	}
	var key strings.Builder
	fmt.Fprintf(&key, "%s|T%d|dense%v|vjp%v%v%v", c.name, c.steps, c.dense, v.ctOut, v.gradIn, v.accIn)
	tp.inputKey(&key, c)
	prog := tp.e.program(key.String(), func(g *G.Graph) ([]*G.Node, []outGroup) {
		b := newStageBuilder(g, c)
		return b.vjp(v), nil
	})
	out := tp.e.execute(prog, append(append(tp.inputTensors(c), cts...), accs...))
	k := 0
	for i := range c.groups() {
		if !v.gradIn[i] {
			continue
		}
		for _, x := range c.group(i) {
			if old := tp.ct[x]; old != nil {
				tp.owned = append(tp.owned, old)
			}
			tp.ct[x] = out[k]
			k++
		}
	}
	for _, t := range cts {
		tp.owned = append(tp.owned, t)
	}
}

// program returns the compiled program of key, building it with build the first time.
func (e *Engine) program(key string, build func(g *G.Graph) ([]*G.Node, []outGroup)) *stageProg {
	e.mu.Lock()
	p, ok := e.progs[key]
	if !ok {
		p = &stageProg{}
		e.progs[key] = p
	}
	e.mu.Unlock()
	p.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				p.err = fmt.Errorf("building %s: %v", strings.SplitN(key, "|", 2)[0], r)
			}
		}()
		t0 := time.Now()
		g := G.NewGraph(e.backend, strings.SplitN(key, "|", 2)[0])
		outputs, outs := build(g)
		p.outs = outs
		if len(outputs) == 0 { // every output is a constant: nothing to run
			return
		}
		t1 := time.Now()
		g.Compile(outputs...)
		t2 := time.Now()
		p.g = g
		e.mu.Lock()
		e.stats.Builds++
		e.stats.Nodes = max(e.stats.Nodes, len(g.Nodes()))
		e.stats.BuildTime += t1.Sub(t0)
		e.stats.CompileTime += t2.Sub(t1)
		e.mu.Unlock()
	})
	if p.err != nil {
		panic(p.err)
	}
	return p
}

func (e *Engine) execute(p *stageProg, in []*tensors.Tensor) []*tensors.Tensor {
	if p.g == nil {
		return nil
	}
	args := make([]any, len(in))
	for i, t := range in {
		args[i] = t
	}
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
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
			ps := make([]*G.Node, len(vals))
			for t := range vals {
				ps[t] = b.param(append([]int{v0.lay.nodes}, v0.batch...))
			}
			if i < len(c.seqs) {
				packed = G.Stack(ps, 1) // [K, T, batch...]
				entryDims = append([]int{c.steps}, v0.batch...)
			} else {
				packed = ps[0]
				entryDims = b.padded(v0.batch)
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
			out = append(out, b.split(p)...)
		}
	}
	return out, b.lays
}

func (b *stageBuilder) vjp(v *vjpSpec) []*G.Node {
	b.unpack()
	b.pack(b.c.f(b.in))
	var loss *G.Node
	for j, o := range b.outs {
		if !v.ctOut[j] {
			continue
		}
		lay := b.lays[j]
		cts := make([]*G.Node, max(b.c.steps, 1))
		for t := range cts {
			cts[t] = b.param(append([]int{lay.lay.nodes}, lay.batch...))
		}
		ct := cts[0]
		if b.c.steps > 0 {
			ct = G.Stack(cts, 1)
		}
		term := G.ReduceAllSum(G.Mul(o[0], ct))
		if loss == nil {
			loss = term
		} else {
			loss = G.Add(loss, term)
		}
	}
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
		v0 := b.c.group(i)[0]
		gs := grads[k : k+v0.lay.nodes]
		k += v0.lay.nodes
		var packed *G.Node
		if i < len(b.c.seqs) {
			packed = G.Stack(gs, 0) // [K, T, batch...]
		} else {
			for e := range gs {
				gs[e] = G.Reshape(gs[e], v0.batch...)
			}
			packed = G.Stack(gs, 0) // a shared input: one cotangent, not one per step
		}
		var parts []*G.Node
		if i < len(b.c.seqs) {
			parts = b.split(packed)
		} else {
			parts = []*G.Node{packed}
		}
		if v.accIn[i] {
			for t := range parts {
				parts[t] = G.Add(parts[t], b.param(parts[t].Shape().Dimensions))
			}
		}
		out = append(out, parts...)
	}
	return out
}
