package taskfile

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/scanner"
	"go/token"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// An expression of a task file is Go expression syntax, parsed by go/parser: numbers, names,
// + - * / and parentheses, and calls of the functions below. Parts without variables are
// folded exactly, as the Go compiler folds the constant expressions of the built-in tasks
// (go/constant), and rounded to float64 once where they meet a variable; the rest becomes a
// sym expression, so every derivative is exact.

// source is one expression of the file.
type source struct {
	path string // where in the file: "dynamics[1]", "cost", "define.hand_x"
	text string
	expr ast.Expr
}

// value is a compiled expression: an exact constant (c) or a symbolic expression (e).
type value struct {
	c constant.Value
	e sym.Expr
}

func (v value) sym() sym.Expr {
	if v.e != nil {
		return v.e
	}
	return sym.C(toFloat(v.c))
}

func toFloat(c constant.Value) float64 {
	f, _ := constant.Float64Val(constant.ToFloat(c))
	return f
}

// piLiteral is math.Pi's literal, so that constant expressions with pi fold as in Go.
const piLiteral = "3.14159265358979323846264338327950288419716939937510582097494459"

// function is a function that expressions may call.
type function struct {
	args int
	f    func(a []sym.Expr) sym.Expr
}

var functions = map[string]function{
	"sin":    {1, func(a []sym.Expr) sym.Expr { return sym.Sin(a[0]) }},
	"cos":    {1, func(a []sym.Expr) sym.Expr { return sym.Cos(a[0]) }},
	"tan":    {1, func(a []sym.Expr) sym.Expr { return sym.Div(sym.Sin(a[0]), sym.Cos(a[0])) }},
	"exp":    {1, func(a []sym.Expr) sym.Expr { return sym.Exp(a[0]) }},
	"log":    {1, func(a []sym.Expr) sym.Expr { return sym.Log(a[0]) }},
	"sqrt":   {1, func(a []sym.Expr) sym.Expr { return sym.Sqrt(a[0]) }},
	"tanh":   {1, func(a []sym.Expr) sym.Expr { return sym.Tanh(a[0]) }},
	"square": {1, func(a []sym.Expr) sym.Expr { return sym.Square(a[0]) }},
	"wrap":   {1, func(a []sym.Expr) sym.Expr { return sym.Wrap(a[0]) }},
	"atan2":  {2, func(a []sym.Expr) sym.Expr { return sym.Atan2(a[0], a[1]) }},
	"pow":    {2, nil}, // pow(x, k) with a constant k: see compiler.pow
}

// nonSmooth are functions refused because their derivatives jump or vanish, which the iLQG
// solver and the likelihood, built on exact first and second derivatives, cannot use.
var nonSmooth = []string{"abs", "sign", "floor", "ceil", "round", "trunc", "min", "max", "mod", "step"}

var noiseName = regexp.MustCompile(`^[vw][0-9]+$`)

// compiler turns the file's expressions into sym expressions.
type compiler struct {
	doc    *document
	fset   *token.FileSet
	kinds  map[string]string         // every declared name → its kind ("state", "parameter", ...)
	consts map[string]constant.Value // resolved constants
	csrc   map[string]*source        // constants given as expressions, resolved when used
	defs   map[string]*source        // [define] expressions
	nv, nw int                       // motor and observation noise dimensions
	// resolving are the constants and definitions being compiled, each used in the one
	// before it: a name used again closes a cycle.
	resolving []string
}

// inConstant is where constants, x0 and the belief covariance are compiled.
const inConstant = "a constant (only numbers and other constants)"

// env is where an expression is compiled: its variables and the definitions compiled there.
type env struct {
	where string              // "the dynamics", "the observation", ...
	vars  map[string]sym.Expr // the states, controls, noises and parameters it may use
	defs  map[string]value
}

func newEnv(where string, vars map[string]sym.Expr) *env {
	return &env{where: where, vars: vars, defs: map[string]value{}}
}

// parse parses the expression text of the string value at path.
func (c *compiler) parse(path, text string) (*source, error) {
	// Newlines become spaces (same offsets), so that a long expression may break anywhere.
	src := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, text)
	e, err := parser.ParseExprFrom(c.fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			return nil, c.doc.errorAt(c.doc.offsetIn(path, text, list[0].Pos.Offset), "syntax error: %s", list[0].Msg)
		}
		return nil, c.doc.errorf(path, "syntax error: %v", err)
	}
	return &source{path: path, text: text, expr: e}, nil
}

// errorf returns an Error at node n of s.
func (c *compiler) errorf(s *source, n ast.Node, format string, args ...any) error {
	return c.errorAtPos(s, n.Pos(), format, args...)
}

