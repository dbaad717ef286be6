// Recursions as StableHLO while loops: on the XLA backend a recursion of T steps can run as
// one program whose while loop calls the program of one step T times, and its
// vector–Jacobian product as one program whose while loop runs the step's vector–Jacobian
// product backward over the carries the forward program saved: two calls a recursion instead
// of 2T, and programs about the size of one step to compile (Engine.SetWhileLoops). The
// sequences such a recursion reads and writes, and their cotangents, stay stacked
// (loop_stack.go).
//
// GoMLX v0.26 has no loop operation, so these programs are written as StableHLO text (mlir.go)
// around the step programs GoMLX builds; the vendored GoMLX (third_party/README.md) hands over
// a graph's program text and compiles a replaced one in its place, keeping its parameters and
// results.

package graph

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// whileLoop describes a recursion run as one while-loop program (Tape.Scan in while mode). Its
// call's input groups are the nx sequences (T values each, in time order), the carry and the
// parameters; its output groups the last carry (one value) and the steps' outputs (T values,
// in time order, stacked).
type whileLoop struct {
	step    StepFunc
	nx, T   int
	full    []int
	reverse bool
	save    bool // the forward program also returns every step's incoming carry, for the VJP
}

// seqAxis is the time axis of a stacked sequence: values [K, batch...] stack as [K, T,
// batch...], the layout a step map's program packs its values in (loop_stack.go).
const seqAxis = 1

// rewriteFunc replaces a program's StableHLO text before it is compiled.
type rewriteFunc func(program string) (string, error)

// SetWhileLoops makes each recursion (Tape.Scan) of reverse-mode tapes run as one program on
// backends that build StableHLO (XLA's): a while loop over the program of one step, and its
// vector–Jacobian product as one program too; the sequences between stages stay stacked.
// Values and gradients are those of one step per call (TestWhileLoopsEqualSteps). Other
// backends and forward-mode tapes ignore it. Set it before the first evaluation.
func (e *Engine) SetWhileLoops(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.while = on
}

// WhileLoops reports whether recursions run as while loops on e's backend (SetWhileLoops).
func (e *Engine) WhileLoops() bool {
	e.mu.Lock()
	on := e.while
	e.mu.Unlock()
	return on && BuildsStableHLO(e.backend)
}

// BuildsStableHLO reports whether backend b's graphs are StableHLO programs (XLA's), which
// the while-loop form needs.
func BuildsStableHLO(b interface{ Name() string }) bool {
	return b.Name() == "xla" || b.Name() == "stablehlo"
}

// scanWhile runs the recursion of Scan (init already a dense carry of dimensions full) as one
// while-loop program.
func (tp *Tape) scanWhile(name string, step StepFunc, carry *Value, xs [][]*Value, params []*Value, reverse bool, full []int) (*Value, []*Value) {
	T := seqLen(xs)
	// No f: the loop's programs are built from its step's call (stepCall).
	c := &call{name: name, steps: T, seqs: xs,
		shared: append([]*Value{carry}, params...), dense: full,
		loop: &whileLoop{step: step, nx: len(xs), T: T, full: full, reverse: reverse}}
	tp.run(c)
	if tp.record {
		tp.recs = append(tp.recs, &call{marker: append([]*Value{c.outs[0][0]}, params...)})
	}
	return c.outs[0][0], c.outs[1]
}

// stepCall returns the call of one step of while loop c, laid out as blockSteps lays out a
// block of one step: the carry, each sequence's first value, the parameters.
func (c *call) stepCall() *call {
	w := c.loop
	shared := []*Value{c.shared[0]}
	for q := range w.nx {
		shared = append(shared, c.seqs[q][0])
	}
	shared = append(shared, c.shared[1:]...)
	return &call{name: c.name + "/step", f: blockSteps(c.name, w.step, 1, w.nx, w.full), shared: shared, dense: w.full}
}

