package models

import (
	"fmt"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// Atan2Term is an atan2 inside an observation: h_Obs(x, 0) depends on it as Coef·Angle(x) plus
// terms without it. Angle's value jumps by 2π where the point (its x, its y) crosses the
// negative x axis, its branch cut, and h_Obs jumps by Coef·2π with it. The likelihood compares
// the observation of the state with that of the agent's belief, h(x) − h(b), and takes the
// atan2 terms' difference modulo 2π, so that the branch cut does not kick the belief
// (docs/method.md, "Angles in the observation"; likelihood.Options.RawAngles for the paper's
// innovation).
type Atan2Term struct {
	Obs   int      // the observation component
	Coef  float64  // ∂h_Obs/∂Angle, a constant
	Angle sym.Expr // the atan2, a function of the state and θ
}

// atan2Terms returns the atan2 nodes of each component of h (in w = 0) that the component
// depends on linearly, with their coefficients. One it depends on otherwise is left out: a
// sine or cosine of a bearing has no branch cut, and the jump of a product of one with the
// state is not a constant to take out.
func atan2Terms(h sym.Vec) []Atan2Term {
	var out []Atan2Term
	for i, e := range h {
		for _, a := range atan2Nodes(e) {
			z := sym.NewVar(fmt.Sprintf("atan2#%d", a.ID()))
			c := sym.Diff(sym.Subst(e, map[*sym.Node]sym.Expr{a: z}), z)
			if c.IsConst() && !c.IsZero() {
				out = append(out, Atan2Term{Obs: i, Coef: c.Value(), Angle: a})
			}
		}
	}
	return out
}

// atan2Nodes returns the distinct atan2 nodes of e, outermost first.
func atan2Nodes(e sym.Expr) []*sym.Node {
	var out []*sym.Node
	seen := map[*sym.Node]bool{}
	var walk func(n *sym.Node)
	walk = func(n *sym.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.Op() == sym.OpAtan2 {
			out = append(out, n)
			return
		}
		for _, a := range n.Args() {
			walk(a)
		}
	}
	walk(e)
	return out
}
