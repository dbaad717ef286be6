// The reverse sweep of a looped Flow (Tape.Backward): each recorded call's vector–Jacobian
// product, from the last call to the first, adding up the cotangents of the values calls share.

package graph

import (
	"fmt"
	"strconv"
	"strings"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// cotangent returns where the cotangent of v is, zeros where it has none.
func (tp *Tape) cotangent(v *Value) ref {
	if r := tp.ct[v]; r.ok() {
		return r
	}
	return tp.zeros(v)
}

// zeros returns a zero cotangent for v.
func (tp *Tape) zeros(v *Value) ref {
	if tp.dry {
		return ref{dry: true}
	}
	size := v.lay.nodes
	for _, d := range v.batch {
		size *= d
	}
	t := NewTensor(make([]float64, size), append([]int{v.lay.nodes}, v.batch...)...)
	tp.owned = append(tp.owned, t)
	tp.noteConst(t, false)
	return ref{t: t}
}

// Backward computes the cotangents of every differentiated value that out depends on, for the
// cotangent 1 of every entry of out (the gradient of the sum of out's entries); read them with
// Grad. On a forward tape (NewForwardTape) it sums out's tangents instead, and Grad then gives
// the differentiated input's cotangent only. It panics if the tape neither records nor
// carries tangents.
func (tp *Tape) Backward(out *Value) {
	if tp.fwd > 0 {
		tp.flush()
		tp.forwardGrad(out)
		return
	}
	if !tp.record {
		panic("graph: Backward of a tape that does not record")
	}
	seeded := tp.fuseBackward(out) // out's own cotangent already passed on
	tp.flush()
	if out.lay.nodes == 0 {
		return
	}
	if !tp.dry && !tp.warm {
		// Build every vector–Jacobian-product program Backward will run, in order, on a dry
		// copy of the recorded calls (which values get cotangents, and where they are,
		// follows from the calls alone), and compile them concurrently.
		d := tp.Dry()
		d.recs = tp.recs
		stacks := map[*stacked]*stacked{} // the cotangents fuseBackward gave, as a dry tape has them
		for v, r := range tp.ct {
			if r.s != nil {
				if stacks[r.s] == nil {
					stacks[r.s] = &stacked{T: r.s.T}
				}
				d.ct[v] = ref{s: stacks[r.s], row: r.row, dry: true}
				continue
			}
			d.ct[v] = ref{dry: true}
		}
		d.backward(out, seeded)
		if len(d.pending) > 0 {
			_ = tp.e.parallel(d.pending) // an error stays with its program, and the backward below reports it
		}
	}
	tp.backward(out, seeded)
}

// backward runs the recorded calls' vector–Jacobian products, last first, from the cotangent
// 1 of every entry of out (seeded: out's has been passed on already, fuseBackward).
func (tp *Tape) backward(out *Value, seeded bool) {
	switch {
	case seeded:
	case tp.dry:
		tp.ct[out] = ref{dry: true}
	default:
		size := out.lay.nodes
		for _, d := range out.batch {
			size *= d
		}
		ones := make([]float64, size)
		for i := range ones {
			ones[i] = 1
		}
		t := NewTensor(ones, append([]int{out.lay.nodes}, out.batch...)...)
		tp.owned = append(tp.owned, t)
		tp.noteConst(t, true)
		tp.ct[out] = ref{t: t}
	}
	for i := len(tp.recs) - 1; i >= 0; i-- {
		c := tp.recs[i]
		if c.marker != nil {
			for _, v := range c.marker {
				if v.grad && v.lay.nodes > 0 && !tp.ct[v].ok() {
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

// vjp runs the vector–Jacobian product of call c: the cotangents of its outputs (missing ones
// as zeros within a group that has some) give, added to what they already hold, those of its
// differentiated inputs. On a dry tape it builds the program, queues its compile and gives the
// inputs cotangents without numbers.
func (tp *Tape) vjp(c *call) {
	if c.fused != nil {
		tp.vjpFused(c.fused)
		return
	}
	v, ok := vjpSpecOf(c, func(x *Value) bool { return tp.ct[x].ok() })
	if !ok {
		return
	}
	plan := newArgPlan()
	in := plan.inputs(c, c.stackOut)
	saved := -1
	if c.loop != nil {
		plan.key.WriteString("saved,")
		saved = plan.add(c.saved.t, append([]int{c.steps}, valueDims(c.shared[0])...))
	}
	seqOut := func(j int) bool { return c.stackOut && !(c.loop != nil && j == 0) }
	cts := make([]groupSrc, len(c.outs))
	for j := range cts {
		cts[j].whole = -1
	}
	for j, o := range c.outs {
		if v.ctOut[j] {
			cts[j] = plan.addGroup(o, tp.refs(o), seqOut(j))
		}
	}
	plan.key.WriteString("|")
	accs := make([]groupSrc, c.groups())
	for i := range c.groups() {
		accs[i].whole = -1
		if v.accIn[i] {
			accs[i] = plan.addGroup(c.group(i), tp.refs(c.group(i)), c.stackOut && i < len(c.seqs))
		}
	}
	var key strings.Builder
	callKey(&key, c)
	key.WriteString("|vjp")
	keyBools(&key, v.ctOut)
	keyBools(&key, v.gradIn)
	keyBools(&key, v.accIn)
	key.WriteString("|while" + strconv.FormatBool(c.loop != nil))
	tp.inputKey(&key, c)
	key.WriteString(plan.key.String())
	prog := tp.e.program(key.String(), !tp.dry, func(g *G.Graph) ([]*G.Node, []outGroup, rewriteFunc) {
		b := newStageBuilder(g, c)
		b.e, b.argDims, b.in0, b.cts, b.accs, b.saved = tp.e, plan.dims, in, cts, accs, saved
		if c.loop != nil {
			outs, rewrite := b.whileVJP(v)
			return outs, nil, rewrite
		}
		b.args = b.params(plan.dims)
		return b.vjp(v), nil, nil
	})
	var out []*tensors.Tensor
	if tp.dry {
		tp.queue(prog)
	} else {
		out = tp.exec(prog, plan.tensors)
		tp.owned = append(tp.owned, out...)
	}
	k := 0
	next := func() *tensors.Tensor {
		if tp.dry {
			return nil
		}
		k++
		return out[k-1]
	}
	for i := range c.groups() {
		if !v.gradIn[i] {
			continue
		}
		vals := c.group(i)
		if i < len(c.seqs) && (c.stackOut || c.loop != nil) {
			s := &stacked{t: next(), T: len(vals)}
			for t, x := range vals {
				tp.ct[x] = ref{s: s, row: t}
			}
			continue
		}
		for _, x := range vals {
			tp.ct[x] = ref{t: next(), dry: tp.dry}
		}
	}
}

// refs returns where the cotangents of vals are, zeros where they have none.
func (tp *Tape) refs(vals []*Value) []ref {
	out := make([]ref, len(vals))
	for t, x := range vals {
		out[t] = tp.cotangent(x)
	}
	return out
}
