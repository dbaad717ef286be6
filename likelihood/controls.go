package likelihood

import (
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// DefaultGaussNewtonIters is the number of Gauss–Newton steps EstimateControls takes for
// models whose noise-free dynamics are not affine in the controls (one step is exact when
// they are).
const DefaultGaussNewtonIters = 10

// EstimateControls returns, for each step of an observed trajectory X (T+1 states), the
// controls that best explain x_{t+1} from x_t under the noise-free dynamics,
// û_t = argmin_u |x_{t+1} − f(x_t, u, 0)|² (paper App. G), by Gauss–Newton from u = 0:
// u ← u + (BᵀB)⁻¹Bᵀ(x_{t+1} − f(x_t, u, 0)) with B = ∂f/∂u. They serve only as linearization
// points: our likelihood never treats them as observed; the MCE baseline does.
func EstimateControls(s *models.Symbolic, theta graph.Vec, X []graph.Vec, iters int) []graph.Vec {
	if s.AffineInControls {
		iters = 1
	}
	k := len(s.Spec.Controls)
	U := make([]graph.Vec, len(X)-1)
	for t := range U {
		u := make(graph.Vec, k)
		for range iters {
			p := control.At(s, theta, X[t], u)
			B := p.B()
			residual := graph.VecSub(X[t+1], p.F0())
			step := graph.SPDSolve(graph.TMatMul(B, B), graph.Col(graph.TMatVec(B, residual))).ColVec(0)
			u = graph.VecAdd(u, step)
		}
		U[t] = u
	}
	return U
}
