package models

import (
	"math"

	. "github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// Pendulum is gym's Pendulum swing-up with finite horizon, signal-dependent torque noise and
// noisy observations (paper App. I.3). State (θ, ω) with θ = 0 upright; control: the torque.
// x' = x + dt·(ω, 3g/(2l)·sin θ + b·u) + dt·σ_m·(0.01·b, b)·u·v with b = 3/(m·l²); the agent
// sees (cos θ, sin θ, ω) + σ_o·w. Cost dt·c_a·u² per step and wrap(θ)² + c_v·ω² at the end.
type Pendulum struct{}

func init() { Register(Pendulum{}) }

const (
	pendM, pendL, pendG, pendDt = 1.0, 1.0, 9.8, 0.01
	pendB                       = 3 / (pendM * pendL * pendL)
)

func (Pendulum) Spec() Spec {
	return Spec{
		Name:        "pendulum",
		Description: "pendulum swing-up (gym Pendulum; paper App. I.3)",
		States:      []string{"theta", "omega"},
		Controls:    []string{"torque"},
		StateNoise:  1, Obs: 3, ObsNoise: 3, Steps: 50,
		Params: []Param{
			{Name: "action_cost", Default: 1e-3, Lo: 1e-3, Hi: 1e-1, Doc: "c_a, weight of the squared torque"},
			{Name: "velocity_cost", Default: 1e-2, Lo: 1e-3, Hi: 1e-1, Doc: "c_v, weight of the final squared angular velocity"},
			{Name: "motor_noise", Default: 0.1, Lo: 0.1, Hi: 2, Doc: "σ_m, signal-dependent torque noise"},
			{Name: "obs_noise", Default: 1, Lo: 1e-2, Hi: 10, Doc: "σ_o, observation noise"},
		},
		X0:          []float64{math.Pi, 0},
		Temperature: 1e-3,
		Planner:     PlannerFull,
		// The angle carries 1 % of the torque noise, a variance per step of about
		// (3e-4·σ_m·u)², below the default jitter of 1e-6 wherever the torque is small: with that
		// floor the fit put the action cost 12 % high (17 standard errors at 500 trials).
		Jitter: 1e-10,
	}
}

func (Pendulum) Dynamics(x, u, v Vec, p Params) Vec {
	noise := Mul(p["motor_noise"], u[0], v[0])
	acc := Add(Scale(3*pendG/(2*pendL), Sin(x[0])), Scale(pendB, u[0]))
	return Vec{
		Add(x[0], Scale(pendDt, x[1]), Scale(pendDt*0.01*pendB, noise)),
		Add(x[1], Scale(pendDt, acc), Scale(pendDt*pendB, noise)),
	}
}

func (Pendulum) Observation(x, w Vec, p Params) Vec {
	y := Vec{Cos(x[0]), Sin(x[0]), x[1]}
	for i := range y {
		y[i] = Add(y[i], Mul(p["obs_noise"], w[i]))
	}
	return y
}

func (Pendulum) Cost(x, u Vec, p Params) Expr { return Mul(C(pendDt), p["action_cost"], Square(u[0])) }

func (Pendulum) FinalCost(x Vec, p Params) Expr {
	return Add(Square(Wrap(x[0])), Mul(p["velocity_cost"], Square(x[1])))
}
