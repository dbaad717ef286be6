package control

import "github.com/nioc-gpu/nioc-gpu/graph"

// RegularizationEps is the smallest eigenvalue the control Hessian H is raised to before it is
// inverted (Li 2006, Sec. 5.4.1; the reference implementation's value).
const RegularizationEps = 1e-8

// Gains is an affine control law around a nominal trajectory (x̄, ū): at step t
// u = ū_t + l_t + L_t·(x − x̄_t), where x is the state or, for a partially observable agent,
// its belief mean. H_t is the (regularized) Hessian of the Q-function in u; the
// maximum-causal-entropy policy adds noise with covariance temperature·H_t⁻¹.
type Gains struct {
	L []graph.Mat // k×n
	l []graph.Vec // k
	H []graph.Mat // k×k, symmetric positive definite
}

// Gain returns L_t.
func (g Gains) Gain(t int) graph.Mat { return g.L[t] }

// Offset returns l_t.
func (g Gains) Offset(t int) graph.Vec { return g.l[t] }

// Hessian returns H_t.
func (g Gains) Hessian(t int) graph.Mat { return g.H[t] }

// noiseSum returns Σ_j X_jᵀ·S·Y_j.
func noiseSum(X []graph.Mat, S graph.Mat, Y []graph.Mat) graph.Mat {
	var out graph.Mat
	for j := range X {
		term := graph.MatMul(graph.TMatMul(X[j], S), Y[j])
		if out == nil {
			out = term
		} else {
			out = graph.MatAdd(out, term)
		}
	}
	return out
}

// noiseQuad returns Σ_j X_jᵀ·S·X_j, exactly symmetric.
func noiseQuad(X []graph.Mat, S graph.Mat) graph.Mat {
	var out graph.Mat
	for j := range X {
		term := graph.Sandwich(graph.T(X[j]), S)
		if out == nil {
			out = term
		} else {
			out = graph.MatAdd(out, term)
		}
	}
	return out
}

// noiseVec returns Σ_j X_jᵀ·S·v_j with v_j column j of V.
func noiseVec(X []graph.Mat, S graph.Mat, V graph.Mat) graph.Vec {
	var out graph.Vec
	for j := range X {
		term := graph.TMatVec(X[j], graph.MatVec(S, V.ColVec(j)))
		if out == nil {
			out = term
		} else {
			out = graph.VecAdd(out, term)
		}
	}
	return out
}

func addIf(A, B graph.Mat) graph.Mat {
	if B == nil {
		return A
	}
	return graph.MatAdd(A, B)
}

func addVecIf(a, b graph.Vec) graph.Vec {
	if b == nil {
		return a
	}
	return graph.VecAdd(a, b)
}

// symPlusT returns A + Aᵀ.
func symPlusT(A graph.Mat) graph.Mat { return graph.MatAdd(A, graph.T(A)) }

// BackwardPass computes the locally optimal affine control law of the linearized problem with
// signal-dependent noise (the "generalized LQR" of Todorov 2005; fully observable iLQG,
// Todorov & Li 2005). With value function ½δxᵀSδx + δxᵀs after step t,
//
//	H = R + BᵀSB + Σ_j Cu_jᵀS·Cu_j,   G = P + BᵀSA + Σ_j Cu_jᵀS·Cx_j,   g = r + Bᵀs + Σ_j Cu_jᵀS·V_j
//	L = −H̃⁻¹G,   l = −H̃⁻¹g,   H̃ = H with its smallest eigenvalue raised to eps
//	S ← Q + AᵀSA + LᵀHL + LᵀG + GᵀL + Σ_j Cx_jᵀS·Cx_j
//	s ← q + Aᵀs + Gᵀl + LᵀHl + Lᵀg + Σ_j Cx_jᵀS·V_j
//
// starting from S = Q_T, s = q_T.
func BackwardPass(tr *Trajectory, eps float64) Gains {
	lin := tr.flat()
	return GainsOf(lin.s, BackwardPassFlow(graph.Unrolled{}, lin, eps))
}

