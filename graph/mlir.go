// A writer of StableHLO text in MLIR's generic form, for the programs GoMLX v0.26 cannot
// build (the while loops of loop_while.go).

package graph

import (
	"fmt"
	"slices"
	"strings"
)

// stepFunction returns the text of a GoMLX program's functions for another program to call:
// its main renamed to the private function name, any others to name_ and their own names.
func stepFunction(program, name string) (string, error) {
	return privateFunctions(program, name+"_", name)
}

func tensorType(dims []int) string {
	var s strings.Builder
	s.WriteString("tensor<")
	for _, d := range dims {
		fmt.Fprintf(&s, "%dx", d)
	}
	s.WriteString("f64>")
	return s.String()
}

// mlir writes the statements of a StableHLO function in MLIR's generic form, naming each value
// it defines uniquely.
type mlir struct {
	b strings.Builder
	n int
}

func (m *mlir) name() string { m.n++; return fmt.Sprintf("%%v%d", m.n) }

func (m *mlir) line(format string, args ...any) {
	m.b.WriteString("    ")
	fmt.Fprintf(&m.b, format, args...)
	m.b.WriteString("\n")
}

func (m *mlir) index(v int) string {
	x := m.name()
	m.line(`%s = "stablehlo.constant"() { value = dense<%d> : tensor<i64> } : () -> tensor<i64>`, x, v)
	return x
}

func (m *mlir) zeros(dims []int) string { return m.fill("0.0", dims) }

// fill returns a constant of dimensions dims whose every entry is the float literal v.
func (m *mlir) fill(v string, dims []int) string {
	z := m.name()
	m.line(`%s = "stablehlo.constant"() { value = dense<%s> : tensor<f64> } : () -> tensor<f64>`, z, v)
	x := m.name()
	m.line(`%s = "stablehlo.broadcast_in_dim"(%s) { broadcast_dimensions = array<i64> } : (tensor<f64>) -> %s`, x, z, tensorType(dims))
	return x
}

func (m *mlir) reshape(x string, from, to []int) string {
	y := m.name()
	m.line(`%s = "stablehlo.reshape"(%s) : (%s) -> %s`, y, x, tensorType(from), tensorType(to))
	return y
}

func (m *mlir) add(a, b string, dims []int) string {
	y := m.name()
	t := tensorType(dims)
	m.line(`%s = "stablehlo.add"(%s, %s) : (%s, %s) -> %s`, y, a, b, t, t, t)
	return y
}

// along returns dims with n inserted at axis.
func along(dims []int, axis, n int) []int {
	out := append([]int{}, dims[:axis]...)
	out = append(out, n)
	return append(out, dims[axis:]...)
}

// stack stacks xs, each of dimensions dims, along a new axis axis.
func (m *mlir) stack(xs []string, dims []int, axis int) string {
	one := along(dims, axis, 1)
	parts := make([]string, len(xs))
	types := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = m.reshape(x, dims, one)
		types[i] = tensorType(one)
	}
	y := m.name()
	m.line(`%s = "stablehlo.concatenate"(%s) { dimension = %d : i64 } : (%s) -> %s`, y, strings.Join(parts, ", "), axis,
		strings.Join(types, ", "), tensorType(along(dims, axis, len(xs))))
	return y
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// slice returns entry t along axis of x, a stack of T values of dimensions dims, for a static
// t.
func (m *mlir) slice(x string, t, T int, dims []int, axis int) string {
	lo, hi, st := along(make([]int, len(dims)), axis, t), along(dims, axis, t+1), along(dims, axis, 1)
	for i := range st {
		st[i] = 1
	}
	one := along(dims, axis, 1)
	y := m.name()
	m.line(`%s = "stablehlo.slice"(%s) { start_indices = array<i64: %s>, limit_indices = array<i64: %s>, strides = array<i64: %s> } : (%s) -> %s`,
		y, x, joinInts(lo), joinInts(hi), joinInts(st), tensorType(along(dims, axis, T)), tensorType(one))
	return m.reshape(y, one, dims)
}

// rows returns entries from to from+n along axis of x, of dimensions dims.
func (m *mlir) rows(x string, from, n int, dims []int, axis int) string {
	lo, hi, st := make([]int, len(dims)), slices.Clone(dims), make([]int, len(dims))
	for i := range st {
		st[i] = 1
	}
	lo[axis], hi[axis] = from, from+n
	out := slices.Clone(dims)
	out[axis] = n
	y := m.name()
	m.line(`%s = "stablehlo.slice"(%s) { start_indices = array<i64: %s>, limit_indices = array<i64: %s>, strides = array<i64: %s> } : (%s) -> %s`,
		y, x, joinInts(lo), joinInts(hi), joinInts(st), tensorType(dims), tensorType(out))
	return y
}

// starts returns the start indices of entry i along axis of an array of rank n: i there,
// zeros elsewhere.
func (m *mlir) starts(i string, n, axis int) (names, types string) {
	z := m.index(0)
	ns, ts := make([]string, n), make([]string, n)
	for k := range ns {
		ns[k], ts[k] = z, "tensor<i64>"
	}
	ns[axis] = i
	return strings.Join(ns, ", "), strings.Join(ts, ", ")
}

