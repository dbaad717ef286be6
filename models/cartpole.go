package models

import . "github.com/nioc-gpu/nioc-gpu/graph/sym"

// CartPole is gym's CartPole with a continuous force, signal-dependent force noise and noisy
// observations (paper App. I.3): move the cart from x = −1 to the origin while balancing the
// pole. State (x, θ, ẋ, ω); control: the force, applied as u + σ_m·u·v; Euler steps of gym's
// equations; the agent sees x + σ_o·(1, 1, 0.1, 0.1)⊙w. Cost c_a·u² per step and
// xᵀ·diag(1, 1, c_v, c_v)·x at the end. The paper's text says the cart moves from 0 to 1; this
// follows the reference implementation (start at −1, goal at the origin), as the issue asks.
type CartPole struct{}

func init() { Register(CartPole{}) }

const (
	cartGravity, cartMassCart, cartMassPole = 9.8, 1.0, 0.1
	cartTotalMass                           = cartMassCart + cartMassPole
	cartHalfLength                          = 0.5
	cartPoleMassLength                      = cartMassPole * cartHalfLength
	cartTau                                 = 0.02
)

func (CartPole) Spec() Spec {
	return Spec{
		Name:        "cartpole",
		Description: "cart-pole to the origin (gym CartPole, continuous force; paper App. I.3)",
		States:      []string{"x", "theta", "x_vel", "omega"},
		Controls:    []string{"force"},
		StateNoise:  1, Obs: 4, ObsNoise: 4, Steps: 200,
		Params: []Param{
			{Name: "action_cost", Default: 1e-3, Lo: 5e-4, Hi: 1, Doc: "c_a, weight of the squared force"},
			{Name: "velocity_cost", Default: 1e-2, Lo: 1e-2, Hi: 10, Doc: "c_v, weight of the final squared velocities"},
			{Name: "motor_noise", Default: 0.1, Lo: 0.2, Hi: 1.5, Doc: "σ_m, signal-dependent force noise"},
			{Name: "obs_noise", Default: 1, Lo: 1e-2, Hi: 10, Doc: "σ_o, observation noise"},
		},
		X0:          []float64{-1, 0, 0, 0},
		Temperature: 1e-3,
		Planner:     PlannerFull,
		// The force noise reaches the velocities as (0.018·σ_m·u)² a step, below the default
		// jitter of 1e-6 wherever the force is small (late in a trial, |u| ≲ 0.1); x and θ move
		// deterministically. Without policy noise in the data those steps vary less than the
		// floor says they may, and the likelihood lowers the motor noise to fit them: 10 % low
		// (−0.045 decades in 20 of 20 fully observed sets of an agent without policy noise,
		// ours or the reference's; −0.003 with 1e-9; docs/results.md, "Cart-pole's jitter").
		Jitter: 1e-9,
	}
}

func (CartPole) Dynamics(x, u, v Vec, p Params) Vec {
	force := Add(u[0], Mul(p["motor_noise"], u[0], v[0]))
	cos, sin := Cos(x[1]), Sin(x[1])
	temp := Scale(1/cartTotalMass, Add(force, Mul(C(cartPoleMassLength), Square(x[3]), sin)))
	thetaAcc := Div(Sub(Scale(cartGravity, sin), Mul(cos, temp)),
		Scale(cartHalfLength, Sub(C(4.0/3.0), Scale(cartMassPole/cartTotalMass, Square(cos)))))
	xAcc := Sub(temp, Mul(C(cartPoleMassLength/cartTotalMass), thetaAcc, cos))
	return Vec{
		Add(x[0], Scale(cartTau, x[2])),
		Add(x[1], Scale(cartTau, x[3])),
		Add(x[2], Scale(cartTau, xAcc)),
		Add(x[3], Scale(cartTau, thetaAcc)),
	}
}

func (CartPole) Observation(x, w Vec, p Params) Vec {
	scale := []float64{1, 1, 0.1, 0.1}
	y := make(Vec, 4)
	for i := range y {
		y[i] = Add(x[i], Mul(C(scale[i]), p["obs_noise"], w[i]))
	}
	return y
}

func (CartPole) Cost(x, u Vec, p Params) Expr { return Mul(p["action_cost"], Square(u[0])) }

func (CartPole) FinalCost(x Vec, p Params) Expr {
	return Add(Square(x[0]), Square(x[1]), Mul(p["velocity_cost"], Add(Square(x[2]), Square(x[3]))))
}
