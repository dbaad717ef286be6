package likelihood

import (
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// DefaultGaussNewtonIters is the number of Gauss–Newton steps EstimateControl takes for
// models whose noise-free dynamics are not affine in the controls (one step is exact when
// they are).
const DefaultGaussNewtonIters = 10

// EstimateControl returns the control that best explains the step from x to xnext under the
// noise-free dynamics, û = argmin_u |xnext − f(x, u, 0)|² (paper App. G), by Gauss–Newton from
// u = 0: u ← u + (BᵀB)⁻¹Bᵀ(xnext − f(x, u, 0)) with B = ∂f/∂u. Estimated controls serve only
// as linearization points: our likelihood never treats them as observed; the MCE baseline
// does.
func EstimateControl(s *models.Symbolic, theta, x, xnext graph.Vec, iters int) graph.Vec {
	if s.AffineInControls {
		iters = 1
	}
	u := make(graph.Vec, len(s.Spec.Controls))
	for range iters {
		p := control.At(s, theta, x, u)
		B := p.B()
		residual := graph.VecSub(xnext, p.F0())
		step := graph.SPDSolve(graph.TMatMul(B, B), graph.Col(graph.TMatVec(B, residual))).ColVec(0)
		u = graph.VecAdd(u, step)
	}
	return u
}