// backwardStep is one step of BackwardPass: the gains at the step of p and the value function
// (S, s) before it, from the value function after it.
func backwardStep(p *Point, S graph.Mat, s graph.Vec, eps float64) (L graph.Mat, l graph.Vec, Ht, Snext graph.Mat, snext graph.Vec) {
	A, B, V, Cx, Cu := p.A(), p.B(), p.V(), p.Cx(), p.Cu()
	H := addIf(graph.MatAdd(graph.Symmetrize(p.R()), graph.Sandwich(graph.T(B), S)), noiseQuad(Cu, S))
	G := addIf(graph.MatAdd(p.P(), graph.MatMul(graph.TMatMul(B, S), A)), noiseSum(Cu, S, Cx))
	g := addVecIf(graph.VecAdd(p.Rv(), graph.TMatVec(B, s)), noiseVec(Cu, S, V))
	L, l, Ht = solveGains(H, G, g, eps)

	Snext = graph.MatAdd(graph.Symmetrize(p.Q()), graph.Sandwich(graph.T(A), S))
	Snext = graph.MatAdd(Snext, graph.MatAdd(graph.Sandwich(graph.T(L), H), symPlusT(graph.TMatMul(L, G))))
	Snext = addIf(Snext, noiseQuad(Cx, S))
	snext = graph.VecAdd(p.Qv(), graph.TMatVec(A, s))
	snext = graph.VecAdd(snext, graph.VecAdd(graph.TMatVec(G, l), graph.TMatVec(L, graph.VecAdd(graph.MatVec(H, l), g))))
	snext = addVecIf(snext, noiseVec(Cx, S, V))
	return L, l, Ht, Snext, snext
}

// solveGains returns L = −H̃⁻¹G, l = −H̃⁻¹g and H̃, the symmetric H with its smallest
// eigenvalue raised to eps.
func solveGains(H, G graph.Mat, g graph.Vec, eps float64) (L graph.Mat, l graph.Vec, Ht graph.Mat) {
	Ht = graph.MinEigShift(graph.Symmetrize(H), eps)
	chol := graph.Chol(Ht)
	L = graph.MatScale(graph.C(-1), graph.CholSolve(chol, G))
	l = graph.VecScale(graph.C(-1), graph.CholSolve(chol, graph.Col(g)).ColVec(0))
	return L, l, Ht
}

// BackwardPassPartial computes the control law of partially observable iLQG (Li & Todorov
// 2007; Li 2006, Sec. 5.2), whose value function ½xᵀS_x x + ½bᵀS_b b + xᵀS_xb b + xᵀs_x + bᵀs_b
// depends on the state x and the belief b, which follows b' = (A − KF)b + KFx + Bu + K·(obs.
// noise) with the filter gains K. The control u = L b + l depends on the belief only:
//
//	H   = R + Bᵀ(S_x + S_b + S_xb + S_xbᵀ)B + Σ_j Cu_jᵀS_x Cu_j
//	G_x = P + Bᵀ(S_x + S_xbᵀ)A + Bᵀ(S_b + S_xb)KF + Σ_j Cu_jᵀS_x Cx_j,   G_b = Bᵀ(S_b + S_xb)(A − KF)
//	g   = r + Bᵀ(s_x + s_b) + Σ_j Cu_jᵀS_x V_j,   L = −H̃⁻¹(G_x + G_b),   l = −H̃⁻¹g
//	S_x  ← Q + AᵀS_x A + (KF)ᵀS_b KF + AᵀS_xb KF + (AᵀS_xb KF)ᵀ + Σ_j Cx_jᵀS_x Cx_j + Σ_j D_jᵀKᵀS_b K D_j
//	S_b  ← (A−KF)ᵀS_b(A−KF) + LᵀHL + LᵀG_b + G_bᵀL,   S_xb ← (KF)ᵀS_b(A−KF) + AᵀS_xb(A−KF) + G_xᵀL
//	s_x  ← q + Aᵀs_x + (KF)ᵀs_b + G_xᵀl + Σ_j Cx_jᵀS_x V_j + Σ_j D_jᵀKᵀS_b K W_j
//	s_b  ← (A−KF)ᵀs_b + Lᵀ(Hl + g) + G_bᵀl
//
// This follows the derivation; the reference implementation writes BᵀS_xb A where the
// derivation gives BᵀS_xbᵀA in G_x (the two agree when S_xb is symmetric).
//
// These are the paper's agent (models.ActThenSee). An agent that sees before it acts
// (models.SeeThenAct) updates after the step with the observation of the new state:
// b' = b⁻ + K(F(x' − b⁻) + ω(x')), b⁻ = A b + B u, K its filter-form gains, F and ω those of
// x_{t+1}. Its step is the update taken back through the value function (partialValue.updated)
// and then the step above with K = 0 (backwardPartialTimed).
func BackwardPassPartial(tr *Trajectory, K []graph.Mat, eps float64) Gains {
	lin := tr.flat()
	Kv := make([]*graph.Value, len(K))
	for t, k := range K {
		Kv[t] = graph.Values(graph.Flatten(k))[0]
	}
	return GainsOf(lin.s, BackwardPassPartialFlow(graph.Unrolled{}, lin, Kv, eps))
}

