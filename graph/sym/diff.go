package sym

import "fmt"

// Diff returns the derivative ∂e/∂v of e with respect to the variable v. It panics if v is not
// a variable. Derivatives of Floor and Sign are 0, of Abs sign(a).
func Diff(e, v Expr) Expr {
	if v.op != OpVar {
		panic(fmt.Sprintf("sym: Diff with respect to non-variable %s", v))
	}
	return differ{v: v, memo: make(map[*Node]*Node)}.diff(e)
}

type differ struct {
	v    Expr
	memo map[*Node]*Node
}

func (d differ) diff(e Expr) Expr {
	if !e.DependsOn(d.v) {
		return Zero
	}
	if r, ok := d.memo[e]; ok {
		return r
	}
	var r Expr
	a := e.args
	switch e.op {
	case OpVar:
		r = One // e depends on v, so e == v
	case OpAdd:
		terms := make([]Expr, len(a))
		for i, t := range a {
			terms[i] = d.diff(t)
		}
		r = Add(terms...)
	case OpMul:
		terms := make([]Expr, 0, len(a))
		for i := range a {
			da := d.diff(a[i])
			if da.IsZero() {
				continue
			}
			factors := make([]Expr, 0, len(a))
			factors = append(factors, da)
			factors = append(factors, a[:i]...)
			factors = append(factors, a[i+1:]...)
			terms = append(terms, Mul(factors...))
		}
		r = Add(terms...)
	case OpRecip:
		r = Mul(C(-1), d.diff(a[0]), Square(e))
	case OpSquare:
		r = Mul(C(2), a[0], d.diff(a[0]))
	case OpSqrt:
		r = Mul(C(0.5), d.diff(a[0]), Recip(e))
	case OpSin:
		r = Mul(Cos(a[0]), d.diff(a[0]))
	case OpCos:
		r = Mul(C(-1), Sin(a[0]), d.diff(a[0]))
	case OpExp:
		r = Mul(e, d.diff(a[0]))
	case OpLog:
		r = Mul(d.diff(a[0]), Recip(a[0]))
	case OpTanh:
		r = Mul(Sub(One, Square(e)), d.diff(a[0]))
	case OpAbs:
		r = Mul(Sign(a[0]), d.diff(a[0]))
	case OpSign, OpFloor:
		r = Zero
	case OpAtan2:
		y, x := a[0], a[1]
		num := Sub(Mul(x, d.diff(y)), Mul(y, d.diff(x)))
		r = Mul(num, Recip(Add(Square(x), Square(y))))
	default:
		panic(fmt.Sprintf("sym: no derivative for %s", e.op))
	}
	d.memo[e] = r
	return r
}

// Gradient returns ∂e/∂v_j for each variable in vars.
func Gradient(e Expr, vars Vec) Vec {
	g := make(Vec, len(vars))
	for j, v := range vars {
		g[j] = Diff(e, v)
	}
	return g
}

// Jacobian returns J[i][j] = ∂f_i/∂v_j.
func Jacobian(f Vec, vars Vec) [][]Expr {
	J := make([][]Expr, len(f))
	for i := range J {
		J[i] = make([]Expr, len(vars))
	}
	for j, v := range vars {
		d := differ{v: v, memo: make(map[*Node]*Node)}
		for i, fi := range f {
			J[i][j] = d.diff(fi)
		}
	}
	return J
}

// Hessian returns H[i][j] = ∂²e/∂a_i∂b_j.
func Hessian(e Expr, a, b Vec) [][]Expr {
	return Jacobian(Gradient(e, a), b)
}

// Subst returns e with the nodes in the map (variables, or any subexpression) replaced by the
// given expressions, simplified.
func Subst(e Expr, repl map[*Node]Expr) Expr {
	return substituter{repl: repl, memo: make(map[*Node]*Node)}.subst(e)
}

// SubstVec applies Subst to each element of v with a shared memo.
func SubstVec(v Vec, repl map[*Node]Expr) Vec {
	s := substituter{repl: repl, memo: make(map[*Node]*Node)}
	out := make(Vec, len(v))
	for i, e := range v {
		out[i] = s.subst(e)
	}
	return out
}

// SubstMat applies Subst to each element of m with a shared memo.
func SubstMat(m [][]Expr, repl map[*Node]Expr) [][]Expr {
	s := substituter{repl: repl, memo: make(map[*Node]*Node)}
	out := make([][]Expr, len(m))
	for i, row := range m {
		out[i] = make([]Expr, len(row))
		for j, e := range row {
			out[i][j] = s.subst(e)
		}
	}
	return out
}

type substituter struct {
	repl map[*Node]Expr
	memo map[*Node]*Node
}

func (s substituter) subst(e Expr) Expr {
	if len(e.deps) == 0 {
		return e
	}
	if r, ok := s.memo[e]; ok {
		return r
	}
	var r Expr
	if x, ok := s.repl[e]; ok {
		r = x
	} else if e.op == OpVar {
		r = e
	} else {
		args := make([]Expr, len(e.args))
		for i, a := range e.args {
			args[i] = s.subst(a)
		}
		r = rebuild(e.op, args)
	}
	s.memo[e] = r
	return r
}

// rebuild applies op to args through the simplifying constructors.
func rebuild(op Op, args []Expr) Expr {
	switch op {
	case OpAdd:
		return Add(args...)
	case OpMul:
		return Mul(args...)
	case OpRecip:
		return Recip(args[0])
	case OpSquare:
		return Square(args[0])
	case OpSqrt:
		return Sqrt(args[0])
	case OpSin:
		return Sin(args[0])
	case OpCos:
		return Cos(args[0])
	case OpExp:
		return Exp(args[0])
	case OpLog:
		return Log(args[0])
	case OpTanh:
		return Tanh(args[0])
	case OpAbs:
		return Abs(args[0])
	case OpSign:
		return Sign(args[0])
	case OpFloor:
		return Floor(args[0])
	case OpAtan2:
		return Atan2(args[0], args[1])
	}
	panic(fmt.Sprintf("sym: cannot rebuild %s", op))
}
