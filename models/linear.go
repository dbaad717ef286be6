package models

import . "github.com/nioc-gpu/nioc-gpu/graph/sym"

// LinearGaussian is a linear-Gaussian point mass, the special case in which the belief-tracking
// likelihood is exact: position and velocity driven by a force with additive noise, the
// position observed with additive noise, quadratic costs. It exists for tests and as the
// smallest example of a task.
type LinearGaussian struct{}

func init() { Register(LinearGaussian{}) }

const linDt = 0.1

func (LinearGaussian) Spec() Spec {
	return Spec{
		Name:        "linear",
		Description: "linear-Gaussian point mass to the origin (for tests; exact special case)",
		States:      []string{"pos", "vel"},
		Controls:    []string{"force"},
		StateNoise:  2, Obs: 1, ObsNoise: 1, Steps: 20,
		Params: []Param{
			{Name: "action_cost", Default: 0.1, Lo: 1e-3, Hi: 10, Doc: "c_a, weight of the squared force"},
			{Name: "motor_noise", Default: 0.05, Lo: 1e-3, Hi: 1, Doc: "additive state noise"},
			{Name: "obs_noise", Default: 0.2, Lo: 1e-2, Hi: 2, Doc: "additive position observation noise"},
		},
		X0:          []float64{1, 0},
		Temperature: 1e-3,
		// The motor noise's box reaches σ² = 1e-6 per step, the default jitter: at σ = 0.0015
		// that floor put the estimate at 0.0011 (1000 trials).
		Jitter:  1e-12,
		Planner: PlannerFull,
	}
}

func (LinearGaussian) Dynamics(x, u, v Vec, p Params) Vec {
	return Vec{
		Add(x[0], Scale(linDt, x[1]), Mul(p["motor_noise"], v[0])),
		Add(x[1], Scale(linDt, u[0]), Mul(p["motor_noise"], v[1])),
	}
}

func (LinearGaussian) Observation(x, w Vec, p Params) Vec {
	return Vec{Add(x[0], Mul(p["obs_noise"], w[0]))}
}

func (LinearGaussian) Cost(x, u Vec, p Params) Expr {
	return Add(Scale(0.5*linDt, SumSq(x)), Mul(C(0.5), p["action_cost"], Square(u[0])))
}

func (LinearGaussian) FinalCost(x Vec, p Params) Expr { return Scale(5, SumSq(x)) }