// loopArgs is what a while loop's program text needs of its parameters: their dimensions and
// where each input group, cotangent and accumulated cotangent is among them.
type loopArgs struct {
	dims            [][]int
	in, cts, accs   []groupSrc
	saved           int // the saved carries' parameter (VJP)
	carryDims, yDim []int
	hasY            bool
}

// whileForward builds the forward program of while loop c: a graph with the program's
// parameters and outputs of the right shapes, whose text the returned rewrite replaces by the
// loop.
func (b *stageBuilder) whileForward() ([]*G.Node, []outGroup, rewriteFunc) {
	c, w := b.c, b.c.loop
	sg := G.NewGraph(b.g.Backend(), c.name+"/step")
	stepOut, stepLays := stepBuilder(sg, c.stepCall(), nil, nil).forward()
	b.noteNodes(sg)
	lays := stepLays[:2]
	a := b.loopArgs(stepLays[1])
	outDims := [][]int{a.carryDims}
	if a.hasY {
		outDims = append(outDims, along(a.yDim, seqAxis, w.T))
	}
	if w.save {
		outDims = append(outDims, append([]int{w.T}, a.carryDims...))
	}
	rewrite := func(string) (string, error) {
		text, err := sg.StableHLO(stepOut...)
		if err != nil {
			return "", err
		}
		return whileForwardText(text, a, w)
	}
	return b.dummyOutputs(outDims), lays, rewrite
}

// loopArgs creates the program's parameters (as b.params) and describes them.
func (b *stageBuilder) loopArgs(y outGroup) *loopArgs {
	a := &loopArgs{dims: b.argDims, in: b.in0, cts: b.cts, accs: b.accs, saved: b.saved}
	b.params(a.dims)
	a.carryDims = valueDims(b.c.shared[0])
	a.yDim = append([]int{y.lay.nodes}, y.batch...)
	a.hasY = y.lay.nodes > 0
	return a
}

// whileVJP builds the vector–Jacobian product v of while loop c (see whileForward): its
// parameters are the call's inputs, the carries the forward program saved, the cotangents of
// the outputs v.ctOut names and those the differentiated inputs already hold (v.accIn).
func (b *stageBuilder) whileVJP(v *vjpSpec) ([]*G.Node, rewriteFunc) {
	c, w := b.c, b.c.loop
	sc := c.stepCall()
	sv := &vjpSpec{ctOut: []bool{true, v.ctOut[1]}, gradIn: make([]bool, sc.groups()), accIn: make([]bool, sc.groups())}
	sv.gradIn[0] = true
	for q := range w.nx {
		sv.gradIn[1+q] = v.gradIn[q]
	}
	copy(sv.gradIn[1+w.nx:], v.gradIn[w.nx+1:])
	sg := G.NewGraph(b.g.Backend(), c.name+"/step-vjp")
	yDims := valueDims(c.outs[1][0])
	if !sv.ctOut[1] {
		yDims = nil
	}
	stepOut := stepBuilder(sg, sc, valueDims(c.shared[0]), yDims).vjp(sv)
	b.noteNodes(sg)
	a := b.loopArgs(c.outs[1][0].outGroup())
	var outDims [][]int
	for i := range c.groups() {
		if v.gradIn[i] {
			d := valueDims(c.group(i)[0])
			if i < w.nx {
				d = along(d, seqAxis, w.T)
			}
			outDims = append(outDims, d)
		}
	}
	rewrite := func(string) (string, error) {
		text, err := sg.StableHLO(stepOut...)
		if err != nil {
			return "", err
		}
		return whileVJPText(text, a, v, sv, w)
	}
	return b.dummyOutputs(outDims), rewrite
}

