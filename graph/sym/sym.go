// Package sym is a small symbolic algebra of scalar expressions, used to write the tasks'
// dynamics, observations and costs once and to derive their exact Jacobians and Hessians
// symbolically.
//
// An expression is a node of a directed acyclic graph. Nodes are interned (hash-consed): two
// structurally equal expressions are the same *Node, so common subexpressions are shared, and
// the constructors simplify as they build (constants are folded, x+0 and x·1 vanish, x·0 is 0,
// like terms of a sum are merged). Derivatives of any order are expressions again (Diff,
// Jacobian, Hessian). An expression is evaluated in any number system that implements Algebra:
// float64 (Eval) for tests and plain-Go checks, or batched GoMLX graph nodes (package graph),
// where each expression node becomes one graph operation and structural zeros cost nothing.
//
// This replaces per-time-step automatic differentiation inside the computation graphs: the
// linearization of a model (paper Sec. 2.2, App. D) is derived here once per model, and then
// evaluated wherever it is needed, including at the belief mean inside the belief-tracking
// recursion.
//
// All functions are safe for concurrent use.
package sym

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Op is the operation of an expression node.
type Op uint8

// The operations. Add and Mul are n-ary; Atan2 is binary (y, x); the others are unary.
const (
	OpConst Op = iota
	OpVar
	OpAdd
	OpMul
	OpRecip
	OpSquare
	OpSqrt
	OpSin
	OpCos
	OpExp
	OpLog
	OpTanh
	OpAbs
	OpSign
	OpFloor
	OpAtan2
)

var opNames = [...]string{"const", "var", "add", "mul", "recip", "square", "sqrt", "sin", "cos",
	"exp", "log", "tanh", "abs", "sign", "floor", "atan2"}

func (o Op) String() string { return opNames[o] }

// Node is an expression node. Nodes are immutable and interned; compare them with ==.
type Node struct {
	op   Op
	args []*Node
	val  float64 // OpConst
	name string  // OpVar
	id   int32   // creation order: arguments always have smaller ids than the node
	deps []int32 // sorted ids of the variables the node depends on
}

// Expr is a symbolic scalar expression.
type Expr = *Node

// Vec is a vector of expressions.
type Vec []Expr

// Op returns the node's operation.
func (n *Node) Op() Op { return n.op }

// Args returns the node's arguments (do not modify).
func (n *Node) Args() []*Node { return n.args }

// ID returns the node's unique id; arguments have smaller ids than the nodes that use them.
func (n *Node) ID() int { return int(n.id) }

// Name returns a variable's name ("" for other nodes).
func (n *Node) Name() string { return n.name }

// IsConst reports whether n is a constant.
func (n *Node) IsConst() bool { return n.op == OpConst }

// Value returns a constant's value. It panics if n is not a constant.
func (n *Node) Value() float64 {
	if n.op != OpConst {
		panic(fmt.Sprintf("sym: Value of non-constant %s", n))
	}
	return n.val
}

// IsZero reports whether n is the constant 0.
func (n *Node) IsZero() bool { return n.op == OpConst && n.val == 0 }

// DependsOn reports whether n depends on the variable v.
func (n *Node) DependsOn(v Expr) bool {
	if v.op != OpVar {
		panic("sym: DependsOn needs a variable")
	}
	_, found := slices.BinarySearch(n.deps, v.id)
	return found
}

// table interns nodes.
var table = struct {
	sync.Mutex
	nodes map[string]*Node
	next  int32
}{nodes: make(map[string]*Node)}

func intern(op Op, args []*Node, val float64) *Node {
	var buf []byte
	buf = append(buf, byte(op))
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(val))
	for _, a := range args {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(a.id))
	}
	key := string(buf)
	table.Lock()
	defer table.Unlock()
	if n, ok := table.nodes[key]; ok {
		return n
	}
	n := &Node{op: op, args: args, val: val, id: table.next}
	table.next++
	for _, a := range args {
		n.deps = mergeSorted(n.deps, a.deps)
	}
	table.nodes[key] = n
	return n
}