// partialValue is the value function of BackwardPassPartial after a step.
type partialValue struct {
	Sx, Sb, Sxb graph.Mat
	sx, sb      graph.Vec
}

// shifted returns the value function taken at x + d and b + d: a state and a belief that both
// land d away from where the linearization expects them (Linearized.Gaps). Its quadratic
// terms are unchanged, its linear ones gain s_x += (S_x + S_xb)·d, s_b += (S_b + S_xbᵀ)·d.
func (v partialValue) shifted(d graph.Vec) partialValue {
	v.sx = graph.VecAdd(v.sx, graph.MatVec(graph.MatAdd(v.Sx, v.Sxb), d))
	v.sb = graph.VecAdd(v.sb, graph.MatVec(graph.MatAdd(v.Sb, graph.T(v.Sxb)), d))
	return v
}

// updated returns the value function before the update of an agent that sees before it acts
// (models.SeeThenAct), from v after it: the agent's predicted belief b⁻ becomes
// b' = b⁻ + K·(F(x − b⁻) + ω) = J b⁻ + KF x + K ω with J = I − KF, the observation noise
// ω = W w + Σ_j D_j x w_j of the new state x (F, W, D at pn, the point of that state), so that
// E_ω v(x, b') is, in (x, b⁻),
//
//	S_x  ← S_x + (KF)ᵀS_b KF + S_xb KF + (S_xb KF)ᵀ + Σ_j D_jᵀKᵀS_b K D_j,   S_b ← JᵀS_b J
//	S_xb ← (KF)ᵀS_b J + S_xb J,   s_x ← s_x + (KF)ᵀs_b + Σ_j D_jᵀKᵀS_b K W_j,   s_b ← Jᵀs_b.
//
// BackwardPassPartial's step with a zero gain then takes it through the action and the
// prediction (x' = A x + B u + ξ, b⁻ = A b + B u). Against the paper's agent the observation
// term moves: there K F (x − b) and K D_j x enter with the current state before the dynamics
// (and S_x gains D_jᵀKᵀS_b K D_j at step t); here K F (x' − b⁻) and K D_j x' enter with the
// new state after them, with F, W, D of step t+1.
func (v partialValue) updated(K graph.Mat, pn *Point) partialValue {
	KF := graph.MatMul(K, pn.F())
	J := graph.MatSub(graph.Eye(len(KF)), KF)
	KtSbK := graph.Sandwich(graph.T(K), v.Sb)
	SxbKF := graph.MatMul(v.Sxb, KF)
	var next partialValue
	next.Sx = graph.MatAdd(v.Sx, graph.MatAdd(graph.Sandwich(graph.T(KF), v.Sb), symPlusT(SxbKF)))
	next.Sx = addIf(next.Sx, noiseQuad(pn.D(), KtSbK))
	next.Sb = graph.Sandwich(graph.T(J), v.Sb)
	next.Sxb = graph.MatMul(graph.MatAdd(graph.TMatMul(KF, v.Sb), v.Sxb), J)
	next.sx = addVecIf(graph.VecAdd(v.sx, graph.TMatVec(KF, v.sb)), noiseVec(pn.D(), KtSbK, pn.W()))
	next.sb = graph.TMatVec(J, v.sb)
	return next
}