// errorAtPos returns an Error at position pos of s.
func (c *compiler) errorAtPos(s *source, pos token.Pos, format string, args ...any) error {
	return c.doc.errorAt(c.doc.offsetIn(s.path, s.text, c.fset.Position(pos).Offset), format, args...)
}

// compile compiles s in env.
func (c *compiler) compile(s *source, en *env) (value, error) { return c.node(s, en, s.expr) }

func (c *compiler) node(s *source, en *env, n ast.Expr) (value, error) {
	switch n := n.(type) {
	case *ast.BasicLit:
		if n.Kind != token.INT && n.Kind != token.FLOAT {
			return value{}, c.errorf(s, n, "%s is not a number", n.Value)
		}
		return value{c: constant.ToFloat(constant.MakeFromLiteral(n.Value, n.Kind, 0))}, nil
	case *ast.Ident:
		return c.ident(s, en, n)
	case *ast.ParenExpr:
		return c.node(s, en, n.X)
	case *ast.UnaryExpr:
		x, err := c.node(s, en, n.X)
		switch {
		case err != nil:
			return value{}, err
		case n.Op == token.ADD:
			return x, nil
		case n.Op != token.SUB:
			return value{}, c.errorf(s, n, "operator %s is not supported: use + - * / and the functions", n.Op)
		case x.e == nil:
			return value{c: constant.UnaryOp(token.SUB, x.c, 0)}, nil
		}
		return value{e: sym.Neg(x.e)}, nil
	case *ast.BinaryExpr:
		return c.binary(s, en, n)
	case *ast.CallExpr:
		return c.call(s, en, n)
	case *ast.StarExpr:
		return value{}, c.errorf(s, n, "syntax error: * needs an operand on its left")
	}
	return value{}, c.errorf(s, n, "unsupported expression: only numbers, names, + - * /, parentheses and function calls are allowed")
}

func (c *compiler) binary(s *source, en *env, n *ast.BinaryExpr) (value, error) {
	switch n.Op {
	case token.ADD, token.SUB, token.MUL, token.QUO:
	case token.XOR:
		return value{}, c.errorAtPos(s, n.OpPos, "operator ^ is not a power: write square(x) or pow(x, k)")
	default:
		return value{}, c.errorAtPos(s, n.OpPos, "operator %s is not supported: use + - * / and the functions", n.Op)
	}
	x, err := c.node(s, en, n.X)
	if err != nil {
		return value{}, err
	}
	y, err := c.node(s, en, n.Y)
	if err != nil {
		return value{}, err
	}
	if x.e == nil && y.e == nil {
		if n.Op == token.QUO && constant.Sign(y.c) == 0 {
			return value{}, c.errorAtPos(s, n.OpPos, "division by zero")
		}
		return value{c: constant.BinaryOp(x.c, n.Op, y.c)}, nil
	}
	a, b := x.sym(), y.sym()
	switch n.Op {
	case token.ADD:
		return value{e: sym.Add(a, b)}, nil
	case token.SUB:
		return value{e: sym.Sub(a, b)}, nil
	case token.MUL:
		return value{e: sym.Mul(a, b)}, nil
	}
	return value{e: sym.Div(a, b)}, nil
}

func (c *compiler) call(s *source, en *env, n *ast.CallExpr) (value, error) {
	id, ok := n.Fun.(*ast.Ident)
	if !ok {
		return value{}, c.errorf(s, n.Fun, "unsupported call: call a function by its name, e.g. sin(x)")
	}
	if slices.Contains(nonSmooth, id.Name) {
		return value{}, c.errorf(s, id, "non-smooth function %s is not allowed: the iLQG solver and the likelihood need exact first and second derivatives; use a smooth form such as square(x) or sqrt(square(x) + 1e-6)", id.Name)
	}
	fn, ok := functions[id.Name]
	if !ok {
		return value{}, c.errorf(s, id, "unknown function %q%s; the functions are %s", id.Name, c.suggest(id.Name, nil), strings.Join(functionNames(), ", "))
	}
	if len(n.Args) != fn.args || n.Ellipsis.IsValid() {
		return value{}, c.errorf(s, id, "%s takes %d argument(s), got %d", id.Name, fn.args, len(n.Args))
	}
	args := make([]value, len(n.Args))
	for i, a := range n.Args {
		var err error
		if args[i], err = c.node(s, en, a); err != nil {
			return value{}, err
		}
	}
	var out sym.Expr
	if id.Name == "pow" {
		if args[1].e != nil {
			return value{}, c.errorf(s, n.Args[1], "pow needs a constant exponent")
		}
		out = pow(args[0].sym(), toFloat(args[1].c))
	} else {
		a := make([]sym.Expr, len(args))
		for i, v := range args {
			a[i] = v.sym()
		}
		out = fn.f(a)
	}
	if !out.IsConst() {
		return value{e: out}, nil
	}
	if v := out.Value(); !math.IsNaN(v) && !math.IsInf(v, 0) {
		return value{c: constant.MakeFloat64(v)}, nil
	}
	return value{}, c.errorf(s, n, "%s of these constants is not a finite number", id.Name)
}