// stepBuilder returns a builder of the programs of step call sc in graph sg: its parameters
// the step's inputs and, for its VJP (carryDims not nil), the cotangents of its carry and, if
// yDims is not nil, of its output.
func stepBuilder(sg *G.Graph, sc *call, carryDims, yDims []int) *stageBuilder {
	b := newStageBuilder(sg, sc)
	plan := newArgPlan()
	b.in0 = make([]groupSrc, sc.groups())
	for i := range b.in0 {
		b.in0[i].whole = -1
		if v0 := sc.group(i)[0]; v0.lay.nodes > 0 {
			b.in0[i] = plan.plain(valueDims(v0)) // a parameter of its own, as the loop passes it
		}
	}
	if carryDims != nil {
		b.cts = []groupSrc{plan.plain(carryDims), {whole: -1}}
		if yDims != nil {
			b.cts[1] = plan.plain(yDims)
		}
	}
	b.args = b.params(plan.dims)
	return b
}

// noteNodes counts the step program's nodes in the engine's statistics (ProgramStats.Nodes),
// which the loop's own graph, a stand-in for its shapes, does not show.
func (b *stageBuilder) noteNodes(sg *G.Graph) {
	if b.e != nil {
		b.e.mu.Lock()
		b.e.stats.Nodes = max(b.e.stats.Nodes, len(sg.Nodes()))
		b.e.mu.Unlock()
	}
}

func (v *Value) outGroup() outGroup { return outGroup{lay: v.lay, batch: v.batch} }

// dummyOutputs returns zeros of the given dimensions: outputs whose shapes the program's
// results take, before the rewrite replaces what computes them.
func (b *stageBuilder) dummyOutputs(dims [][]int) []*G.Node {
	out := make([]*G.Node, len(dims))
	for i, d := range dims {
		out[i] = G.Zeros(b.g, shapes.Make(dtypes.Float64, d...))
	}
	return out
}

// loopText holds what both loop programs share: the writer and where the parameters are.
type loopText struct {
	m *mlir
	a *loopArgs
}

func arg(k int) string { return fmt.Sprintf("%%a%d", k) }

// value returns the value at s, of dimensions dims.
func (l loopText) value(s source, dims []int) string {
	if s.row < 0 {
		return arg(s.arg)
	}
	return l.m.slice(arg(s.arg), s.row, l.a.dims[s.arg][seqAxis], dims, seqAxis)
}

// sequence returns the sequence at gs, of values of dimensions dims, stacked [T, dims...].
func (l loopText) sequence(gs groupSrc, dims []int) string {
	if gs.whole >= 0 {
		d := l.a.dims[gs.whole]
		if gs.from == 0 && d[seqAxis] == gs.n {
			return arg(gs.whole)
		}
		return l.m.rows(arg(gs.whole), gs.from, gs.n, d, seqAxis)
	}
	xs := make([]string, len(gs.srcs))
	for t, s := range gs.srcs {
		xs[t] = l.value(s, dims)
	}
	return l.m.stack(xs, dims, seqAxis)
}

// time returns the time step of loop iteration i, counted in the order the steps run.
func (m *mlir) time(i string, w *whileLoop) string {
	if !w.reverse {
		return i
	}
	last := m.index(w.T - 1)
	t := m.name()
	m.line(`%s = "stablehlo.subtract"(%s, %s) : (tensor<i64>, tensor<i64>) -> tensor<i64>`, t, last, i)
	return t
}

