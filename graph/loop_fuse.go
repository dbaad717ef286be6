// Fused calls: where recursions run as while loops (Engine.SetWhileLoops), the maps and step
// maps a tape records between two recursions run as one program, and their vector–Jacobian
// products as one more, instead of a program each; the last run of them runs with the start
// of Backward when Backward's output is theirs. A likelihood's evaluation makes 7 calls instead
// of 21 (reaching: the eight stages before the backward pass are one), which matters where
// each call waits for a device (about 0.6 ms on an H100).
//
// A tape records such a call without running it: its outputs get their layouts at once (from a
// graph of the call alone, built once per shape and never compiled: Engine.layouts) and their
// numbers when something needs them (a recursion, Fetch, Backward, Compile), which runs every
// call recorded so far as one program (Tape.flush). Inside it each call's graph is the one its
// own program would have, reading the packed outputs of the calls before it where its own
// program would read parameters, so values are those of a program a call up to XLA compiling
// them together, and gradients up to the order of sums (TestFusedCalls).

package graph

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// fusedCall is a fused call: calls recorded, in order, and not yet run (or run as one program).
type fusedCall struct {
	calls    []*call
	producer []int             // per slot: the call whose output it is
	uses     map[*Value]string // differentiated values from outside: how the calls read them (useKey)
	grad     bool              // some call depends on the differentiated inputs
}

// slot names a packed output of a call of fused call f: its program's output k.
type slot struct {
	f *fusedCall
	k int
}

// SetFusedCalls says whether the maps between recursions run as one program (loop_fuse.go)
// where recursions run as while loops; it is on unless NIOC_FUSE_CALLS=off. Values and
// gradients depend on it only in their last bits. Set it before the first evaluation.
func (e *Engine) SetFusedCalls(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unfused = !on
}

// fusesCalls reports whether e's tapes fuse calls: SetFusedCalls and while loops on.
func (e *Engine) fusesCalls() bool {
	e.mu.Lock()
	off := e.unfused
	e.mu.Unlock()
	return !off && e.WhileLoops()
}

// fusedCallsDefault is the default of SetFusedCalls.
var fusedCallsDefault = os.Getenv(EnvFuseCalls) != "off"

// inside returns the parameter index (negative: stageBuilder.arg) by which p's program finds
// the value at s, if s is an output of the fused call p is planned for.
func (p *argPlan) inside(s *slot) (int, bool) {
	if s == nil || p.fused == nil || s.f != p.fused {
		return 0, false
	}
	return -2 - s.k, true
}

// slotOf returns the slot of v, nil if v is not the output of a fused call.
func (v *Value) slotOf() *slot {
	if v.stack != nil {
		return v.stack.pend
	}
	return v.pend
}

// fusable reports whether c may join the tape's fused call.
func (tp *Tape) fusable(c *call) bool {
	return tp.fwd == 0 && c.loop == nil && (c.steps == 0 || c.stackOut) && tp.e.fusesCalls()
}

// useKey names how a call reads the differentiated values vals: as a sequence, or shared.
func useKey(vals []*Value, seq bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", seq)
	for _, v := range vals {
		fmt.Fprintf(&b, ",%p", v)
	}
	return b.String()
}

// joins reports whether c can join f, and notes how c reads the differentiated values from
// outside: each must come to every call of f the same way (one group of the same values), so
// that the fused vector–Jacobian product gives each value's cotangent as one sum; a group that
// mixes values from inside and outside f does not join either.
func (f *fusedCall) joins(c *call) bool {
	keys := map[*Value]string{}
	for i := range c.groups() {
		vals := c.group(i)
		if !vals[0].grad || vals[0].lay.nodes == 0 {
			continue
		}
		inside := 0
		for _, v := range vals {
			if s := v.slotOf(); s != nil && s.f == f {
				inside++
			}
		}
		if inside == len(vals) {
			continue
		}
		if inside > 0 {
			return false
		}
		key := useKey(vals, i < len(c.seqs))
		for _, v := range vals {
			if k, ok := f.uses[v]; ok && k != key {
				return false
			}
			if k, ok := keys[v]; ok && k != key {
				return false
			}
			keys[v] = key
		}
	}
	for v, k := range keys {
		f.uses[v] = k
	}
	return true
}

