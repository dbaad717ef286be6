package models

import . "github.com/nioc-gpu/nioc-gpu/graph/sym"

// LightDark is the light-dark domain of Platt et al. (2010) as adapted in paper App. I.4: a
// point in the plane moves by its velocity controls with signal-dependent noise; the agent's
// position observations are noisy with a standard deviation σ·√(½(x₁−5)² + 10⁻⁶) that is
// smallest near the light at x₁ = 5. Cost ½|u|² + 0.01·c·(x₁−5)² per step (c a preference for
// the light) and 200·|x − (p, 0)|² at the end. The initial belief covariance is 3·I.
type LightDark struct{}

func init() { Register(LightDark{}) }

func (LightDark) Spec() Spec {
	return Spec{
		Name:        "lightdark",
		Description: "light-dark domain (Platt et al. 2010; paper Sec. 4.4, App. I.4)",
		States:      []string{"x", "y"},
		Controls:    []string{"vx", "vy"},
		StateNoise:  2, Obs: 2, ObsNoise: 2, Steps: 50,
		Params: []Param{
			{Name: "target_x", Default: 0, Lo: -1, Hi: 1, Scale: LinearScale, Signed: true, Doc: "p, horizontal target position"},
			{Name: "light_cost", Default: 0, Lo: 1e-2, Hi: 1, Doc: "c, preference for being near the light"},
			{Name: "sigma", Default: 0.2, Lo: 1e-2, Hi: 1, Doc: "σ, perceptual uncertainty away from the light"},
		},
		X0:          []float64{2, 2},
		BeliefCov:   [][]float64{{3, 0}, {0, 3}},
		Temperature: 1e-5,
		Planner:     PlannerPartial,
	}
}

func (LightDark) Dynamics(x, u, v Vec, p Params) Vec {
	return Vec{Add(x[0], u[0], Mul(C(0.1), u[0], v[0])), Add(x[1], u[1], Mul(C(0.1), u[1], v[1]))}
}

func (LightDark) Observation(x, w Vec, p Params) Vec {
	std := Mul(p["sigma"], Sqrt(Add(Scale(0.5, Square(Sub(x[0], C(5)))), C(1e-6))))
	return Vec{Add(x[0], Mul(std, w[0])), Add(x[1], Mul(std, w[1]))}
}

func (LightDark) Cost(x, u Vec, p Params) Expr {
	return Add(Scale(0.5, SumSq(u)), Mul(C(0.01), p["light_cost"], Square(Sub(x[0], C(5)))))
}

func (LightDark) FinalCost(x Vec, p Params) Expr {
	return Scale(200, Add(Square(Sub(x[0], p["target_x"])), Square(x[1])))
}