// whileForwardText returns the forward program of while loop w: a loop over the steps that
// calls the step's program (stepProgram's main), writing each step's output and, if w.save,
// its incoming carry into stacked arrays.
func whileForwardText(stepProgram string, a *loopArgs, w *whileLoop) (string, error) {
	step, err := stepFunction(stepProgram, "step")
	if err != nil {
		return "", err
	}
	m := &mlir{}
	l := loopText{m, a}
	c := w.nx // the carry's group; the parameters follow it
	vars := []loopVar{{l.value(a.in[c].srcs[0], a.carryDims), tensorType(a.carryDims)}}
	var seqDims [][]int
	for q := range w.nx {
		if a.in[q].srcs == nil && a.in[q].whole < 0 { // a constant sequence: no parameter
			seqDims = append(seqDims, nil)
			continue
		}
		d := a.dimsOf(a.in[q])
		seqDims = append(seqDims, d)
		vars = append(vars, loopVar{l.sequence(a.in[q], d), tensorType(along(d, seqAxis, w.T))})
	}
	nParams := 0
	for g := c + 1; g < len(a.in); g++ {
		if a.in[g].srcs != nil {
			d := a.dimsOf(a.in[g])
			vars = append(vars, loopVar{l.value(a.in[g].srcs[0], d), tensorType(d)})
			nParams++
		}
	}
	yVar, savedVar := -1, -1
	if a.hasY {
		yVar = len(vars)
		vars = append(vars, loopVar{m.zeros(along(a.yDim, seqAxis, w.T)), tensorType(along(a.yDim, seqAxis, w.T))})
	}
	if w.save {
		savedVar = len(vars)
		vars = append(vars, loopVar{m.zeros(append([]int{w.T}, a.carryDims...)), tensorType(append([]int{w.T}, a.carryDims...))})
	}
	res := []string{tensorType(a.carryDims)}
	if a.hasY {
		res = append(res, tensorType(a.yDim))
	}
	out := m.while(w.T, vars, func(i string, v []string) []string {
		next := slices.Clone(v)
		t := m.time(i, w)
		args, types := []string{v[0]}, []string{vars[0].typ}
		k := 1
		for _, d := range seqDims {
			if d != nil {
				args, types = append(args, m.dynRow(v[k], t, w.T, d, seqAxis)), append(types, tensorType(d))
				k++
			}
		}
		for r := range nParams {
			args, types = append(args, v[k+r]), append(types, vars[k+r].typ)
		}
		if savedVar >= 0 {
			next[savedVar] = m.dynUpdate(v[savedVar], v[0], i, w.T, a.carryDims, 0)
		}
		r := m.call("step", args, types, res)
		next[0] = r[0]
		if yVar >= 0 {
			next[yVar] = m.dynUpdate(v[yVar], r[1], t, w.T, a.yDim, seqAxis)
		}
		return next
	})
	outs, outDims := []string{out[0]}, [][]int{a.carryDims}
	if yVar >= 0 {
		outs, outDims = append(outs, out[yVar]), append(outDims, along(a.yDim, seqAxis, w.T))
	}
	if savedVar >= 0 {
		outs, outDims = append(outs, out[savedVar]), append(outDims, append([]int{w.T}, a.carryDims...))
	}
	return m.module("while_forward", []string{step}, a.dims, outs, outDims), nil
}

// dimsOf returns the dimensions of one value of group gs.
func (a *loopArgs) dimsOf(gs groupSrc) []int {
	k := gs.whole
	if k < 0 {
		if k = gs.srcs[0].arg; gs.srcs[0].row < 0 {
			return a.dims[k]
		}
	}
	return slices.Delete(slices.Clone(a.dims[k]), seqAxis, seqAxis+1)
}

