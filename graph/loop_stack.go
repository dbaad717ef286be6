// Stacked sequences: where recursions run as while loops (Engine.SetWhileLoops), the T values
// of a sequence that a program makes (a recursion's outputs, a step map's outputs, their
// cotangents) stay in one tensor [K, T, batch...], and a program that takes the whole sequence
// takes that tensor as one parameter. Splitting a sequence into T tensors costs T slices, each
// a kernel XLA's CPU compiler takes about 12 ms over; the while loops' programs then compile
// in about the time of one step's.

package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// stacked is a tensor [K, T, batch...] whose row t (along its second axis) holds the t-th
// value [K, batch...] of a sequence (nil on a dry tape: the values' structure stays, their
// numbers do not).
type stacked struct {
	t    *tensors.Tensor
	T    int
	pend *slot // the stacked output of a fused call (loop_fuse.go)
}

// ref is where the numbers of a value (or of a cotangent) are: a tensor of its own
// [K, batch...], or row row of a stacked tensor.
type ref struct {
	t   *tensors.Tensor
	s   *stacked
	row int
	dry bool  // a dry tape's: there, but no numbers
	p   *slot // the output of a fused call, if not stacked (loop_fuse.go)
}

func (r ref) ok() bool { return r.t != nil || r.s != nil || r.dry }

// ref returns where v's numbers are.
func (v *Value) ref() ref { return ref{t: v.t, s: v.stack, row: v.row, p: v.pend} }

// host returns the flat numbers of r, a value [K, batch...] whose batch holds size numbers.
func (r ref) host(K, size int) []float64 {
	if r.s == nil {
		return tensors.MustCopyFlatData[float64](r.t)
	}
	all := tensors.MustCopyFlatData[float64](r.s.t)
	out := make([]float64, 0, K*size)
	for k := range K {
		i := (k*r.s.T + r.row) * size
		out = append(out, all[i:i+size]...)
	}
	return out
}

// source says where a program finds one value among its parameters: the parameter arg itself
// (row < 0), or row row of parameter arg, a stacked tensor. An arg below -1 is a node the
// program made itself, the output of an earlier call of a fused call (argPlan.inside).
type source struct{ arg, row int }

// argPlan lists the parameters of a program in order: each value's own tensor, or a stacked
// tensor holding it (each stacked tensor once), and how each value is found (source). Its key
// names that structure, which the program's graph depends on.
type argPlan struct {
	tensors []*tensors.Tensor
	dims    [][]int
	stacks  map[*stacked]int
	key     strings.Builder
	fused   *fusedCall // the fused call whose programs find its own outputs inside (loop_fuse.go)
}

func newArgPlan() *argPlan { return &argPlan{stacks: map[*stacked]int{}} }

func (p *argPlan) add(t *tensors.Tensor, dims []int) int {
	p.tensors = append(p.tensors, t)
	p.dims = append(p.dims, dims)
	return len(p.tensors) - 1
}

// stack returns the parameter of stacked tensor s of rows of dimensions dims.
func (p *argPlan) stack(s *stacked, dims []int) int {
	if k, ok := p.inside(s.pend); ok {
		return k
	}
	k, ok := p.stacks[s]
	if !ok {
		k = p.add(s.t, along(dims, seqAxis, s.T))
		p.stacks[s] = k
	}
	return k
}

// one adds the value at r, of dimensions dims ([K, batch...]).
func (p *argPlan) one(r ref, dims []int) source {
	if r.s != nil {
		k := p.stack(r.s, dims)
		p.key.WriteByte('r')
		keyInt(&p.key, k)
		p.key.WriteByte('.')
		keyInt(&p.key, r.row)
		p.key.WriteByte(',')
		return source{arg: k, row: r.row}
	}
	if k, ok := p.inside(r.p); ok {
		p.key.WriteByte('i')
		keyInt(&p.key, k)
		p.key.WriteByte(',')
		return source{arg: k, row: -1}
	}
	p.key.WriteString("p,")
	return source{arg: p.add(r.t, dims), row: -1}
}