// fuse records c in the tape's fused call, giving its outputs their layouts and no numbers,
// and reports whether it did: a call that reads a differentiated value two ways joins no fused
// call (it runs alone, and Backward refuses it as it refuses it there).
func (tp *Tape) fuse(c *call, grad bool) bool {
	if tp.fusing != nil && !tp.fusing.joins(c) {
		tp.flush()
	}
	if tp.fusing == nil {
		tp.fusing = &fusedCall{uses: map[*Value]string{}}
		if !tp.fusing.joins(c) {
			tp.fusing = nil
			return false
		}
	}
	f := tp.fusing
	outs := tp.e.layouts(c)
	c.slots = make([]int, len(outs))
	c.outs = make([][]*Value, len(outs))
	for j, og := range outs {
		n := max(c.steps, 1)
		c.slots[j] = -1
		var s *slot
		var st *stacked
		if og.lay.nodes > 0 {
			s = &slot{f: f, k: len(f.producer)}
			c.slots[j] = s.k
			f.producer = append(f.producer, len(f.calls))
			if c.steps > 0 {
				st = &stacked{T: n, pend: s}
			}
		}
		c.outs[j] = make([]*Value, n)
		for t := range n {
			v := &Value{lay: og.lay, batch: og.batch, grad: grad}
			switch {
			case st != nil:
				v.stack, v.row = st, t
			case s != nil:
				v.pend = s
			}
			c.outs[j][t] = v
		}
	}
	f.calls = append(f.calls, c)
	f.grad = f.grad || grad
	return true
}

// layouts returns the layouts of c's output groups, from a graph of c alone built the first
// time c's name and input layouts come (never compiled).
func (e *Engine) layouts(c *call) []outGroup {
	var kb strings.Builder
	callKey(&kb, c)
	for i := range c.groups() {
		v := c.group(i)[0]
		kb.WriteByte('|')
		kb.WriteString(v.lay.key)
		keyInts(&kb, v.batch)
	}
	key := kb.String()
	e.mu.Lock()
	lays, ok := e.lays[key]
	e.mu.Unlock()
	if ok {
		return lays
	}
	g := G.NewGraph(e.backend, c.name)
	defer g.Finalize()
	func() {
		defer func() {
			if r := recover(); r != nil {
				panic(fmt.Errorf("building %s: %v", c.name, r))
			}
		}()
		b := newStageBuilder(g, c)
		b.in0 = make([]groupSrc, c.groups())
		var dims [][]int
		for i := range c.groups() {
			v0 := c.group(i)[0]
			b.in0[i].whole = -1
			if v0.lay.nodes == 0 {
				continue
			}
			d := valueDims(v0)
			if i < len(c.seqs) {
				b.in0[i] = groupSrc{whole: len(dims), n: c.steps}
				d = along(d, seqAxis, c.steps)
			} else {
				b.in0[i].srcs = []source{{arg: len(dims), row: -1}}
			}
			dims = append(dims, d)
		}
		b.args = b.params(dims)
		b.unpack()
		b.pack(c.f(b.in))
		lays = b.lays
	}()
	e.mu.Lock()
	if e.lays == nil {
		e.lays = map[string][]outGroup{}
	}
	e.lays[key] = lays
	e.mu.Unlock()
	return lays
}

// fusedPlan returns the plan of a fused program's parameters that starts with its calls'
// inputs, and where each call finds them.
func fusedPlan(f *fusedCall) (*argPlan, [][]groupSrc) {
	plan := newArgPlan()
	plan.fused = f
	ins := make([][]groupSrc, len(f.calls))
	for j, c := range f.calls {
		ins[j] = plan.inputs(c, c.stackOut)
	}
	return plan, ins
}

