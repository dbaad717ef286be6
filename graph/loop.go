package graph

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
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
	warm  map[string]bool // Tape.Precompile's keys
	stats ProgramStats
	calls int
	block int // steps per call of a recursion (SetStepsPerCall); 0 is 1
}

// NewEngine returns an Engine that compiles for backend b.
func NewEngine(b backends.Backend) *Engine {
	return &Engine{backend: b, progs: map[string]*stageProg{}, warm: map[string]bool{}}
}

// SetStepsPerCall makes each program of a recursion (Tape.Scan) run k steps, unrolled in its
// graph, instead of one: a recursion of T steps takes ⌈T/k⌉ calls forward and as many
// vector–Jacobian products, and a program about k times as large to compile (a last block of
// T mod k steps is a program of its own). k ≤ 1 is one step per call. Values and gradients do
// not depend on k: each block passes its carry between steps as the one-step programs pass it
// between calls (every entry a node of the recursion's full batch), so each step computes what
// it computes alone (TestScanBlocksEqualSteps). Set it before the first evaluation; programs
// compiled for another k stay cached under their own keys.
func (e *Engine) SetStepsPerCall(k int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.block = max(k, 1)
}

// StepsPerCall returns the steps each program of a recursion runs (SetStepsPerCall).
func (e *Engine) StepsPerCall() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return max(e.block, 1)
}

// Stats returns the engine's build statistics: Builds counts programs built, Compiles those
// compiled, Nodes the largest program's node count.
func (e *Engine) Stats() ProgramStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// compiled reports whether the program of key has been compiled (or has found it has nothing
// to compile). A program another tape's dry run has built but not yet compiled is not: a dry
// run that skipped it would leave its compile to the first run (ProgramStats.Late).
func (e *Engine) compiled(key string) bool {
	e.mu.Lock()
	p, ok := e.progs[key]
	e.mu.Unlock()
	return ok && p.compiled.Load()
}