// backwardPartialTimed is one step of BackwardPassPartial for either timing, from the value
// function v after it, with filter gain K. With pn nil (models.ActThenSee) it is
// backwardPartialStep with K; with pn the point of step t+1 (models.SeeThenAct), v is first
// taken back through the agent's update with the observation of x_{t+1} (v.updated), then
// through the step with no observation (a zero gain). gap (nil for none) shifts the value by
// the step's gap (Linearized.Gaps) before the step: the update sees the state and the
// belief deviations relative to x_{t+1}, which both land gap away from it.
func backwardPartialTimed(p, pn *Point, K graph.Mat, v partialValue, gap graph.Vec, eps float64) (L graph.Mat, l graph.Vec, Ht graph.Mat, next partialValue) {
	if pn != nil {
		v, K = v.updated(K, pn), graph.NewMat(len(K), len(K[0]))
	}
	if gap != nil {
		v = v.shifted(gap)
	}
	return backwardPartialStep(p, K, v, eps)
}

// backwardPartialStep is one step of BackwardPassPartial: the gains at the step of p with
// filter gain K, and the value function before it.
func backwardPartialStep(p *Point, K graph.Mat, v partialValue, eps float64) (L graph.Mat, l graph.Vec, Ht graph.Mat, next partialValue) {
	Sx, Sb, Sxb, sx, sb := v.Sx, v.Sb, v.Sxb, v.sx, v.sb
	A, B, V, Cx, Cu := p.A(), p.B(), p.V(), p.Cx(), p.Cu()
	W, D := p.W(), p.D()
	KF := graph.MatMul(K, p.F())
	AKF := graph.MatSub(A, KF)
	SbSxb := graph.MatAdd(Sb, Sxb)

	H := graph.MatAdd(graph.Symmetrize(p.R()), graph.Sandwich(graph.T(B), graph.MatAdd(graph.MatAdd(Sx, Sb), symPlusT(Sxb))))
	H = addIf(H, noiseQuad(Cu, Sx))
	g := addVecIf(graph.VecAdd(p.Rv(), graph.TMatVec(B, graph.VecAdd(sx, sb))), noiseVec(Cu, Sx, V))
	Gx := graph.MatAdd(p.P(), graph.MatMul(graph.TMatMul(B, graph.MatAdd(Sx, graph.T(Sxb))), A))
	Gx = graph.MatAdd(Gx, graph.MatMul(graph.TMatMul(B, SbSxb), KF))
	Gx = addIf(Gx, noiseSum(Cu, Sx, Cx))
	Gb := graph.MatMul(graph.TMatMul(B, SbSxb), AKF)
	L, l, Ht = solveGains(H, graph.MatAdd(Gx, Gb), g, eps)

	KtSbK := graph.Sandwich(graph.T(K), Sb)
	nextSx := graph.MatAdd(graph.Symmetrize(p.Q()), graph.Sandwich(graph.T(A), Sx))
	nextSx = graph.MatAdd(nextSx, graph.MatAdd(graph.Sandwich(graph.T(KF), Sb), symPlusT(graph.MatMul(graph.TMatMul(A, Sxb), KF))))
	nextSx = addIf(addIf(nextSx, noiseQuad(Cx, Sx)), noiseQuad(D, KtSbK))
	nextSb := graph.MatAdd(graph.Sandwich(graph.T(AKF), Sb), graph.MatAdd(graph.Sandwich(graph.T(L), H), symPlusT(graph.TMatMul(L, Gb))))
	nextSxb := graph.MatAdd(graph.MatMul(graph.TMatMul(KF, Sb), AKF), graph.MatMul(graph.TMatMul(A, Sxb), AKF))
	nextSxb = graph.MatAdd(nextSxb, graph.TMatMul(Gx, L))
	nextsx := graph.VecAdd(graph.VecAdd(p.Qv(), graph.TMatVec(A, sx)), graph.VecAdd(graph.TMatVec(KF, sb), graph.TMatVec(Gx, l)))
	nextsx = addVecIf(addVecIf(nextsx, noiseVec(Cx, Sx, V)), noiseVec(D, KtSbK, W))
	nextsb := graph.VecAdd(graph.TMatVec(AKF, sb), graph.VecAdd(graph.TMatVec(L, graph.VecAdd(graph.MatVec(H, l), g)), graph.TMatVec(Gb, l)))
	return L, l, Ht, partialValue{Sx: nextSx, Sb: nextSb, Sxb: nextSxb, sx: nextsx, sb: nextsb}
}