// whileVJPText returns the vector–Jacobian-product program of while loop w (whileVJP): a loop
// from the last step to the first that calls the step's vector–Jacobian product
// (stepProgram's main) on the saved carries, passing the carry's cotangent back, writing the
// sequences' cotangents into stacked arrays and summing the parameters'.
func whileVJPText(stepProgram string, a *loopArgs, v, sv *vjpSpec, w *whileLoop) (string, error) {
	step, err := stepFunction(stepProgram, "step_vjp")
	if err != nil {
		return "", err
	}
	m := &mlir{}
	l := loopText{m, a}
	T, cg := w.T, w.nx
	stack := func(d []int) []int { return along(d, seqAxis, T) }
	ctc := ""
	if v.ctOut[0] {
		ctc = l.value(a.cts[0].srcs[0], a.carryDims)
	} else {
		ctc = m.zeros(a.carryDims)
	}
	vars := []loopVar{{ctc, tensorType(a.carryDims)}}
	type part struct {
		group, v, ct int // input group, operand, cotangent operand (-1: none)
		dims         []int
	}
	var seqs, params []part
	for q := range w.nx {
		if a.in[q].srcs == nil && a.in[q].whole < 0 {
			continue
		}
		d := a.dimsOf(a.in[q])
		seqs = append(seqs, part{group: q, v: len(vars), ct: -1, dims: d})
		vars = append(vars, loopVar{l.sequence(a.in[q], d), tensorType(stack(d))})
	}
	for g := cg + 1; g < len(a.in); g++ {
		if a.in[g].srcs != nil {
			d := a.dimsOf(a.in[g])
			params = append(params, part{group: g, v: len(vars), ct: -1, dims: d})
			vars = append(vars, loopVar{l.value(a.in[g].srcs[0], d), tensorType(d)})
		}
	}
	savedVar := len(vars)
	vars = append(vars, loopVar{arg(a.saved), tensorType(append([]int{T}, a.carryDims...))})
	ctyVar := -1
	if sv.ctOut[1] {
		ctyVar = len(vars)
		vars = append(vars, loopVar{l.sequence(a.cts[1], a.yDim), tensorType(stack(a.yDim))})
	}
	res := []string{tensorType(a.carryDims)}
	for s := range seqs {
		if v.gradIn[seqs[s].group] {
			seqs[s].ct = len(vars)
			vars = append(vars, loopVar{m.zeros(stack(seqs[s].dims)), tensorType(stack(seqs[s].dims))})
			res = append(res, tensorType(seqs[s].dims))
		}
	}
	for r := range params {
		if v.gradIn[params[r].group] {
			params[r].ct = len(vars)
			vars = append(vars, loopVar{m.zeros(params[r].dims), tensorType(params[r].dims)})
			res = append(res, tensorType(params[r].dims))
		}
	}
	out := m.while(T, vars, func(i string, x []string) []string {
		next := slices.Clone(x)
		last := m.index(T - 1)
		r := m.name() // the step, in the order the steps run
		m.line(`%s = "stablehlo.subtract"(%s, %s) : (tensor<i64>, tensor<i64>) -> tensor<i64>`, r, last, i)
		t := r // its time
		if w.reverse {
			t = i
		}
		args := []string{m.dynRow(x[savedVar], r, T, a.carryDims, 0)}
		types := []string{tensorType(a.carryDims)}
		for _, s := range seqs {
			args, types = append(args, m.dynRow(x[s.v], t, T, s.dims, seqAxis)), append(types, tensorType(s.dims))
		}
		for _, p := range params {
			args, types = append(args, x[p.v]), append(types, vars[p.v].typ)
		}
		args, types = append(args, x[0]), append(types, vars[0].typ)
		if ctyVar >= 0 {
			args, types = append(args, m.dynRow(x[ctyVar], t, T, a.yDim, seqAxis)), append(types, tensorType(a.yDim))
		}
		out := m.call("step_vjp", args, types, res)
		next[0] = out[0]
		n := 1
		for _, s := range seqs {
			if s.ct >= 0 {
				next[s.ct] = m.dynUpdate(x[s.ct], out[n], t, T, s.dims, seqAxis)
				n++
			}
		}
		for _, p := range params {
			if p.ct >= 0 {
				next[p.ct] = m.add(x[p.ct], out[n], p.dims)
				n++
			}
		}
		return next
	})
	// The results: each differentiated input group's cotangent, plus what it held.
	var outs []string
	var outDims [][]int
	emit := func(g int, ct string, dims []int, seq []int) {
		if v.accIn[g] {
			acc := ""
			if seq != nil {
				acc = l.sequence(a.accs[g], seq)
			} else {
				acc = l.value(a.accs[g].srcs[0], dims)
			}
			ct = m.add(ct, acc, dims)
		}
		outs, outDims = append(outs, ct), append(outDims, dims)
	}
	for _, s := range seqs {
		if s.ct >= 0 {
			emit(s.group, out[s.ct], stack(s.dims), s.dims)
		}
	}
	if v.gradIn[cg] {
		emit(cg, out[0], a.carryDims, nil)
	}
	for _, p := range params {
		if p.ct >= 0 {
			emit(p.group, out[p.ct], p.dims, nil)
		}
	}
	return m.module("while_vjp", []string{step}, a.dims, outs, outDims), nil
}