// fusedKey returns the key of a program of fused call f: its calls, what the program does
// (kind), the uses whose cotangents it gives and its parameters.
func (tp *Tape) fusedKey(f *fusedCall, kind string, uses []*fusedUse, plan *argPlan) string {
	var key strings.Builder
	key.WriteString(fusedName(f))
	for _, c := range f.calls {
		key.WriteByte('|')
		callKey(&key, c)
		tp.inputKey(&key, c)
	}
	key.WriteString("|" + kind)
	for _, u := range uses {
		keyPairs(&key, u.uses)
		key.WriteString(strconv.FormatBool(u.acc) + ",")
	}
	key.WriteString(plan.key.String())
	return key.String()
}

// fusedName names a fused call by its calls' names.
func fusedName(f *fusedCall) string {
	names := make([]string, len(f.calls))
	for j, c := range f.calls {
		names[j] = c.name
	}
	return strings.Join(names, "+")
}

// flush runs the tape's fused call, if any, as one program and records it for Backward.
func (tp *Tape) flush() {
	f := tp.fusing
	if f == nil {
		return
	}
	tp.fusing = nil
	tp.runFused(f, nil, nil)
	if tp.record && f.grad {
		tp.recs = append(tp.recs, &call{name: fusedName(f), fused: f})
	}
}

// fuseBackward runs the tape's fused call and, in the same program, the start of Backward(out):
// the vector–Jacobian product of the sum of out's entries, when out is an output of that call
// (the evaluation's last stage, as a likelihood's is). It reports whether it ran.
func (tp *Tape) fuseBackward(out *Value) bool {
	f := tp.fusing
	s := out.slotOf()
	if f == nil || s == nil || s.f != f || out.stack != nil || !out.grad || out.lay.nodes == 0 {
		return false
	}
	tp.fusing = nil
	reach := make([]bool, len(f.calls))
	reach[f.producer[s.k]] = true
	tp.runFused(f, reach, func(inside []*G.Node) *G.Node { return G.ReduceAllSum(inside[s.k]) })
	return true
}

// fusedForward builds the graphs of f's calls in g, each reading the parameters args and the
// outputs of the calls before it, and returns each call's builder and the packed outputs by
// slot; it panics if a call's outputs come out with other layouts than alone.
func fusedForward(g *G.Graph, f *fusedCall, args []*G.Node, ins [][]groupSrc) ([]*stageBuilder, []*G.Node) {
	inside := make([]*G.Node, len(f.producer))
	bs := make([]*stageBuilder, len(f.calls))
	for j, c := range f.calls {
		b := newStageBuilder(g, c)
		b.args, b.inside, b.in0 = args, inside, ins[j]
		b.unpack()
		b.pack(c.f(b.in))
		for gi, k := range c.slots {
			if k >= 0 {
				inside[k] = b.outs[gi][0]
			}
			l, want := b.lays[gi], c.outs[gi][0]
			if l.lay.key != want.lay.key || fmt.Sprint(l.batch) != fmt.Sprint(want.batch) {
				panic(fmt.Sprintf("graph: %s: output %d has layout %s %v in the fused program, %s %v alone", c.name, gi, l.lay.key, l.batch, want.lay.key, want.batch))
			}
		}
		bs[j] = b
	}
	return bs, inside
}