// dynRow returns entry i (an index value) along axis of x, a stack of T values of dimensions
// dims.
func (m *mlir) dynRow(x, i string, T int, dims []int, axis int) string {
	one := along(dims, axis, 1)
	ns, ts := m.starts(i, len(one), axis)
	y := m.name()
	m.line(`%s = "stablehlo.dynamic_slice"(%s, %s) { slice_sizes = array<i64: %s> } : (%s, %s) -> %s`,
		y, x, ns, joinInts(one), tensorType(along(dims, axis, T)), ts, tensorType(one))
	return m.reshape(y, one, dims)
}

// dynUpdate returns buf, a stack of T values of dimensions dims along axis, with entry i (an
// index value) replaced by x.
func (m *mlir) dynUpdate(buf, x, i string, T int, dims []int, axis int) string {
	one := along(dims, axis, 1)
	r := m.reshape(x, dims, one)
	ns, ts := m.starts(i, len(one), axis)
	y := m.name()
	bt := tensorType(along(dims, axis, T))
	m.line(`%s = "stablehlo.dynamic_update_slice"(%s, %s, %s) : (%s, %s, %s) -> %s`, y, buf, r, ns, bt, tensorType(one), ts, bt)
	return y
}

// results names the n results of an operation defined as y.
func results(y string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s#%d", y, i)
	}
	return out
}

// call calls function fn on args and returns its results.
func (m *mlir) call(fn string, args, argTypes, resTypes []string) []string {
	y := m.name()
	m.line(`%s:%d = "func.call"(%s) { callee = @%s } : (%s) -> (%s)`, y, len(resTypes), strings.Join(args, ", "), fn,
		strings.Join(argTypes, ", "), strings.Join(resTypes, ", "))
	return results(y, len(resTypes))
}

// loopVar is one operand of a while loop: its value before the loop and its type.
type loopVar struct {
	init, typ string
}

// while writes a loop of T iterations over vars (the counter, an i64 from 0, is added first):
// body writes the iteration's statements given the counter and the vars' values, and returns
// their next values. It returns the vars' values after the loop.
func (m *mlir) while(T int, vars []loopVar, body func(i string, v []string) []string) []string {
	zero := m.index(0)
	inits, types := []string{zero}, []string{"tensor<i64>"}
	for _, v := range vars {
		inits, types = append(inits, v.init), append(types, v.typ)
	}
	allTypes := strings.Join(types, ", ")
	args := func(prefix string) ([]string, string) {
		names := make([]string, len(types))
		decl := make([]string, len(types))
		for k, t := range types {
			names[k] = fmt.Sprintf("%%%s%d", prefix, k)
			decl[k] = names[k] + ": " + t
		}
		return names, strings.Join(decl, ", ")
	}
	y := m.name()
	m.line(`%s:%d = "stablehlo.while"(%s) ({`, y, len(types), strings.Join(inits, ", "))
	c, cdecl := args(strings.TrimPrefix(y, "%") + "c")
	m.line(`^bb0(%s):`, cdecl)
	lim := m.index(T)
	p := m.name()
	m.line(`%s = "stablehlo.compare"(%s, %s) { comparison_direction = #stablehlo<comparison_direction LT> } : (tensor<i64>, tensor<i64>) -> tensor<i1>`, p, c[0], lim)
	m.line(`"stablehlo.return"(%s) : (tensor<i1>) -> ()`, p)
	m.line(`}, {`)
	bn, bdecl := args(strings.TrimPrefix(y, "%") + "b")
	m.line(`^bb0(%s):`, bdecl)
	next := body(bn[0], bn[1:])
	one := m.index(1)
	i1 := m.name()
	m.line(`%s = "stablehlo.add"(%s, %s) : (tensor<i64>, tensor<i64>) -> tensor<i64>`, i1, bn[0], one)
	m.line(`"stablehlo.return"(%s, %s) : (%s) -> ()`, i1, strings.Join(next, ", "), allTypes)
	m.line(`}) : (%s) -> (%s)`, allTypes, allTypes)
	return results(y, len(types))[1:]
}

// module returns a module of the functions fns and a main function of the given parameters,
// whose statements m holds, returning outs.
func (m *mlir) module(name string, fns []string, params [][]int, outs []string, outDims [][]int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "module @%s {\n", strings.NewReplacer("/", "_", "-", "_").Replace(name))
	for _, fn := range fns {
		s.WriteString(fn)
	}
	decl := make([]string, len(params))
	for k, d := range params {
		decl[k] = fmt.Sprintf("%%a%d: %s", k, tensorType(d))
	}
	rt := make([]string, len(outDims))
	for k, d := range outDims {
		rt[k] = tensorType(d)
	}
	fmt.Fprintf(&s, "  func.func @main(%s) -> (%s) {\n", strings.Join(decl, ", "), strings.Join(rt, ", "))
	s.WriteString(m.b.String())
	fmt.Fprintf(&s, "    \"func.return\"(%s) : (%s) -> ()\n  }\n}\n", strings.Join(outs, ", "), strings.Join(rt, ", "))
	return s.String()
}
