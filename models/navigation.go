package models

import (
	"math"

	. "github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// Navigation is walking to a target (paper App. I.2). State (x, y, heading, speed); controls:
// turn rate and acceleration, each with signal-dependent noise σ_m·u_i·v_i; the agent sees the
// heading relative to the bearing of the target, the distance to it and its speed, each with
// noise σ_o. Cost c_a|u|² per step, |pos − k|² + c_v·speed² at the end.
type Navigation struct{}

func init() { Register(Navigation{}) }

const navDt = 0.1

var navTarget = []float64{1, 1}

func (Navigation) Spec() Spec {
	return Spec{
		Name:        "navigation",
		Description: "walking to a target with non-linear observations (paper App. I.2)",
		States:      []string{"x", "y", "heading", "speed"},
		Controls:    []string{"turn_rate", "acceleration"},
		StateNoise:  2, Obs: 3, ObsNoise: 3, Steps: 50,
		Params: []Param{
			{Name: "action_cost", Default: 1e-3, Lo: 1e-4, Hi: 1, Doc: "c_a, weight of the squared controls"},
			{Name: "velocity_cost", Default: 1e-3, Lo: 1e-4, Hi: 10, Doc: "c_v, weight of the final squared speed"},
			{Name: "motor_noise", Default: 0.5, Lo: 0.1, Hi: 1, Doc: "σ_m, signal-dependent control noise"},
			{Name: "obs_noise", Default: 0.1, Lo: 1e-2, Hi: 1, Doc: "σ_o, observation noise"},
		},
		X0:          []float64{0, 0, math.Pi / 2, 0},
		Temperature: 1e-6,
		Planner:     PlannerFull,
		// The position moves deterministically (no noise enters x and y), and where the
		// controls are small the signal-dependent noise vanishes, so the policy noise,
		// dt²·τ·H̃⁻¹ ≈ 1e-6 per step at the defaults, is all the heading and speed carry:
		// under the default jitter of 1e-6 the likelihood could not see it and put the fitted
		// temperature at its bound, the motor noise 6 standard errors off on our own agent's
		// fully observed data (docs/results.md, 2026-11-25).
		Jitter: 1e-8,
	}
}

func (Navigation) Dynamics(x, u, v Vec, p Params) Vec {
	turn := Add(u[0], Mul(p["motor_noise"], u[0], v[0]))
	accel := Add(u[1], Mul(p["motor_noise"], u[1], v[1]))
	return Vec{
		Add(x[0], Scale(navDt, Mul(Cos(x[2]), x[3]))),
		Add(x[1], Scale(navDt, Mul(Sin(x[2]), x[3]))),
		Add(x[2], Scale(navDt, turn)),
		Add(x[3], Scale(navDt, accel)),
	}
}

func (Navigation) Observation(x, w Vec, p Params) Vec {
	dx, dy := Sub(C(navTarget[0]), x[0]), Sub(C(navTarget[1]), x[1])
	y := Vec{Sub(x[2], Atan2(dy, dx)), Sqrt(Add(Square(dx), Square(dy))), x[3]}
	for i := range y {
		y[i] = Add(y[i], Mul(p["obs_noise"], w[i]))
	}
	return y
}

func (Navigation) Cost(x, u Vec, p Params) Expr { return Mul(p["action_cost"], SumSq(u)) }

func (Navigation) FinalCost(x Vec, p Params) Expr {
	return Add(SumSq(SubVec(x[:2], Consts(navTarget...))), Mul(p["velocity_cost"], Square(x[3])))
}