// runFused runs fused call f as one program and gives its calls' outputs their numbers. With
// loss, the program also runs the vector–Jacobian product of the scalar loss makes of the
// packed outputs (by slot), through the calls reach names and those they read, and gives the
// differentiated values f reads from outside their cotangents (added to what they hold).
func (tp *Tape) runFused(f *fusedCall, reach []bool, loss func(inside []*G.Node) *G.Node) {
	plan, ins := fusedPlan(f)
	var uses []*fusedUse
	if loss != nil {
		uses = tp.fusedUses(f, reach)
		plan.key.WriteString("|")
		tp.planAccs(plan, uses)
	}
	prog := tp.e.program(tp.fusedKey(f, fmt.Sprintf("fused%v", reach), uses, plan), !tp.dry, func(g *G.Graph) ([]*G.Node, []outGroup, rewriteFunc) {
		bs, inside := fusedForward(g, f, newStageBuilder(g, f.calls[0]).params(plan.dims), ins)
		outs := slices.Clone(inside)
		var lays []outGroup
		for _, b := range bs {
			lays = append(lays, b.lays...)
		}
		if loss != nil && len(uses) > 0 {
			outs = append(outs, fusedGrads(bs, uses, loss(inside))...)
		}
		return outs, lays, nil
	})
	out := make([]*tensors.Tensor, len(f.producer)+len(uses))
	if tp.dry {
		tp.queue(prog)
	} else if res := tp.exec(prog, plan.tensors); res != nil {
		out = res
		tp.owned = append(tp.owned, out...)
	}
	for _, c := range f.calls {
		for gi, k := range c.slots {
			if k < 0 {
				continue
			}
			if v := c.outs[gi][0]; v.stack != nil {
				v.stack.t = out[k]
			} else {
				v.t = out[k]
			}
		}
	}
	tp.setUseCotangents(uses, out[len(f.producer):])
}

// fusedUse is a group of differentiated values from outside a fused call, and the groups of its
// calls that read them.
type fusedUse struct {
	vals []*Value
	seq  bool
	uses [][2]int // call, group
	acc  bool     // the values hold cotangents already
	src  groupSrc // where those are
}

// fusedUses returns the groups of differentiated values from outside f that the calls reach
// names read, each with the calls' groups that read it, in the order they are first read.
func (tp *Tape) fusedUses(f *fusedCall, reach []bool) []*fusedUse {
	for j := len(f.calls) - 1; j >= 0; j-- { // and the calls they read
		if !reach[j] {
			continue
		}
		c := f.calls[j]
		for i := range c.groups() {
			if s := c.group(i)[0].slotOf(); s != nil && s.f == f {
				reach[f.producer[s.k]] = true
			}
		}
	}
	var uses []*fusedUse
	byKey := map[string]*fusedUse{}
	for j, c := range f.calls {
		if !reach[j] {
			continue
		}
		for i := range c.groups() {
			vals := c.group(i)
			if !vals[0].grad || vals[0].lay.nodes == 0 {
				continue
			}
			if s := vals[0].slotOf(); s != nil && s.f == f {
				continue
			}
			seq := i < len(c.seqs)
			key := useKey(vals, seq)
			u := byKey[key]
			if u == nil {
				u = &fusedUse{vals: vals, seq: seq}
				for _, x := range vals {
					u.acc = u.acc || tp.ct[x].ok()
				}
				byKey[key] = u
				uses = append(uses, u)
			}
			u.uses = append(u.uses, [2]int{j, i})
		}
	}
	return uses
}

// planAccs adds the cotangents the uses' values hold to plan.
func (tp *Tape) planAccs(plan *argPlan, uses []*fusedUse) {
	for _, u := range uses {
		u.src.whole = -1
		if u.acc {
			u.src = plan.addGroup(u.vals, tp.refs(u.vals), u.seq)
		}
	}
}

