package sym

import (
	"fmt"
	"math"
)

// Algebra is a number system in which expressions are evaluated: float64 (Float), batched
// graph nodes (package graph), or anything else with these operations.
type Algebra[T any] interface {
	Const(c float64) T
	Add(a, b T) T
	Mul(a, b T) T
	Recip(a T) T
	Square(a T) T
	Sqrt(a T) T
	Sin(a T) T
	Cos(a T) T
	Exp(a T) T
	Log(a T) T
	Tanh(a T) T
	Abs(a T) T
	Sign(a T) T
	Floor(a T) T
	Atan2(y, x T) T
}

// Evaluator evaluates expressions in an Algebra, given values for their variables. Each
// expression node is evaluated once per Evaluator, so shared subexpressions of everything
// evaluated with it are computed once. An Evaluator is not safe for concurrent use.
type Evaluator[T any] struct {
	alg  Algebra[T]
	memo map[*Node]T
}

// NewEvaluator returns an Evaluator with the variables bound to the given values.
func NewEvaluator[T any](alg Algebra[T], bind map[*Node]T) *Evaluator[T] {
	memo := make(map[*Node]T, len(bind)+64)
	for v, x := range bind {
		if v.op != OpVar {
			panic(fmt.Sprintf("sym: binding a non-variable %s", v))
		}
		memo[v] = x
	}
	return &Evaluator[T]{alg: alg, memo: memo}
}

// Bind sets the value of variable v for expressions evaluated afterwards. It panics if v was
// already used by this Evaluator.
func (ev *Evaluator[T]) Bind(v Expr, x T) {
	if v.op != OpVar {
		panic(fmt.Sprintf("sym: binding a non-variable %s", v))
	}
	if _, ok := ev.memo[v]; ok {
		panic(fmt.Sprintf("sym: variable %s bound twice", v))
	}
	ev.memo[v] = x
}

// Eval returns the value of e. It panics if e depends on an unbound variable.
func (ev *Evaluator[T]) Eval(e Expr) T {
	if r, ok := ev.memo[e]; ok {
		return r
	}
	a := ev.alg
	var r T
	switch e.op {
	case OpConst:
		r = a.Const(e.val)
	case OpVar:
		panic(fmt.Sprintf("sym: variable %s is not bound", e.name))
	case OpAdd:
		r = ev.Eval(e.args[0])
		for _, t := range e.args[1:] {
			r = a.Add(r, ev.Eval(t))
		}
	case OpMul:
		r = ev.Eval(e.args[0])
		for _, t := range e.args[1:] {
			r = a.Mul(r, ev.Eval(t))
		}
	case OpRecip:
		r = a.Recip(ev.Eval(e.args[0]))
	case OpSquare:
		r = a.Square(ev.Eval(e.args[0]))
	case OpSqrt:
		r = a.Sqrt(ev.Eval(e.args[0]))
	case OpSin:
		r = a.Sin(ev.Eval(e.args[0]))
	case OpCos:
		r = a.Cos(ev.Eval(e.args[0]))
	case OpExp:
		r = a.Exp(ev.Eval(e.args[0]))
	case OpLog:
		r = a.Log(ev.Eval(e.args[0]))
	case OpTanh:
		r = a.Tanh(ev.Eval(e.args[0]))
	case OpAbs:
		r = a.Abs(ev.Eval(e.args[0]))
	case OpSign:
		r = a.Sign(ev.Eval(e.args[0]))
	case OpFloor:
		r = a.Floor(ev.Eval(e.args[0]))
	case OpAtan2:
		r = a.Atan2(ev.Eval(e.args[0]), ev.Eval(e.args[1]))
	default:
		panic(fmt.Sprintf("sym: cannot evaluate %s", e.op))
	}
	ev.memo[e] = r
	return r
}

// EvalVec evaluates each element of v.
func (ev *Evaluator[T]) EvalVec(v Vec) []T {
	out := make([]T, len(v))
	for i, e := range v {
		out[i] = ev.Eval(e)
	}
	return out
}

// EvalMat evaluates each element of m.
func (ev *Evaluator[T]) EvalMat(m [][]Expr) [][]T {
	out := make([][]T, len(m))
	for i, row := range m {
		out[i] = ev.EvalVec(row)
	}
	return out
}

// Float is the float64 Algebra.
type Float struct{}

func (Float) Const(c float64) float64    { return c }
func (Float) Add(a, b float64) float64   { return a + b }
func (Float) Mul(a, b float64) float64   { return a * b }
func (Float) Recip(a float64) float64    { return 1 / a }
func (Float) Square(a float64) float64   { return a * a }
func (Float) Sqrt(a float64) float64     { return math.Sqrt(a) }
func (Float) Sin(a float64) float64      { return math.Sin(a) }
func (Float) Cos(a float64) float64      { return math.Cos(a) }
func (Float) Exp(a float64) float64      { return math.Exp(a) }
func (Float) Log(a float64) float64      { return math.Log(a) }
func (Float) Tanh(a float64) float64     { return math.Tanh(a) }
func (Float) Abs(a float64) float64      { return math.Abs(a) }
func (Float) Floor(a float64) float64    { return math.Floor(a) }
func (Float) Atan2(y, x float64) float64 { return math.Atan2(y, x) }
func (Float) Sign(a float64) float64 {
	switch {
	case a > 0:
		return 1
	case a < 0:
		return -1
	}
	return 0
}

// Eval evaluates e in float64 with the variables bound as given.
func Eval(e Expr, bind map[*Node]float64) float64 {
	return NewEvaluator[float64](Float{}, bind).Eval(e)
}

// Bind returns a binding of the variables vars to the values x, for Eval and NewEvaluator.
// It adds to into if into is not nil. It panics if the lengths differ.
func Bind[T any](into map[*Node]T, vars Vec, x []T) map[*Node]T {
	if len(vars) != len(x) {
		panic(fmt.Sprintf("sym: binding %d variables to %d values", len(vars), len(x)))
	}
	if into == nil {
		into = make(map[*Node]T, len(vars))
	}
	for i, v := range vars {
		into[v] = x[i]
	}
	return into
}
