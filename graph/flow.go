package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// A Flow runs a computation made of stages over groups of batched scalars, in one of two
// forms that give the same values and gradients:
//
//   - Unrolled: every stage, and every step of every recursion over time, becomes part of one
//     graph, built inside a Program (the caller differentiates it with Gradient). Best where
//     compiling is free (the Go backend).
//   - Looped (a Tape of an Engine): each stage and each recursion's step function is a small
//     program, compiled once per shape and run from Go, T times for a recursion, with values
//     kept where the backend put them between calls; the gradient is reverse mode over the
//     recorded calls (Tape.Backward), each call's vector–Jacobian product being a compiled
//     program too. Compile time then no longer grows with T, which XLA needs.
//
// A function given to a Flow must depend on its arguments only (and on configuration fixed
// for the Flow's owner): a looped Flow compiles it once per name and input shapes and reuses
// the program. Values carry structural constants along (the zeros and ones of Jacobians), so a
// stage downstream folds them as the unrolled form does.
type Flow interface {
	// Map applies f once to the input groups and returns its output groups.
	Map(name string, f MapFunc, in ...*Value) []*Value
	// MapSteps applies f at each time step t to the groups seqs[0][t], seqs[1][t], …
	// followed by shared..., and returns out[j][t], output group j at step t. The steps are
	// independent, so a looped Flow runs them batched over time in one call.
	MapSteps(name string, f MapFunc, seqs [][]*Value, shared ...*Value) [][]*Value
	// Scan runs the recursion carry_{t+1}, y_t = step(carry_t, xs[0][t], xs[1][t], …; params)
	// from init over the steps t of xs (all of the same length T), forward in time or, with
	// reverse, from t = T−1 down to 0. It returns the last carry and ys[t], the output of the
	// step at t.
	Scan(name string, step StepFunc, init *Value, xs [][]*Value, params []*Value, reverse bool) (final *Value, ys []*Value)
}

// MapFunc computes output groups of batched scalars from input groups.
type MapFunc func(in [][]S) [][]S

// StepFunc is one step of a recursion over time: the next carry and the step's output from
// the carry, the step's inputs and the parameters shared by all steps. The carry's length and
// the output's length must not depend on the step.
type StepFunc func(carry []S, xs [][]S, params [][]S) (next, y []S)

// Value is a group of batched scalars passed between the stages of a Flow. In the unrolled
// form it holds the scalars; in the looped form a tensor [K, batch...] with its K non-constant
// entries, where the backend keeps it, and the constants beside it.
type Value struct {
	s     []S // unrolled
	t     *tensors.Tensor
	lay   *layout
	batch []int
	grad  bool            // the looped value depends on the differentiated inputs
	tan   *tensors.Tensor // forward mode: its tangents [p, K, batch...]
	stack *stacked        // looped, if t is nil: the stacked tensor whose row row holds it
	row   int
	pend  *slot // looped: the output of a fused call (loop_fuse.go), if not stacked
}

// Len returns the number of scalars in the group.
func (v *Value) Len() int {
	if v.lay != nil {
		return len(v.lay.isNode)
	}
	return len(v.s)
}

// Scalars returns the scalars of an unrolled value. It panics for a looped one.
func (v *Value) Scalars() []S {
	if v.lay != nil {
		panic("graph: Scalars of a looped value")
	}
	return v.s
}

// Values wraps groups of scalars as unrolled values.
func Values(groups ...[]S) []*Value {
	out := make([]*Value, len(groups))
	for i, g := range groups {
		out[i] = &Value{s: g}
	}
	return out
}

// SeriesValues splits a node of dimensions [d_1, …, d_lead, batch...] (lead leading axes, see
// Unstack) into unrolled values of size entries each, in order: the steps of a time series.
func SeriesValues(x *G.Node, lead, size int) []*Value {
	flat := Unstack(x, lead)
	out := make([]*Value, len(flat)/size)
	for t := range out {
		out[t] = &Value{s: flat[t*size : (t+1)*size]}
	}
	return out
}

// layout says which entries of a looped value are graph nodes (packed in its tensor, in order)
// and what the constant ones are.
type layout struct {
	isNode []bool
	consts []float64
	nodes  int
	key    string
}

func newLayout(s []S) *layout {
	l := &layout{isNode: make([]bool, len(s)), consts: make([]float64, len(s))}
	var b strings.Builder
	for i, x := range s {
		if x.IsConst() {
			l.consts[i] = x.Const()
			b.WriteString(strconv.FormatFloat(x.c, 'g', -1, 64))
		} else {
			l.isNode[i] = true
			l.nodes++
			b.WriteByte('n')
		}
		b.WriteByte(',')
	}
	l.key = b.String()
	if l.dense() {
		l.key = denseLayout(len(s)).key // one program for a value, whichever way it was made
	}
	return l
}