func mergeSorted(a, b []int32) []int32 {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// NewVar returns a new variable. Each call returns a distinct variable, even for equal names;
// the name is only used when printing.
func NewVar(name string) Expr {
	table.Lock()
	n := &Node{op: OpVar, name: name, id: table.next}
	table.next++
	table.Unlock()
	n.deps = []int32{n.id}
	return n
}

// NewVars returns n new variables named prefix0, prefix1, ...
func NewVars(prefix string, n int) Vec {
	v := make(Vec, n)
	for i := range v {
		v[i] = NewVar(fmt.Sprintf("%s%d", prefix, i))
	}
	return v
}

// C returns the constant c.
func C(c float64) Expr { return intern(OpConst, nil, c) }

// Zero and One are the constants 0 and 1.
var (
	Zero = C(0)
	One  = C(1)
)

// splitCoef writes e as coef·rest with rest free of a constant factor (rest is nil for a constant).
func splitCoef(e Expr) (float64, Expr) {
	switch e.op {
	case OpConst:
		return e.val, nil
	case OpMul:
		if e.args[0].op == OpConst {
			if len(e.args) == 2 {
				return e.args[0].val, e.args[1]
			}
			return e.args[0].val, intern(OpMul, e.args[1:], 0)
		}
	}
	return 1, e
}

// Add returns the sum of its arguments (0 if there are none).
func Add(terms ...Expr) Expr {
	constant := 0.0
	coef := make(map[*Node]float64)
	var order []*Node
	var visit func(e Expr)
	visit = func(e Expr) {
		if e.op == OpAdd {
			for _, a := range e.args {
				visit(a)
			}
			return
		}
		c, rest := splitCoef(e)
		if rest == nil {
			constant += c
			return
		}
		if _, ok := coef[rest]; !ok {
			order = append(order, rest)
		}
		coef[rest] += c
	}
	for _, t := range terms {
		visit(t)
	}
	args := make([]*Node, 0, len(order)+1)
	for _, r := range order {
		c := coef[r]
		if c == 0 {
			continue
		}
		args = append(args, scaled(c, r))
	}
	sort.Slice(args, func(i, j int) bool { return args[i].id < args[j].id })
	if constant != 0 {
		args = append([]*Node{C(constant)}, args...)
	}
	switch len(args) {
	case 0:
		return Zero
	case 1:
		return args[0]
	}
	return intern(OpAdd, args, 0)
}

// scaled returns c·r for a non-constant r free of constant factors.
func scaled(c float64, r Expr) Expr {
	if c == 1 {
		return r
	}
	if r.op == OpMul {
		return intern(OpMul, append([]*Node{C(c)}, r.args...), 0)
	}
	return intern(OpMul, []*Node{C(c), r}, 0)
}

// Mul returns the product of its arguments (1 if there are none).
func Mul(factors ...Expr) Expr {
	constant := 1.0
	var rest []*Node
	var visit func(e Expr)
	visit = func(e Expr) {
		switch e.op {
		case OpConst:
			constant *= e.val
		case OpMul:
			for _, a := range e.args {
				visit(a)
			}
		default:
			rest = append(rest, e)
		}
	}
	for _, f := range factors {
		visit(f)
	}
	if constant == 0 {
		return Zero
	}
	if len(rest) == 0 {
		return C(constant)
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].id < rest[j].id })
	// Merge repeated factors x·x into Square(x).
	merged := rest[:0:0]
	for i := 0; i < len(rest); {
		if i+1 < len(rest) && rest[i] == rest[i+1] {
			merged = append(merged, Square(rest[i]))
			i += 2
			continue
		}
		merged = append(merged, rest[i])
		i++
	}
	if len(merged) != len(rest) {
		return Mul(append([]Expr{C(constant)}, merged...)...)
	}
	if len(rest) == 1 {
		return scaled(constant, rest[0])
	}
	prod := intern(OpMul, rest, 0)
	return scaled(constant, prod)
}

// Neg returns −a.
func Neg(a Expr) Expr { return Mul(C(-1), a) }

// Sub returns a − b.
func Sub(a, b Expr) Expr { return Add(a, Neg(b)) }

// Scale returns c·a.
func Scale(c float64, a Expr) Expr { return Mul(C(c), a) }

// Div returns a / b.
func Div(a, b Expr) Expr { return Mul(a, Recip(b)) }

func unary(op Op, a Expr, f func(float64) float64) Expr {
	if a.op == OpConst {
		return C(f(a.val))
	}
	return intern(op, []*Node{a}, 0)
}

// Recip returns 1/a.
func Recip(a Expr) Expr {
	if a.op == OpRecip {
		return a.args[0]
	}
	if c, rest := splitCoef(a); rest != nil && c != 1 {
		return Scale(1/c, Recip(rest))
	}
	return unary(OpRecip, a, func(x float64) float64 { return 1 / x })
}

