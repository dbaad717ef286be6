// Forward mode for looped Flows: each value carries its tangents along the p directions of one
// differentiated input, so that the gradient needs no reverse pass and no stored carries.

package graph

import (
	"fmt"
	"slices"
	"strings"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// NewForwardTape returns a Tape that differentiates in forward mode: the one input marked as
// differentiated (Tape.Input with grad) must have p entries, and every value that depends on
// it carries its tangents, ∂value/∂input_k for k = 1…p, computed by each program next to the
// value itself (one call per stage and per step, where reverse mode makes a forward and a
// vector–Jacobian-product call and keeps every carry until Backward).
//
// The tangents are seeded on all batch elements of the input at once, so the gradients that
// Backward and Grad then give are right only when an output element depends on the batch
// element of the input that broadcasting pairs it with and on no other (independent parameter
// vectors, as in a likelihood's rows).
//
// GoMLX has reverse-mode autodiff only, so a program's Jacobian–vector products are the
// transpose of its vector–Jacobian product: for outputs y = f(x) and a placeholder u,
// g(u) = ∂⟨y, u⟩/∂x = Jᵀu is linear in u, and ∂⟨g(u), v⟩/∂u = Jv, one second Gradient per
// direction.
func (e *Engine) NewForwardTape(p int) *Tape {
	if p < 1 {
		panic(fmt.Sprintf("graph: forward mode with %d directions", p))
	}
	return &Tape{e: e, fwd: p, ct: map[*Value]ref{}}
}

// seedTangents gives v, the forward tape's differentiated input, the unit tangents.
func (tp *Tape) seedTangents(v *Value, k int, batch []int) {
	if tp.seed != nil {
		panic("graph: forward mode differentiates one input only")
	}
	if k != tp.fwd {
		panic(fmt.Sprintf("graph: forward mode with %d directions for an input of %d entries", tp.fwd, k))
	}
	tp.seed = v
	if tp.dry {
		return
	}
	size := 1
	for _, d := range batch {
		size *= d
	}
	data := make([]float64, k*k*size)
	for d := range k {
		for j := range size {
			data[(d*k+d)*size+j] = 1
		}
	}
	v.tan = NewTensor(data, append([]int{k, k}, batch...)...)
	tp.owned = append(tp.owned, v.tan)
}

// forwardGrad is Backward of a forward tape: the gradient of the sum of out's entries with
// respect to the seeded input, summed from out's tangents over its entries and over the
// batch positions that broadcasting pairs with each of the input's.
func (tp *Tape) forwardGrad(out *Value) {
	p, seed := tp.fwd, tp.seed
	if seed == nil {
		panic("graph: Backward of a forward tape without a differentiated input")
	}
	size := 1
	for _, d := range seed.batch {
		size *= d
	}
	tp.seedGrad = make([]float64, seed.Len()*size)
	if out.tan == nil || tp.dry {
		return
	}
	ob := out.batch
	if len(ob) < len(seed.batch) {
		ob = append(slices.Repeat([]int{1}, len(seed.batch)-len(ob)), ob...)
	}
	if len(ob) > len(seed.batch) {
		panic(fmt.Sprintf("graph: forward gradient of batch %v with respect to batch %v", out.batch, seed.batch))
	}
	osize := 1
	for _, d := range ob {
		osize *= d
	}
	tan := tensors.MustCopyFlatData[float64](out.tan) // [p, nodes, batch...]
	idx := make([]int, len(ob))
	for j := range osize {
		// the input's batch position paired with output position j
		r, s := j, 0
		for a := len(ob) - 1; a >= 0; a-- {
			idx[a] = r % ob[a]
			r /= ob[a]
		}
		for a, d := range seed.batch {
			s *= d
			if d > 1 {
				s += idx[a]
			}
		}
		for k := range p {
			for m := range out.lay.nodes {
				tp.seedGrad[k*size+s] += tan[(k*out.lay.nodes+m)*osize+j]
			}
		}
	}
}

// runForward compiles (once) and runs c with its tangents, setting c.outs and their tangents.
func (tp *Tape) runForward(c *call, gradIn []bool) {
	p := tp.fwd
	var key strings.Builder
	fmt.Fprintf(&key, "%s|T%d|dense%v|jvp%d%v", c.name, c.steps, c.dense, p, gradIn)
	tp.inputKey(&key, c)
	plan := newArgPlan()
	src := plan.inputs(c, false)
	jp := tp.e.program(key.String(), !tp.dry, func(g *G.Graph) ([]*G.Node, []outGroup, rewriteFunc) {
		b := newStageBuilder(g, c)
		b.in0, b.args = src, b.params(plan.dims)
		outs, lays := b.jvp(p, gradIn)
		return outs, lays, nil
	})
	var out []*tensors.Tensor
	if tp.dry {
		tp.queue(jp)
		out = dryOuts(c, jp.outs, true)
	} else {
		in := plan.tensors
		for i := range c.groups() {
			if gradIn[i] {
				for _, v := range c.group(i) {
					in = append(in, v.tan)
				}
			}
		}
		out = tp.e.execute(jp, in)
	}
	k := tp.setOuts(c, jp.outs, out, true)
	for j, og := range jp.outs {
		if og.lay.nodes == 0 {
			continue
		}
		for t := range c.outs[j] {
			c.outs[j][t].tan = out[k]
			k++
		}
	}
	tp.owned = append(tp.owned, out...)
}

// jvp builds the program of c's outputs and their tangents along p directions: its inputs are
// those of forward followed by the tangents [p, K, batch...] of the differentiated groups
// (gradIn), one per value; its outputs are forward's followed by the tangents of each output
// group that has nodes, one [p, K, batch...] per step.
func (b *stageBuilder) jvp(p int, gradIn []bool) ([]*G.Node, []outGroup) {
	b.unpack()
	b.pack(b.c.f(b.in))
	var targets []*G.Node
	var tans [][]*G.Node // per target: its tangent along each direction
	for i := range b.c.groups() {
		if !gradIn[i] {
			continue
		}
		vals := b.c.group(i)
		v0 := vals[0]
		ps := make([]*G.Node, len(vals))
		for t := range vals {
			ps[t] = b.param(append([]int{p, v0.lay.nodes}, v0.batch...))
		}
		packed, entryDims := ps[0], b.padded(v0.batch)
		if i < len(b.c.seqs) {
			packed = G.Stack(ps, 2) // [p, K, T, batch...]
			entryDims = append([]int{b.c.steps}, v0.batch...)
		}
		for m, n := range b.nodes[i] {
			dirs := make([]*G.Node, p)
			for k := range p {
				dirs[k] = G.Reshape(G.Slice(packed, G.AxisRange(k, k+1), G.AxisRange(m, m+1)), entryDims...)
			}
			targets = append(targets, n)
			tans = append(tans, dirs)
		}
	}
	var out []*G.Node
	var us []*G.Node
	var loss *G.Node
	for _, o := range b.outs {
		for _, n := range o {
			out = append(out, b.split(n)...)
			u := G.ZerosLike(n)
			us = append(us, u)
			term := G.ReduceAllSum(G.Mul(n, u))
			if loss == nil {
				loss = term
			} else {
				loss = G.Add(loss, term)
			}
		}
	}
	if loss == nil { // every output a constant
		return out, b.lays
	}
	vjp := G.Gradient(loss, targets...) // Jᵀu, linear in u
	jv := make([][]*G.Node, len(us))    // per output node, per direction
	for k := range p {
		var dot *G.Node
		for i, gx := range vjp {
			term := G.ReduceAllSum(G.Mul(gx, tans[i][k]))
			if dot == nil {
				dot = term
			} else {
				dot = G.Add(dot, term)
			}
		}
		for j, d := range G.Gradient(dot, us...) {
			jv[j] = append(jv[j], d)
		}
	}
	for _, dirs := range jv {
		packed := G.Stack(dirs, 0) // [p, K, (T,) batch...]
		if b.c.steps == 0 {
			out = append(out, packed)
			continue
		}
		d := packed.Shape().Dimensions
		rest := append([]int{d[0], d[1]}, d[3:]...)
		for t := range b.c.steps {
			out = append(out, G.Reshape(G.Slice(packed, G.AxisRange(), G.AxisRange(), G.AxisRange(t, t+1)), rest...))
		}
	}
	return out, b.lays
}
