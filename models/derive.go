package models

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// Symbolic is a model written out symbolically together with every derivative the solvers and
// the likelihood need, derived once. Variables: X (state), U (control), V (state noise),
// W (observation noise) and Theta (parameters in natural units, in Spec order). Noise-free
// quantities have the noise variables set to 0.
//
// With n states, k controls, nv state noises, m observations and nw observation noises, the
// linearization of paper Sec. 2.2 / Li (2006) around (x, u) is
//
//	f(x+δx, u+δu, v) ≈ f0 + A δx + B δu + Σ_j (V_j + Cx_j δx + Cu_j δu) v_j
//	h(x+δx, w)       ≈ h0 + F δx + Σ_j (W_j + D_j δx) w_j
//	c(x+δx, u+δu)    ≈ c + qᵀδx + rᵀδu + ½ δxᵀQδx + ½ δuᵀRδu + δuᵀPδx
//
// with V_j the j-th column of ∂f/∂v, Cx_j = ∂V_j/∂x (n×n) and Cu_j = ∂V_j/∂u (n×k), and
// W_j, D_j likewise for h.
type Symbolic struct {
	Model Model
	Spec  Spec

	X, U, V, W, Theta sym.Vec

	Fv sym.Vec      // f(x, u, v)
	F0 sym.Vec      // f(x, u, 0)
	A  [][]sym.Expr // ∂f/∂x at v = 0, n×n
	B  [][]sym.Expr // ∂f/∂u at v = 0, n×k
	Vn [][]sym.Expr // ∂f/∂v at v = 0, n×nv
	Cx [][][]sym.Expr
	Cu [][][]sym.Expr

	Hw sym.Vec      // h(x, w)
	H0 sym.Vec      // h(x, 0)
	Fo [][]sym.Expr // ∂h/∂x at w = 0, m×n
	Wn [][]sym.Expr // ∂h/∂w at w = 0, m×nw
	D  [][][]sym.Expr
	// Atan2 are the atan2 terms of h(x, 0), whose branch cuts the likelihood takes out of
	// the agent's innovation.
	Atan2 []Atan2Term

	Cost             sym.Expr
	Cq, Cr           sym.Vec      // ∂c/∂x, ∂c/∂u
	CQ, CR, CP       [][]sym.Expr // ∂²c/∂x², ∂²c/∂u², ∂²c/∂u∂x (k×n)
	Final            sym.Expr
	FinalQ           [][]sym.Expr
	Finalq           sym.Vec
	AffineInControls bool // f(x, u, 0) is affine in u (control estimation is then exact in one step)
}

var derived sync.Map // Model → *Symbolic

