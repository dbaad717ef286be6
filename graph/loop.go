package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

	mu       sync.Mutex
	progs    map[string]*stageProg
	warm     map[string]bool // Tape.Precompile's keys
	stats    ProgramStats
	calls    int
	block    int  // steps per call of a recursion (SetStepsPerCall); 0 is 1
	while    bool // recursions as while loops where the backend builds StableHLO (SetWhileLoops)
	unfused  bool // each map a program of its own (SetFusedCalls)
	noReplay bool // evaluations never replayed (SetReplays)
	asOne    bool // replays run as one program (SetReplayPrograms)

	lays     map[string][]outGroup // Engine.layouts
	recorded map[string]*Replay    // Tape.SaveRecording's, by key; nil: not replayable

	gathers gatherProgs // Gather's programs
}

// NewEngine returns an Engine that compiles for backend b.
func NewEngine(b backends.Backend) *Engine {
	return &Engine{backend: b, progs: map[string]*stageProg{}, warm: map[string]bool{}, unfused: !fusedCallsDefault, noReplay: !replaysDefault, asOne: replayProgramsDefault}
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
	compiled    atomic.Bool   // compileOnce has run
	cerr        error         // compiling failed
	tape        *tape         // the Go backend's executor for g, when it supports g's operations
	rewrite     rewriteFunc   // replaces the program's text before it compiles (while loops)
	text        string        // the StableHLO text compiled, kept where replays run as one program
	took        time.Duration // compiling it (or loading it from the cache) took
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
	marker []*Value   // non-nil: no stage, but give these values a zero cotangent if they have none
	loop   *whileLoop // non-nil: a recursion run as one while-loop program (loop_while.go)
	saved  *stacked   // loop.save: every step's incoming carry, for the VJP
	// stackOut: each output group's values over the steps come as one stacked tensor, and so
	// do the cotangents of the sequences (loop_stack.go).
	stackOut bool
	fused    *fusedCall // non-nil: the calls of a fused call, run as one program (loop_fuse.go)
	slots    []int      // a call of a fused call: each output group's slot, -1 if it has no nodes
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
	ct     map[*Value]ref
	owned  []*tensors.Tensor

	fwd      int    // forward mode (NewForwardTape): the number of directions, else 0
	seed     *Value // forward mode: the differentiated input
	seedGrad []float64

	dry     bool     // runs nothing (Dry): builds programs for Compile
	warm    bool     // Precompile compiled every program this tape's flow runs
	pending []func() // dry: what Compile runs, concurrently
	queued  map[*stageProg]bool
	fusing  *fusedCall // the calls recorded but not yet run (loop_fuse.go)

	rec      *recording        // Record: the calls noted for a Replay (replay.go)
	replay   *Replay           // ReplayTape: the calls this tape replays
	replayIn []*tensors.Tensor // ReplayTape: the inputs given
}

// NewTape returns an empty Tape; with grad it records what Backward needs.
func (e *Engine) NewTape(grad bool) *Tape {
	return &Tape{e: e, record: grad, ct: map[*Value]ref{}}
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
	tp.noteInput(t)
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
	tp.noteInput(t)
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
	tp.flush()
	if tp.dry {
		return make([]float64, v.Len()*batchSize(v.batch))
	}
	r := v.ref()
	tp.noteRead(r, v, false)
	return fetchRef(r, v.lay, v.batch)
}

// fetchRef returns the values at r of a value of layout lay and batch dimensions batch as
// Fetch does (constants where r holds no numbers).
func fetchRef(r ref, lay *layout, batch []int) []float64 {
	size := batchSize(batch)
	out := make([]float64, len(lay.isNode)*size)
	var data []float64
	if r.t != nil || r.s != nil && r.s.t != nil {
		data = r.host(lay.nodes, size)
	}
	k := 0
	for i, isNode := range lay.isNode {
		for j := range size {
			if isNode {
				out[i*size+j] = data[k*size+j]
			} else {
				out[i*size+j] = lay.consts[i]
			}
		}
		if isNode {
			k++
		}
	}
	return out
}

