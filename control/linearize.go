// Package control is the agent's forward problem on computation graphs: linearization of a
// model, the iLQG backward passes (fully observable with signal-dependent noise, Todorov 2005;
// partially observable, Li & Todorov 2007), Kalman gains, the maximum-causal-entropy policy,
// the iterative solvers, and simulation of an agent acting on an EKF belief.
//
// Everything is built from graph.S batched scalars: one graph evaluates a whole batch of
// problems (parameter vectors, trials, line-search step sizes) at once. Time loops are
// unrolled while the graph is built (GoMLX v0.26 has no loops); the iterations of the iLQG
// solvers run in Go, each one a run of a compiled graph.
package control

import (
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Point evaluates a model and its derivatives at one state x and control u inside a graph
// (paper Sec. 2.2; Li 2006). It is lazy: only the quantities asked for become graph
// operations, and subexpressions shared between them are computed once. The noises are zero
// unless Dynamics or Observation is given them.
type Point struct {
	s  *models.Symbolic
	ev *graph.Evaluator

	f0, h0, q, r, atan2            graph.Vec
	a, b, v, fo, w, cq, cr, cp, fq graph.Mat
	cx, cu, d                      []graph.Mat
	finalQ                         graph.Mat
	finalq                         graph.Vec
}

// At returns the model at state x and control u (u may be nil where only state functions are
// needed), with parameters theta in natural units, one per model parameter.
func At(s *models.Symbolic, theta, x, u graph.Vec) *Point {
	bind := sym.Bind(nil, s.Theta, theta)
	sym.Bind(bind, s.X, x)
	if u != nil {
		sym.Bind(bind, s.U, u)
	}
	return &Point{s: s, ev: graph.NewEvaluator(bind)}
}

func (p *Point) vec(v sym.Vec) graph.Vec { return graph.Vec(p.ev.EvalVec(v)) }
func (p *Point) mat(m [][]sym.Expr) graph.Mat {
	out := graph.Mat(p.ev.EvalMat(m))
	if len(m) > 0 && len(m[0]) == 0 { // keep 0-column matrices well formed
		for i := range out {
			out[i] = []graph.S{}
		}
	}
	return out
}
func (p *Point) mats(ms [][][]sym.Expr) []graph.Mat {
	out := make([]graph.Mat, len(ms))
	for j, m := range ms {
		out[j] = p.mat(m)
	}
	return out
}

func lazyVec(cache *graph.Vec, f func() graph.Vec) graph.Vec {
	if *cache == nil {
		*cache = f()
	}
	return *cache
}

func lazyMat(cache *graph.Mat, f func() graph.Mat) graph.Mat {
	if *cache == nil {
		*cache = f()
	}
	return *cache
}

// F0 returns f(x, u, 0).
func (p *Point) F0() graph.Vec { return lazyVec(&p.f0, func() graph.Vec { return p.vec(p.s.F0) }) }

// A returns ∂f/∂x (n×n).
func (p *Point) A() graph.Mat { return lazyMat(&p.a, func() graph.Mat { return p.mat(p.s.A) }) }

// B returns ∂f/∂u (n×k).
func (p *Point) B() graph.Mat { return lazyMat(&p.b, func() graph.Mat { return p.mat(p.s.B) }) }

// V returns ∂f/∂v at v = 0 (n×nv): column j is how noise v_j enters.
func (p *Point) V() graph.Mat { return lazyMat(&p.v, func() graph.Mat { return p.mat(p.s.Vn) }) }

// Cx returns ∂V_j/∂x for each noise j (n×n each): state-dependent noise.
func (p *Point) Cx() []graph.Mat {
	if p.cx == nil {
		p.cx = p.mats(p.s.Cx)
	}
	return p.cx
}

// Cu returns ∂V_j/∂u for each noise j (n×k each): control-dependent noise.
func (p *Point) Cu() []graph.Mat {
	if p.cu == nil {
		p.cu = p.mats(p.s.Cu)
	}
	return p.cu
}

// H0 returns h(x, 0).
func (p *Point) H0() graph.Vec { return lazyVec(&p.h0, func() graph.Vec { return p.vec(p.s.H0) }) }

// Atan2 returns the values of the observation's atan2 terms (models.Symbolic.Atan2), in order.
func (p *Point) Atan2() graph.Vec {
	return lazyVec(&p.atan2, func() graph.Vec {
		angles := make(sym.Vec, len(p.s.Atan2))
		for i, t := range p.s.Atan2 {
			angles[i] = t.Angle
		}
		return p.vec(angles)
	})
}

// F returns ∂h/∂x (m×n).
func (p *Point) F() graph.Mat { return lazyMat(&p.fo, func() graph.Mat { return p.mat(p.s.Fo) }) }

// W returns ∂h/∂w at w = 0 (m×nw).
func (p *Point) W() graph.Mat { return lazyMat(&p.w, func() graph.Mat { return p.mat(p.s.Wn) }) }

// D returns ∂W_j/∂x for each observation noise j (m×n each): state-dependent observation noise.
func (p *Point) D() []graph.Mat {
	if p.d == nil {
		p.d = p.mats(p.s.D)
	}
	return p.d
}

// Cost returns the running cost c(x, u).
func (p *Point) Cost() graph.S { return p.ev.Eval(p.s.Cost) }

// Q returns ∂²c/∂x² (n×n).
func (p *Point) Q() graph.Mat { return lazyMat(&p.cq, func() graph.Mat { return p.mat(p.s.CQ) }) }

// Qv returns ∂c/∂x.
func (p *Point) Qv() graph.Vec { return lazyVec(&p.q, func() graph.Vec { return p.vec(p.s.Cq) }) }

// R returns ∂²c/∂u² (k×k).
func (p *Point) R() graph.Mat { return lazyMat(&p.cr, func() graph.Mat { return p.mat(p.s.CR) }) }

// Rv returns ∂c/∂u.
func (p *Point) Rv() graph.Vec { return lazyVec(&p.r, func() graph.Vec { return p.vec(p.s.Cr) }) }

// P returns ∂²c/∂u∂x (k×n).
func (p *Point) P() graph.Mat { return lazyMat(&p.cp, func() graph.Mat { return p.mat(p.s.CP) }) }

// FinalCost returns c_T(x).
func (p *Point) FinalCost() graph.S { return p.ev.Eval(p.s.Final) }

// FinalQ returns ∂²c_T/∂x² (n×n).
func (p *Point) FinalQ() graph.Mat {
	return lazyMat(&p.finalQ, func() graph.Mat { return p.mat(p.s.FinalQ) })
}

// Finalq returns ∂c_T/∂x.
func (p *Point) Finalq() graph.Vec {
	return lazyVec(&p.finalq, func() graph.Vec { return p.vec(p.s.Finalq) })
}

// Dynamics returns f(x, u, v) for the given state noise v. A Point takes one noise value.
func (p *Point) Dynamics(v graph.Vec) graph.Vec {
	for i, vi := range p.s.V {
		p.ev.Bind(vi, v[i])
	}
	return p.vec(p.s.Fv)
}

// Observation returns h(x, w) for the given observation noise w. A Point takes one noise
// value.
func (p *Point) Observation(w graph.Vec) graph.Vec {
	for i, wi := range p.s.W {
		p.ev.Bind(wi, w[i])
	}
	return p.vec(p.s.Hw)
}

// Trajectory is a model linearized along a trajectory: Steps[t] at (x_t, u_t) for
// t = 0..T−1 and Final at x_T.
type Trajectory struct {
	Steps []*Point
	Final *Point
}

// Linearize returns the model at each (X[t], U[t]) of a trajectory with len(X) = len(U)+1
// (paper Sec. 3.3 when the trajectory is data, Sec. 2.2 when it is the iLQG nominal).
func Linearize(s *models.Symbolic, theta graph.Vec, X, U []graph.Vec) *Trajectory {
	if len(X) != len(U)+1 {
		panic("control: Linearize needs one more state than controls")
	}
	tr := &Trajectory{Steps: make([]*Point, len(U))}
	for t := range U {
		tr.Steps[t] = At(s, theta, X[t], U[t])
	}
	tr.Final = At(s, theta, X[len(U)], nil)
	return tr
}