// Calls returns the number of program runs so far (forward and vector–Jacobian products).
func (e *Engine) Calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// stageProg is one program of an Engine: its graph, built once, and compiled once.
type stageProg struct {
	name        string
	once        sync.Once // builds g
	err         error     // building failed
	g           *G.Graph  // nil if every output is a constant
	outputs     []*G.Node
	outs        []outGroup
	compileOnce sync.Once
	compiled    atomic.Bool // compileOnce has run
	cerr        error       // compiling failed
	tape        *tape       // the Go backend's executor for g, when it supports g's operations
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
// keeps the results where the backend put them, and records the runs for Backward (or, made
// by NewForwardTape, carries tangents instead). It is not safe for concurrent use.
type Tape struct {
	e      *Engine
	record bool
	recs   []*call
	ct     map[*Value]*tensors.Tensor
	owned  []*tensors.Tensor

	fwd      int    // forward mode (NewForwardTape): the number of directions, else 0
	seed     *Value // forward mode: the differentiated input
	seedGrad []float64

	dry     bool     // runs nothing (Dry): builds programs for Compile
	warm    bool     // Precompile compiled every program this tape's flow runs
	pending []func() // dry: what Compile runs, concurrently
	queued  map[*stageProg]bool
}

// NewTape returns an empty Tape; with grad it records what Backward needs.
func (e *Engine) NewTape(grad bool) *Tape {
	return &Tape{e: e, record: grad, ct: map[*Value]*tensors.Tensor{}}
}

// Input uploads data, k values each of dimensions batch, as a value whose entries are all
// nodes; grad marks it as differentiated (Backward gives its cotangent).
func (tp *Tape) Input(data []float64, k int, batch []int, grad bool) *Value {
	dims := append([]int{k}, batch...)
	var t *tensors.Tensor
	if !tp.dry {
		t = NewTensor(data, dims...)
		tp.owned = append(tp.owned, t)
	}
	v := &Value{t: t, lay: denseLayout(k), batch: slices.Clone(batch), grad: grad}
	if grad && tp.fwd > 0 {
		tp.seedTangents(v, k, batch)
	}
	return v
}

// Borrow is Input of a tensor t of dimensions [k, batch...] that the caller made (NewTensor)
// and frees: the tape reads it but never releases it, so that data uploaded once, whose
// device buffer t keeps after its first run, serves many tapes without another upload. t may
// be nil on a dry tape. It is never differentiated.
func (tp *Tape) Borrow(t *tensors.Tensor, k int, batch []int) *Value {
	if tp.dry {
		t = nil
	}
	return &Value{t: t, lay: denseLayout(k), batch: slices.Clone(batch)}
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
	if tp.dry {
		return out
	}
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
// nothing flowed); constant entries get 0. On a forward tape v must be the differentiated
// input.
func (tp *Tape) Grad(v *Value) []float64 {
	if tp.fwd > 0 {
		if v != tp.seed || tp.seedGrad == nil {
			panic("graph: a forward tape gives the gradient of its differentiated input after Backward")
		}
		return slices.Clone(tp.seedGrad)
	}
	size := 1
	for _, d := range v.batch {
		size *= d
	}
	out := make([]float64, v.Len()*size)
	t := tp.ct[v]
	if t == nil || tp.dry {
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
	tp.owned, tp.ct, tp.recs, tp.seed = nil, nil, nil, nil
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
	K := tp.e.StepsPerCall()
	ys := make([]*Value, T)
	for i := 0; i < T; i += K {
		k := min(K, T-i)
		ts := make([]int, k) // the block's steps, in the order they run
		for j := range ts {
			ts[j] = i + j
			if reverse {
				ts[j] = T - 1 - i - j
			}
		}
		shared := []*Value{carry}
		for _, x := range xs {
			for _, t := range ts {
				shared = append(shared, x[t])
			}
		}
		c := &call{name: name, f: blockSteps(name, step, k, len(xs), full), shared: append(shared, params...), dense: full}
		tp.run(c)
		carry = c.outs[0][0]
		for j, t := range ts {
			ys[t] = c.outs[1+j][0]
		}
	}
	if tp.record {
		// Visited first by Backward: the recursion's last carry and its parameters get zero
		// cotangents if nothing else gave them one, so that every step's vector–Jacobian
		// product is the same program.
		tp.recs = append(tp.recs, &call{marker: append([]*Value{carry}, params...)})
	}
	return carry, ys
}

// blockSteps returns the function of one call of a recursion that runs k steps of step: its
// input groups are the carry, then each of the nx sequences' k values in the order the steps
// run, then the parameters; its output groups the last carry, then each step's output. Between
// steps the carry is made what a call passes on (every entry a node of dimensions full), so a
// step computes the same graph in a block as alone.
func blockSteps(name string, step StepFunc, k, nx int, full []int) MapFunc {
	return func(in [][]S) [][]S {
		carry, params := in[0], in[1+nx*k:]
		out := make([][]S, 1+k)
		g := Graph(carry...)
		for j := range k {
			xj := make([][]S, nx)
			for q := range xj {
				xj[q] = in[1+q*k+j]
			}
			next, y := step(carry, xj, params)
			if len(next) != len(carry) {
				panic(fmt.Sprintf("graph: step %s changed the carry from %d to %d scalars", name, len(carry), len(next)))
			}
			if j < k-1 {
				next = slices.Clone(next)
				for e, x := range next {
					next[e] = N(Materialize(g, x, full...))
				}
			}
			carry, out[1+j] = next, y
		}
		out[0] = carry
		return out
	}
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
	for i := range len(c.seqs) {
		for _, v := range c.seqs[i][1:] {
			if v.lay.key != c.seqs[i][0].lay.key || !slices.Equal(v.batch, c.seqs[i][0].batch) {
				panic(fmt.Sprintf("graph: %s: sequence %d changes its layout over time", c.name, i))
			}
		}
	}
	grad := false
	gradIn := make([]bool, c.groups())
	for i := range c.groups() {
		for _, v := range c.group(i) {
			grad = grad || v.grad
		}
		gradIn[i] = c.group(i)[0].grad && c.group(i)[0].lay.nodes > 0
	}
	if tp.fwd > 0 {
		if slices.Contains(gradIn, true) {
			tp.runForward(c, gradIn)
			return
		}
		grad = false // no tangent flows in: constant inputs only
	}
	var key strings.Builder
	fmt.Fprintf(&key, "%s|T%d|dense%v", c.name, c.steps, c.dense)
	tp.inputKey(&key, c)
	prog := tp.e.program(key.String(), !tp.dry, func(g *G.Graph) ([]*G.Node, []outGroup) {
		b := newStageBuilder(g, c)
		return b.forward()
	})
	var out []*tensors.Tensor
	if tp.dry {
		tp.queue(prog)
		out = dryOuts(c, prog.outs, false)
	} else {
		out = tp.e.execute(prog, tp.inputTensors(c))
	}
	tp.setOuts(c, prog.outs, out, grad)
	tp.owned = append(tp.owned, out...)
	if tp.record && grad {
		tp.recs = append(tp.recs, c)
	}
}

// setOuts sets c.outs, the values of output groups outs at each step, from a program's outputs
// out (the tensors of the groups with nodes, step by step), and returns how many it took.
func (tp *Tape) setOuts(c *call, outs []outGroup, out []*tensors.Tensor, grad bool) int {
	c.outs = make([][]*Value, len(outs))
	k := 0
	for j, og := range outs {
		c.outs[j] = make([]*Value, max(c.steps, 1))
		for t := range c.outs[j] {
			v := &Value{lay: og.lay, batch: og.batch, grad: grad}
			if og.lay.nodes > 0 {
				v.t = out[k]
				k++
			}
			c.outs[j][t] = v
		}
	}
	return k
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

// cotangents appends to dst the cotangent of each of vals, zeros where it has none.
func (tp *Tape) cotangents(dst []*tensors.Tensor, vals []*Value) []*tensors.Tensor {
	for _, x := range vals {
		t := tp.ct[x]
		if t == nil {
			t = tp.zeros(x)
		}
		dst = append(dst, t)
	}
	return dst
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
// Grad. On a forward tape (NewForwardTape) it sums out's tangents instead, and Grad then gives
// the differentiated input's cotangent only. It panics if the tape neither records nor
// carries tangents.
func (tp *Tape) Backward(out *Value) {
	if tp.fwd > 0 {
		tp.forwardGrad(out)
		return
	}
	if !tp.record {
		panic("graph: Backward of a tape that does not record")
	}
	if out.lay.nodes == 0 {
		return
	}
	if tp.dry {
		tp.pending = append(tp.pending, tp.vjpJobs(out)...)
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
	if !tp.warm {
		if jobs := tp.vjpJobs(out); len(jobs) > 1 {
			_ = tp.e.parallel(jobs) // an error stays with its program, and the Backward below reports it
		}
	}
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

// vjpSpecOf returns the vector–Jacobian product of call c as Backward runs it, given which
// values hold a cotangent by then (has): which output groups receive cotangents (missing ones
// as zeros within a group that has some), which input groups are differentiated, and which of
// those add to a cotangent they already hold. It reports false if no cotangent reaches c.
// Which values hold a cotangent follows from the recorded calls alone, not from the numbers,
// so precompileVJPs can find every program Backward will need before it runs any.
func vjpSpecOf(c *call, has func(*Value) bool) (*vjpSpec, bool) {
	v := &vjpSpec{ctOut: make([]bool, len(c.outs)), gradIn: make([]bool, c.groups()), accIn: make([]bool, c.groups())}
	flows := false
	for j, o := range c.outs {
		for _, x := range o {
			v.ctOut[j] = v.ctOut[j] || (x.lay.nodes > 0 && has(x))
		}
		flows = flows || v.ctOut[j]
	}
	if !flows {
		return nil, false
	}
	seen := map[*Value]bool{}
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
			v.accIn[i] = v.accIn[i] || has(x)
		}
	}
	return v, true
}

// vjpKey names the program of call c's vector–Jacobian product v in the Engine.
func (tp *Tape) vjpKey(c *call, v *vjpSpec) string {
	var key strings.Builder
	fmt.Fprintf(&key, "%s|T%d|dense%v|vjp%v%v%v", c.name, c.steps, c.dense, v.ctOut, v.gradIn, v.accIn)
	tp.inputKey(&key, c)
	return key.String()
}

// vjpProgram returns the (cached) program of call c's vector–Jacobian product v.
func (tp *Tape) vjpProgram(c *call, v *vjpSpec, waits bool) *stageProg {
	return tp.e.program(tp.vjpKey(c, v), waits, func(g *G.Graph) ([]*G.Node, []outGroup) {
		b := newStageBuilder(g, c)
		return b.vjp(v), nil
	})
}

// vjpJobs returns a task for each vector–Jacobian-product program that Backward(out) will run
// and the Engine has not compiled yet: the task builds (if no one has) and compiles it. Which values get
// cotangents follows from the recorded calls alone (vjpSpecOf), so the programs are known
// before any runs, and Backward compiles them concurrently.
func (tp *Tape) vjpJobs(out *Value) []func() {
	has := map[*Value]bool{out: true}
	var jobs []func()
	keys := map[string]bool{}
	for i := len(tp.recs) - 1; i >= 0; i-- {
		c := tp.recs[i]
		if c.marker != nil {
			for _, v := range c.marker {
				if v.grad && v.lay.nodes > 0 {
					has[v] = true
				}
			}
			continue
		}
		v, ok := vjpSpecOf(c, func(x *Value) bool { return has[x] })
		if !ok {
			continue
		}
		for i, d := range v.gradIn {
			if d {
				for _, x := range c.group(i) {
					has[x] = true
				}
			}
		}
		if k := tp.vjpKey(c, v); !keys[k] && !tp.e.compiled(k) {
			keys[k] = true
			jobs = append(jobs, func() { tp.e.compile(tp.vjpProgram(c, v, false), false) })
		}
	}
	return jobs
}

// vjp runs the vector–Jacobian product of call c: the cotangents of its outputs (missing ones
// as zeros within a group that has some) give, added to what they already hold, those of its
// differentiated inputs.
func (tp *Tape) vjp(c *call) {
	v, ok := vjpSpecOf(c, func(x *Value) bool { return tp.ct[x] != nil })
	if !ok {
		return
	}
	var cts, accs []*tensors.Tensor
	for j, o := range c.outs {
		if v.ctOut[j] {
			cts = tp.cotangents(cts, o)
		}
	}
	for i := range c.groups() {
		if v.accIn[i] {
			accs = tp.cotangents(accs, c.group(i))
		}
	}
	prog := tp.vjpProgram(c, v, true)
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