// Square returns a².
func Square(a Expr) Expr {
	if c, rest := splitCoef(a); rest != nil && c != 1 {
		return Scale(c*c, Square(rest))
	}
	return unary(OpSquare, a, func(x float64) float64 { return x * x })
}

// Sqrt returns √a.
func Sqrt(a Expr) Expr { return unary(OpSqrt, a, math.Sqrt) }

// Sin returns sin a.
func Sin(a Expr) Expr { return unary(OpSin, a, math.Sin) }

// Cos returns cos a.
func Cos(a Expr) Expr { return unary(OpCos, a, math.Cos) }

// Exp returns eᵃ.
func Exp(a Expr) Expr { return unary(OpExp, a, math.Exp) }

// Log returns the natural logarithm of a.
func Log(a Expr) Expr { return unary(OpLog, a, math.Log) }

// Tanh returns tanh a.
func Tanh(a Expr) Expr { return unary(OpTanh, a, math.Tanh) }

// Abs returns |a| (its derivative is sign(a)).
func Abs(a Expr) Expr { return unary(OpAbs, a, math.Abs) }

// Sign returns the sign of a (−1, 0 or 1); its derivative is 0.
func Sign(a Expr) Expr {
	return unary(OpSign, a, func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	})
}

// Floor returns ⌊a⌋; its derivative is taken as 0.
func Floor(a Expr) Expr { return unary(OpFloor, a, math.Floor) }

// Atan2 returns the angle of the point (x, y) in (−π, π], like math.Atan2(y, x).
func Atan2(y, x Expr) Expr {
	if y.op == OpConst && x.op == OpConst {
		return C(math.Atan2(y.val, x.val))
	}
	return intern(OpAtan2, []*Node{y, x}, 0)
}

// Pow returns aᵏ for an integer k ≥ 0, by repeated squaring.
func Pow(a Expr, k int) Expr {
	if k < 0 {
		panic("sym: Pow needs k >= 0")
	}
	result := One
	for base := a; k > 0; k >>= 1 {
		if k&1 == 1 {
			result = Mul(result, base)
		}
		if k > 1 {
			base = Square(base)
		}
	}
	return result
}

// Wrap returns the angle a wrapped to [−π, π): a − 2π·⌊(a+π)/(2π)⌋. Its derivative is 1.
func Wrap(a Expr) Expr {
	return Sub(a, Scale(2*math.Pi, Floor(Scale(1/(2*math.Pi), Add(a, C(math.Pi))))))
}

// Dot returns Σ a_i·b_i. It panics if the lengths differ.
func Dot(a, b Vec) Expr {
	if len(a) != len(b) {
		panic("sym: Dot of vectors of different lengths")
	}
	terms := make([]Expr, len(a))
	for i := range a {
		terms[i] = Mul(a[i], b[i])
	}
	return Add(terms...)
}

// SumSq returns Σ a_i².
func SumSq(a Vec) Expr {
	terms := make([]Expr, len(a))
	for i := range a {
		terms[i] = Square(a[i])
	}
	return Add(terms...)
}

// SubVec returns a − b element-wise. It panics if the lengths differ.
func SubVec(a, b Vec) Vec {
	if len(a) != len(b) {
		panic("sym: SubVec of vectors of different lengths")
	}
	out := make(Vec, len(a))
	for i := range a {
		out[i] = Sub(a[i], b[i])
	}
	return out
}

// Consts returns the constant vector c.
func Consts(c ...float64) Vec {
	out := make(Vec, len(c))
	for i, v := range c {
		out[i] = C(v)
	}
	return out
}

// String prints the expression in infix form (shared subexpressions are repeated).
func (n *Node) String() string {
	var sb strings.Builder
	n.write(&sb)
	return sb.String()
}

func (n *Node) write(sb *strings.Builder) {
	switch n.op {
	case OpConst:
		fmt.Fprintf(sb, "%g", n.val)
	case OpVar:
		sb.WriteString(n.name)
	case OpAdd, OpMul:
		sep := " + "
		if n.op == OpMul {
			sep = "*"
		}
		sb.WriteByte('(')
		for i, a := range n.args {
			if i > 0 {
				sb.WriteString(sep)
			}
			a.write(sb)
		}
		sb.WriteByte(')')
	case OpAtan2:
		sb.WriteString("atan2(")
		n.args[0].write(sb)
		sb.WriteString(", ")
		n.args[1].write(sb)
		sb.WriteByte(')')
	default:
		sb.WriteString(n.op.String())
		sb.WriteByte('(')
		n.args[0].write(sb)
		sb.WriteByte(')')
	}
}