// fusedGrads returns the cotangents of the uses' values, one tensor each (stacked for a
// sequence), from the gradient of loss through the calls' graphs bs.
func fusedGrads(bs []*stageBuilder, uses []*fusedUse, loss *G.Node) []*G.Node {
	var targets []*G.Node
	for _, u := range uses {
		for _, ji := range u.uses {
			targets = append(targets, bs[ji[0]].nodes[ji[1]]...)
		}
	}
	grads := G.Gradient(loss, targets...)
	var out []*G.Node
	k := 0
	for _, u := range uses {
		// Summed as the calls' own products would add them: the last call's to what the values
		// held, each earlier call's to that.
		per := make([][]*G.Node, len(u.uses))
		for q, ji := range u.uses {
			b, i := bs[ji[0]], ji[1]
			per[q] = b.entryGrads(i, grads[k:k+len(b.nodes[i])])
			k += len(b.nodes[i])
		}
		last := u.uses[len(u.uses)-1]
		b, i := bs[last[0]], last[1]
		b.accs = make([]groupSrc, b.c.groups())
		b.accs[i] = u.src
		sum := b.gradOut(i, per[len(per)-1], u.acc)[0]
		for q := len(per) - 2; q >= 0; q-- {
			sum = G.Add(G.Stack(per[q], 0), sum)
		}
		out = append(out, sum)
	}
	return out
}

// setUseCotangents gives the uses' values their cotangents, out (nil on a dry tape).
func (tp *Tape) setUseCotangents(uses []*fusedUse, out []*tensors.Tensor) {
	for k, u := range uses {
		t := out[k]
		if u.seq {
			s := &stacked{t: t, T: len(u.vals)}
			for row, x := range u.vals {
				tp.ct[x] = ref{s: s, row: row, dry: tp.dry}
			}
			continue
		}
		tp.ct[u.vals[0]] = ref{t: t, dry: tp.dry}
	}
}

// vjpFused runs the vector–Jacobian product of fused call f as one program: the gradient, with
// respect to the values f reads from outside, of Σ ⟨output, cotangent⟩ over its calls' outputs
// that hold cotangents, through the calls that read other calls' outputs.
func (tp *Tape) vjpFused(f *fusedCall) {
	n := len(f.calls)
	ctOut := make([][]bool, n)
	reach := make([]bool, n) // the call's outputs hold cotangents
	flows := false
	for j, c := range f.calls {
		ctOut[j] = make([]bool, len(c.outs))
		for g, o := range c.outs {
			for _, x := range o {
				ctOut[j][g] = ctOut[j][g] || (x.lay.nodes > 0 && tp.ct[x].ok())
			}
			reach[j] = reach[j] || ctOut[j][g]
		}
		flows = flows || reach[j]
	}
	if !flows {
		return
	}
	uses := tp.fusedUses(f, reach)
	if len(uses) == 0 { // nothing from outside to give a cotangent
		return
	}
	plan, ins := fusedPlan(f)
	cts := make([][]groupSrc, n)
	for j, c := range f.calls {
		cts[j] = make([]groupSrc, len(c.outs))
		for g, o := range c.outs {
			cts[j][g].whole = -1
			if ctOut[j][g] {
				cts[j][g] = plan.addGroup(o, tp.refs(o), c.steps > 0)
			}
		}
	}
	plan.key.WriteString("|")
	tp.planAccs(plan, uses)
	prog := tp.e.program(tp.fusedKey(f, fmt.Sprintf("fusedvjp%v", ctOut), uses, plan), !tp.dry, func(g *G.Graph) ([]*G.Node, []outGroup, rewriteFunc) {
		bs, _ := fusedForward(g, f, newStageBuilder(g, f.calls[0]).params(plan.dims), ins)
		var loss *G.Node
		for j, b := range bs {
			b.cts = cts[j]
			if l := b.loss(ctOut[j]); l != nil {
				if loss == nil {
					loss = l
				} else {
					loss = G.Add(loss, l)
				}
			}
		}
		return fusedGrads(bs, uses, loss), nil, nil
	})
	out := make([]*tensors.Tensor, len(uses))
	if tp.dry {
		tp.queue(prog)
	} else {
		out = tp.exec(prog, plan.tensors)
		tp.owned = append(tp.owned, out...)
	}
	tp.setUseCotangents(uses, out)
}