// Derive returns the symbolic form of m with its derivatives, computed once per model (a task
// read from a file is another model than a built-in task of the same name). It returns an
// error if the model's functions have the wrong dimensions or use an unknown parameter.
func Derive(m Model) (s *Symbolic, err error) {
	name := m.Spec().Name
	cache := reflect.TypeOf(m).Comparable()
	if cache {
		if v, ok := derived.Load(m); ok {
			return v.(*Symbolic), nil
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task %q: %v (an unknown parameter name in the model's formulas?)", name, r)
		}
	}()
	s, err = derive(m)
	if err != nil {
		return nil, err
	}
	if !cache {
		return s, nil
	}
	v, _ := derived.LoadOrStore(m, s)
	return v.(*Symbolic), nil
}

func derive(m Model) (*Symbolic, error) {
	spec := m.Spec()
	n, k := len(spec.States), len(spec.Controls)
	s := &Symbolic{
		Model: m, Spec: spec,
		X: sym.NewVars("x", n), U: sym.NewVars("u", k),
		V: sym.NewVars("v", spec.StateNoise), W: sym.NewVars("w", spec.ObsNoise),
		Theta: make(sym.Vec, len(spec.Params)),
	}
	params := Params{}
	for i, p := range spec.Params {
		s.Theta[i] = sym.NewVar(p.Name)
		params[p.Name] = s.Theta[i]
	}
	f := m.Dynamics(s.X, s.U, s.V, params)
	h := m.Observation(s.X, s.W, params)
	if len(f) != n {
		return nil, fmt.Errorf("task %q: dynamics returns %d values for %d states", spec.Name, len(f), n)
	}
	if len(h) != spec.Obs {
		return nil, fmt.Errorf("task %q: observation returns %d values but Spec.Obs is %d", spec.Name, len(h), spec.Obs)
	}
	vZero := zeroSubst(s.V)
	wZero := zeroSubst(s.W)

	s.Fv, s.Hw = f, h
	s.F0 = sym.SubstVec(f, vZero)
	s.A = sym.Jacobian(s.F0, s.X)
	s.B = sym.Jacobian(s.F0, s.U)
	dv := sym.Jacobian(f, s.V)
	s.Vn = sym.SubstMat(dv, vZero)
	s.Cx, s.Cu = noiseSlopes(s.Vn, s.X, s.U)

	s.H0 = sym.SubstVec(h, wZero)
	s.Fo = sym.Jacobian(s.H0, s.X)
	s.Wn = sym.SubstMat(sym.Jacobian(h, s.W), wZero)
	s.D, _ = noiseSlopes(s.Wn, s.X, nil)
	s.Atan2 = atan2Terms(s.H0)

	s.Cost = m.Cost(s.X, s.U, params)
	s.Cq, s.Cr = sym.Gradient(s.Cost, s.X), sym.Gradient(s.Cost, s.U)
	s.CQ = sym.Jacobian(s.Cq, s.X)
	s.CR = sym.Jacobian(s.Cr, s.U)
	s.CP = sym.Jacobian(s.Cr, s.X)
	s.Final = m.FinalCost(s.X, params)
	s.Finalq = sym.Gradient(s.Final, s.X)
	s.FinalQ = sym.Jacobian(s.Finalq, s.X)

	s.AffineInControls = true
	for _, row := range s.B {
		for _, e := range row {
			for _, u := range s.U {
				if e.DependsOn(u) {
					s.AffineInControls = false
				}
			}
		}
	}
	return s, nil
}

func zeroSubst(vars sym.Vec) map[*sym.Node]sym.Expr {
	m := make(map[*sym.Node]sym.Expr, len(vars))
	for _, v := range vars {
		m[v] = sym.Zero
	}
	return m
}

// noiseSlopes returns, for each column j of the noise matrix M (rows × noises), ∂M_j/∂x and
// ∂M_j/∂u (nil if u is nil).
func noiseSlopes(M [][]sym.Expr, x, u sym.Vec) (dx, du [][][]sym.Expr) {
	if len(M) == 0 {
		return nil, nil
	}
	noises := len(M[0])
	dx = make([][][]sym.Expr, noises)
	if u != nil {
		du = make([][][]sym.Expr, noises)
	}
	for j := range noises {
		col := make(sym.Vec, len(M))
		for i := range M {
			col[i] = M[i][j]
		}
		dx[j] = sym.Jacobian(col, x)
		if u != nil {
			du[j] = sym.Jacobian(col, u)
		}
	}
	return dx, du
}

// Uses reports whether any of the model's expressions depends on parameter i, restricted to
// the dynamics and costs when withObservation is false. A parameter that is not used cannot
// be identified (e.g. the observation noise of a fully observable agent).
func (s *Symbolic) Uses(i int, withObservation bool) bool {
	v := s.Theta[i]
	exprs := []sym.Expr{s.Cost, s.Final}
	exprs = append(exprs, s.F0...)
	for _, row := range s.Vn {
		exprs = append(exprs, row...)
	}
	if withObservation {
		exprs = append(exprs, s.H0...)
		for _, row := range s.Wn {
			exprs = append(exprs, row...)
		}
	}
	for _, e := range exprs {
		if e.DependsOn(v) {
			return true
		}
	}
	return false
}