// seq adds the values at rs, a sequence of values of dimensions dims. If they are consecutive
// rows of one stacked tensor it adds that tensor alone and returns the group's source as
// whole; otherwise srcs says where each value is.
func (p *argPlan) seq(rs []ref, dims []int) groupSrc {
	s := rs[0].s
	in := s != nil
	for t, r := range rs {
		in = in && r.s == s && r.row == rs[0].row+t
	}
	if in {
		k := p.stack(s, dims)
		p.key.WriteString("w[")
		keyInt(&p.key, k)
		p.key.WriteByte(':')
		keyInt(&p.key, rs[0].row)
		p.key.WriteString("],")
		return groupSrc{whole: k, from: rs[0].row, n: len(rs)}
	}
	p.key.WriteString("s[")
	srcs := make([]source, len(rs))
	for t, r := range rs {
		srcs[t] = p.one(r, dims)
	}
	p.key.WriteString("],")
	return groupSrc{srcs: srcs, whole: -1, n: len(rs)}
}

// plain adds a parameter of dimensions dims for one value and returns its group's source.
func (p *argPlan) plain(dims []int) groupSrc {
	p.key.WriteString("p,")
	return groupSrc{srcs: []source{{arg: p.add(nil, dims), row: -1}}, whole: -1, n: 1}
}

// groupSrc says where a program finds the values of one group: whole >= 0 is the parameter of
// a stacked tensor whose rows from, from+1, … hold the n values in order; otherwise srcs, a
// source per value.
type groupSrc struct {
	srcs    []source
	whole   int
	from, n int
}

// valueDims returns the dimensions [K, batch...] of v's tensor.
func valueDims(v *Value) []int { return append([]int{v.lay.nodes}, v.batch...) }

// addGroup adds the values vals (a group of a call; seq: a sequence that may come whole) at
// refs rs.
func (p *argPlan) addGroup(vals []*Value, rs []ref, seq bool) groupSrc {
	dims := valueDims(vals[0])
	if seq {
		return p.seq(rs, dims)
	}
	srcs := make([]source, len(rs))
	for t, r := range rs {
		srcs[t] = p.one(r, dims)
	}
	return groupSrc{srcs: srcs, whole: -1}
}

// inputPlan adds call c's inputs (the groups with nodes) to p and returns where each group is.
func (p *argPlan) inputs(c *call, stackSeqs bool) []groupSrc {
	out := make([]groupSrc, c.groups())
	for i := range c.groups() {
		vals := c.group(i)
		out[i].whole = -1
		if vals[0].lay.nodes == 0 {
			continue
		}
		rs := make([]ref, len(vals))
		for t, v := range vals {
			rs[t] = v.ref()
		}
		out[i] = p.addGroup(vals, rs, stackSeqs && i < len(c.seqs))
	}
	p.key.WriteString("|")
	return out
}

// BorrowSeries is Borrow of a tensor t of dimensions [k, steps, batch...] that holds a
// sequence stacked along its second axis, as one value per step: programs that take a run of
// consecutive steps take t whole (StackSeries makes such a tensor). It is for tapes whose
// Engine runs while loops (Engine.WhileLoops) and records no tangents.
func (tp *Tape) BorrowSeries(t *tensors.Tensor, steps, k int, batch []int) []*Value {
	if tp.dry {
		t = nil
	}
	tp.noteInput(t)
	s := &stacked{t: t, T: steps}
	out := make([]*Value, steps)
	for i := range out {
		out[i] = &Value{stack: s, row: i, lay: denseLayout(k), batch: slices.Clone(batch)}
	}
	return out
}

// StackSeries returns data laid out [steps][k][size...] as a tensor [k, steps, batch...] for
// BorrowSeries; size is the product of batch.
func StackSeries(data []float64, steps, k int, batch ...int) *tensors.Tensor {
	size := 1
	for _, d := range batch {
		size *= d
	}
	if len(data) != steps*k*size {
		panic(fmt.Sprintf("graph: %d values for %d steps of %d×%d", len(data), steps, k, size))
	}
	out := make([]float64, len(data))
	for t := range steps {
		for j := range k {
			copy(out[(j*steps+t)*size:(j*steps+t+1)*size], data[(t*k+j)*size:(t*k+j+1)*size])
		}
	}
	return NewTensor(out, append([]int{k, steps}, batch...)...)
}