// pow returns xᵏ: by multiplications for an integer k, sqrt for k = ½, else exp(k·log x).
func pow(x sym.Expr, k float64) sym.Expr {
	switch {
	case k == math.Trunc(k) && math.Abs(k) <= 64:
		if k < 0 {
			return sym.Recip(sym.Pow(x, int(-k)))
		}
		return sym.Pow(x, int(k))
	case k == 0.5:
		return sym.Sqrt(x)
	}
	return sym.Exp(sym.Scale(k, sym.Log(x)))
}

func (c *compiler) ident(s *source, en *env, id *ast.Ident) (value, error) {
	name := id.Name
	if e, ok := en.vars[name]; ok {
		return value{e: e}, nil
	}
	if _, ok := c.consts[name]; ok || c.csrc[name] != nil {
		return c.constant(name, s, id)
	}
	if c.defs[name] != nil {
		return c.definition(name, en, s, id)
	}
	if kind, ok := c.kinds[name]; ok {
		return value{}, c.errorf(s, id, "%s %s cannot appear in %s", kind, name, en.where)
	}
	if _, ok := functions[name]; ok || slices.Contains(nonSmooth, name) {
		return value{}, c.errorf(s, id, "%s is a function: call it, e.g. %s(x)", name, name)
	}
	if noiseName.MatchString(name) {
		kind, dim := "motor noise", c.nv
		if name[0] == 'w' {
			kind, dim = "observation noise", c.nw
		}
		return value{}, c.errorf(s, id, "there is no %s %s: the file declares %d, %c1..%c%d", kind, name, dim, name[0], name[0], dim)
	}
	return value{}, c.errorf(s, id, "unknown symbol %q%s", name, c.suggest(name, en))
}

// definition compiles definition name in en, used at id of s (nil for none).
func (c *compiler) definition(name string, en *env, s *source, id *ast.Ident) (value, error) {
	if v, ok := en.defs[name]; ok {
		return v, nil
	}
	if err := c.enter(name, s, id); err != nil {
		return value{}, err
	}
	defer c.leave()
	v, err := c.compile(c.defs[name], en)
	if err != nil {
		return value{}, err
	}
	en.defs[name] = v
	return v, nil
}

// constant resolves constant name, used at id of s (nil for none).
func (c *compiler) constant(name string, s *source, id *ast.Ident) (value, error) {
	if v, ok := c.consts[name]; ok {
		return value{c: v}, nil
	}
	if err := c.enter(name, s, id); err != nil {
		return value{}, err
	}
	defer c.leave()
	src := c.csrc[name]
	v, err := c.compile(src, newEnv(inConstant, nil))
	if err != nil {
		return value{}, err
	}
	c.consts[name] = v.c
	return v, nil
}

// enter records that the constant or definition name, used at id of s, is being compiled. If
// it already is, name is defined through itself: enter returns an error at id naming the
// cycle in the order of use, e.g. "a → b → a".
func (c *compiler) enter(name string, s *source, id *ast.Ident) error {
	i := slices.Index(c.resolving, name)
	switch {
	case i < 0:
		c.resolving = append(c.resolving, name)
		return nil
	case i == len(c.resolving)-1 && c.kinds[name] == "constant":
		return c.errorf(s, id, "constant %s is defined through itself", name)
	case i == len(c.resolving)-1:
		return c.errorf(s, id, "definition %s refers to itself", name)
	}
	cycle := append(slices.Clone(c.resolving[i:]), name)
	kinds := map[string]bool{}
	for _, n := range cycle {
		kinds[c.kinds[n]] = true
	}
	what := "definitions"
	switch {
	case len(kinds) > 1:
		what = "constants and definitions"
	case kinds["constant"]:
		what = "constants"
	}
	return c.errorf(s, id, "%s refer to each other in a cycle: %s", what, strings.Join(cycle, " → "))
}

// leave undoes the last enter.
func (c *compiler) leave() { c.resolving = c.resolving[:len(c.resolving)-1] }

// suggest returns ` (did you mean "x"?)` for the known name closest to name, if one is close.
func (c *compiler) suggest(name string, en *env) string {
	var names []string
	for n := range c.kinds {
		names = append(names, n)
	}
	if en == nil {
		names = functionNames()
	}
	best, bestD := "", 3
	sort.Strings(names)
	for _, n := range names {
		if d := editDistance(name, n); d < bestD && d <= len(n)/2 {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func functionNames() []string {
	names := make([]string, 0, len(functions))
	for n := range functions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