// denseLayout is the layout of k entries that are all nodes.
func denseLayout(k int) *layout {
	l := &layout{isNode: make([]bool, k), consts: make([]float64, k), nodes: k}
	for i := range l.isNode {
		l.isNode[i] = true
	}
	l.key = fmt.Sprintf("dense%d", k)
	return l
}

func (l *layout) dense() bool { return l.nodes == len(l.isNode) }

// Unrolled is the unrolled Flow: every stage is built into the graph of its input values.
type Unrolled struct{}

// Map implements Flow.
func (Unrolled) Map(_ string, f MapFunc, in ...*Value) []*Value {
	return Values(f(scalars(in))...)
}

// MapSteps implements Flow.
func (Unrolled) MapSteps(_ string, f MapFunc, seqs [][]*Value, shared ...*Value) [][]*Value {
	T := seqLen(seqs)
	var out [][]*Value
	for t := range T {
		in := make([]*Value, 0, len(seqs)+len(shared))
		for _, s := range seqs {
			in = append(in, s[t])
		}
		res := f(scalars(append(in, shared...)))
		if out == nil {
			out = make([][]*Value, len(res))
			for j := range out {
				out[j] = make([]*Value, T)
			}
		}
		for j, r := range res {
			out[j][t] = &Value{s: r}
		}
	}
	return out
}

// Scan implements Flow.
func (Unrolled) Scan(_ string, step StepFunc, init *Value, xs [][]*Value, params []*Value, reverse bool) (*Value, []*Value) {
	T := seqLen(xs)
	carry := init.Scalars()
	ps := scalars(params)
	ys := make([]*Value, T)
	for i := range T {
		t := i
		if reverse {
			t = T - 1 - i
		}
		in := make([][]S, len(xs))
		for j, x := range xs {
			in[j] = x[t].Scalars()
		}
		next, y := step(carry, in, ps)
		if len(next) != len(carry) {
			panic(fmt.Sprintf("graph: step of a recursion changed the carry from %d to %d scalars", len(carry), len(next)))
		}
		carry, ys[t] = next, &Value{s: y}
	}
	return &Value{s: carry}, ys
}

func scalars(vs []*Value) [][]S {
	out := make([][]S, len(vs))
	for i, v := range vs {
		out[i] = v.Scalars()
	}
	return out
}

// seqLen returns the common length of the sequences; it panics if they differ or there are
// none.
func seqLen(seqs [][]*Value) int {
	if len(seqs) == 0 {
		panic("graph: a recursion or step map needs at least one sequence")
	}
	T := len(seqs[0])
	for _, s := range seqs {
		if len(s) != T {
			panic(fmt.Sprintf("graph: sequences of lengths %d and %d", T, len(s)))
		}
	}
	return T
}

// Flatten concatenates vectors and matrices (row by row) into one group, the packing of
// structured values for a Flow; Unflatten reverses it.
func Flatten(parts ...any) []S {
	var out []S
	for _, p := range parts {
		switch x := p.(type) {
		case S:
			out = append(out, x)
		case Vec:
			out = append(out, x...)
		case []S:
			out = append(out, x...)
		case Mat:
			for _, row := range x {
				out = append(out, row...)
			}
		case []Mat:
			for _, m := range x {
				out = append(out, Flatten(m)...)
			}
		default:
			panic(fmt.Sprintf("graph: Flatten of %T", p))
		}
	}
	return out
}

// Unflattener reads structured values back from a flat group, in the order Flatten wrote
// them. It panics when it reads past the end, and Done panics when entries are left.
type Unflattener struct {
	s   []S
	pos int
}

// NewUnflattener returns an Unflattener of s.
func NewUnflattener(s []S) *Unflattener { return &Unflattener{s: s} }

// Scalar reads one scalar.
func (u *Unflattener) Scalar() S {
	u.pos++
	return u.s[u.pos-1]
}

// Vec reads a vector of length n.
func (u *Unflattener) Vec(n int) Vec {
	v := Vec(slices.Clone(u.s[u.pos : u.pos+n]))
	u.pos += n
	return v
}

// Mat reads an r×c matrix.
func (u *Unflattener) Mat(r, c int) Mat {
	A := NewMat(r, c)
	for i := range r {
		copy(A[i], u.s[u.pos:u.pos+c])
		u.pos += c
	}
	return A
}

// Mats reads count r×c matrices.
func (u *Unflattener) Mats(count, r, c int) []Mat {
	out := make([]Mat, count)
	for j := range out {
		out[j] = u.Mat(r, c)
	}
	return out
}

// Done panics unless every entry has been read.
func (u *Unflattener) Done() {
	if u.pos != len(u.s) {
		panic(fmt.Sprintf("graph: %d of %d flattened scalars left unread", len(u.s)-u.pos, len(u.s)))
	}
}