// batchSize returns the product of dims.
func batchSize(dims []int) int {
	size := 1
	for _, d := range dims {
		size *= d
	}
	return size
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
	r := tp.ct[v]
	if !r.ok() || tp.dry {
		r = ref{}
	}
	tp.noteRead(r, v, true)
	return gradRef(r, v.lay, v.batch)
}

// gradRef returns the cotangent at r of a value of layout lay and batch dimensions batch as
// Grad does (zeros where r holds no numbers).
func gradRef(r ref, lay *layout, batch []int) []float64 {
	size := batchSize(batch)
	out := make([]float64, len(lay.isNode)*size)
	if r.t == nil && r.s == nil {
		return out
	}
	data := r.host(lay.nodes, size)
	k := 0
	for i, isNode := range lay.isNode {
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
	tp.owned, tp.ct, tp.recs, tp.seed, tp.fusing = nil, nil, nil, nil, nil
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
	if T > 1 && tp.fwd == 0 && tp.e.WhileLoops() {
		return tp.scanWhile(name, step, carry, xs, params, reverse, full)
	}
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
		// product is the same program. (A block left fused runs, and is recorded, first.)
		tp.flush()
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
	if tp.rec != nil {
		tp.rec.closed = true
	}
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
	c.stackOut = tp.e.WhileLoops() && c.steps > 0 && tp.fwd == 0
	if tp.fusable(c) && tp.fuse(c, grad) {
		return
	}
	tp.flush()
	plan := newArgPlan()
	in := plan.inputs(c, c.stackOut)
	var key strings.Builder
	callKey(&key, c)
	tp.inputKey(&key, c)
	if c.loop != nil {
		c.loop.save = tp.record && grad
		key.WriteString("|while" + strconv.FormatBool(c.loop.save))
	}
	key.WriteString(plan.key.String())
	prog := tp.e.program(key.String(), !tp.dry, func(g *G.Graph) ([]*G.Node, []outGroup, rewriteFunc) {
		b := newStageBuilder(g, c)
		b.e, b.argDims, b.in0 = tp.e, plan.dims, in
		if c.loop != nil {
			return b.whileForward()
		}
		b.args = b.params(plan.dims)
		outs, lays := b.forward()
		return outs, lays, nil
	})
	var out []*tensors.Tensor
	if tp.dry {
		tp.queue(prog)
		out = dryOuts(c, prog.outs, false)
	} else {
		out = tp.exec(prog, plan.tensors)
	}
	if n := tp.setOuts(c, prog.outs, out, grad); c.loop != nil && c.loop.save {
		c.saved = &stacked{t: out[n], T: c.steps}
	}
	tp.owned = append(tp.owned, out...)
	if tp.record && grad {
		tp.recs = append(tp.recs, c)
	}
}

// setOuts sets c.outs, the values of output groups outs at each step, from a program's outputs
// out (the tensors of the groups with nodes: one a step, or one stacked tensor of all steps
// where c stacks its outputs), and returns how many it took. A while loop's first group, its
// last carry, is one value.
func (tp *Tape) setOuts(c *call, outs []outGroup, out []*tensors.Tensor, grad bool) int {
	c.outs = make([][]*Value, len(outs))
	k := 0
	for j, og := range outs {
		n := max(c.steps, 1)
		if c.loop != nil && j == 0 {
			n = 1
		}
		stack := n > 1 && (c.stackOut || c.loop != nil)
		var s *stacked
		if stack && og.lay.nodes > 0 {
			s = &stacked{t: out[k], T: n}
			k++
		}
		c.outs[j] = make([]*Value, n)
		for t := range c.outs[j] {
			v := &Value{lay: og.lay, batch: og.batch, grad: grad}
			switch {
			case s != nil:
				v.stack, v.row = s, t
			case og.lay.nodes > 0:
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
		key.WriteByte('|')
		key.WriteString(v.lay.key)
		keyInts(key, v.batch)
	}
}
