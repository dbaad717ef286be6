package control

import "github.com/nioc-gpu/nioc-gpu/graph"

// KalmanGains returns the gains K_t of the Kalman filter of the linearized system, starting
// from the belief covariance Sigma0. The agent's belief mean follows the EKF in predictor form
// b_{t+1} = f(b_t, u_t, 0) + K_t·(y_t − h(b_t, 0)), with y_t the observation of x_t
// (paper Sec. 2.4). With G = F P Fᵀ + W Wᵀ,
//
//	K = A P Fᵀ G⁻¹,   P ← V Vᵀ + A P Aᵀ − K G Kᵀ  (= V Vᵀ + (A − K F) P Aᵀ).
//
// V and W are the noise Jacobians at the linearization point, so signal-dependent noise enters
// at its nominal magnitude.
func KalmanGains(tr *Trajectory, Sigma0 graph.Mat) []graph.Mat {
	lin := tr.flat()
	n, _, _, m, _ := dims(lin.s)
	return matsOf(KalmanGainsFlow(graph.Unrolled{}, lin, graph.Values(graph.Flatten(Sigma0))[0]), n, m)
}

// kalmanStep returns K = A P Fᵀ G⁻¹ with G = F P Fᵀ + obsCov, and the next covariance
// stateCov + A P Aᵀ − K G Kᵀ (stateCov may be nil for none).
func kalmanStep(A, F, obsCov, stateCov, P graph.Mat) (K, next graph.Mat) {
	G := graph.MatAdd(graph.Sandwich(F, P), obsCov)
	Mt := graph.MatMul(F, graph.MatMulT(P, A)) // (A P Fᵀ)ᵀ = F P Aᵀ, m×n
	lg := graph.Chol(G)
	Z := graph.SolveLower(lg, Mt) // Lg⁻¹ (A P Fᵀ)ᵀ
	K = graph.T(graph.SolveLowerT(lg, Z))
	next = graph.MatSub(graph.Sandwich(A, P), graph.Gram(graph.T(Z))) // K G Kᵀ = Zᵀ Z
	return K, addIf(next, stateCov)
}

// FilterGainsPartial returns the filter gains of partially observable iLQG (Li & Todorov
// 2007; Li 2006, Sec. 5.3): the Kalman gains of the linearized closed-loop system under the
// control gains L, with the signal-dependent noises (Cx, Cu, D) entering through the second
// moments of state and control. The nominal trajectory is the noise-free closed-loop rollout
// of the current control law, so deviations from it have zero mean; with the belief deviation
// b, the estimation error e = x − b, their covariances Σb, Σe and cross-covariance Σbe = E[beᵀ]
// (starting at 0, Sigma0 and 0), x = b + e and u = L·b:
//
//	P = W Wᵀ + Σ_j D_j Σx D_jᵀ (Σx = Σb + Σe + Σbe + Σbeᵀ),   G = F Σe Fᵀ + P,   K = A Σe Fᵀ G⁻¹
//	M = V Vᵀ + Σ_j [Cx_j Σx Cx_jᵀ + Cu_j L Σb Lᵀ Cu_jᵀ + Cx_j E[x uᵀ] Cu_jᵀ + (Cx_j E[x uᵀ] Cu_jᵀ)ᵀ],  E[x uᵀ] = (Σb + Σbeᵀ) Lᵀ
//	Σe ← A Σe Aᵀ − K G Kᵀ + M
//	Σb ← (A+BL) Σb (A+BL)ᵀ + K G Kᵀ + (A+BL) Σbe (KF)ᵀ + KF Σbeᵀ (A+BL)ᵀ
//	Σbe ← (A+BL) Σbe (A−KF)ᵀ
//
// The public reference implementation of this pass differs in three places that look like
// slips: it multiplies where it should add in (A + BL)ᵀ, starts the belief mean at the
// absolute initial state instead of a zero deviation, and counts the cross moment Σbe once
// instead of twice in E[xxᵀ].
//
// For an agent that sees before it acts (models.SeeThenAct) the same moments describe its
// belief after the update with the observation of x_t (the initial belief at t = 0), and K_t
// is the filter-form gain of its update with the observation of x_{t+1}: each step predicts
// (the recursion above with K = 0), then updates (momentsUpdate).
func FilterGainsPartial(tr *Trajectory, L []graph.Mat, Sigma0 graph.Mat) []graph.Mat {
	return ClosedLoopMoments(tr, L, Sigma0).K
}

// Moments are the filter gains and second moments of the linearized closed-loop system of
// partially observable iLQG (see FilterGainsPartial): K_t for t < T and, for t = 0..T, the
// covariances of the belief deviation (Sb), of the estimation error (Se) and their cross
// covariance Sbe = E[b eᵀ].
type Moments struct {
	K           []graph.Mat
	Sb, Se, Sbe []graph.Mat
}

// ClosedLoopMoments propagates the moments of FilterGainsPartial along tr under the gains L.
func ClosedLoopMoments(tr *Trajectory, L []graph.Mat, Sigma0 graph.Mat) *Moments {
	lin := tr.flat()
	n, _, _, m, _ := dims(lin.s)
	T := len(tr.Steps)
	gains := make([]*graph.Value, T)
	for t := range T {
		gains[t] = graph.Values(graph.Flatten(L[t]))[0]
	}
	zero := graph.NewMat(n, n)
	init := graph.Values(graph.Flatten(zero, Sigma0, zero))[0]
	final, steps := ClosedLoopMomentsFlow(graph.Unrolled{}, lin, gains, init)
	mo := &Moments{K: make([]graph.Mat, T), Sb: make([]graph.Mat, T+1), Se: make([]graph.Mat, T+1), Sbe: make([]graph.Mat, T+1)}
	for t, v := range append(steps, final) {
		u := graph.NewUnflattener(v.Scalars())
		if t < T {
			mo.K[t] = u.Mat(n, m)
		}
		mo.Sb[t], mo.Se[t], mo.Sbe[t] = u.Mat(n, n), u.Mat(n, n), u.Mat(n, n)
		u.Done()
	}
	return mo
}

// momentsState are the closed-loop second moments of ClosedLoopMoments at one step.
type momentsState struct{ Sb, Se, Sbe graph.Mat }

// momentsStep is one step of ClosedLoopMoments: the filter gain at the step of p under control
// gain L, and the moments after it. With pn nil the agent acts, then sees (models.ActThenSee):
// K is the predictor-form gain of the observation of x_t (F, W, D at p), as in
// FilterGainsPartial. With pn the point of step t+1 it sees, then acts (models.SeeThenAct):
// the step predicts with K = 0 (b⁻ = (A+BL)b, e⁻ = A e + ξ) and momentsUpdate then applies
// the filter-form update with the observation of x_{t+1} (F, W, D at pn).
func momentsStep(p, pn *Point, L graph.Mat, mo momentsState) (K graph.Mat, next momentsState) {
	Sb, Se, Sbe := mo.Sb, mo.Se, mo.Sbe
	A, B, F := p.A(), p.B(), p.F()
	Sx := mo.sx()

	M := graph.Gram(p.V())
	Exu := graph.MatMulT(graph.MatAdd(Sb, graph.T(Sbe)), L) // E[x uᵀ]
	Euu := graph.Sandwich(L, Sb)                            // E[u uᵀ]
	for j, Cxj := range p.Cx() {
		Cuj := p.Cu()[j]
		M = graph.MatAdd(M, graph.MatAdd(graph.Sandwich(Cxj, Sx), graph.Sandwich(Cuj, Euu)))
		M = graph.MatAdd(M, symPlusT(graph.MatMul(Cxj, graph.MatMulT(Exu, Cuj))))
	}
	ABL := graph.MatAdd(A, graph.MatMul(B, L))
	if pn != nil {
		return momentsUpdate(pn, momentsState{Sb: graph.Sandwich(ABL, Sb), Se: graph.MatAdd(graph.Sandwich(A, Se), M),
			Sbe: graph.MatMulT(graph.MatMul(ABL, Sbe), A)})
	}

	G := graph.MatAdd(graph.Sandwich(F, Se), obsNoiseCov(p, Sx))
	lg := graph.Chol(G)
	Z := graph.SolveLower(lg, graph.MatMul(F, graph.MatMulT(Se, A)))
	K = graph.T(graph.SolveLowerT(lg, Z))
	KGKt := graph.Gram(graph.T(Z))

	KF := graph.MatMul(K, F)
	nextSb := graph.MatAdd(graph.Sandwich(ABL, Sb), KGKt)
	nextSb = graph.MatAdd(nextSb, symPlusT(graph.MatMul(ABL, graph.MatMulT(Sbe, KF))))
	nextSe := graph.MatAdd(graph.MatSub(graph.Sandwich(A, Se), KGKt), M)
	nextSbe := graph.MatMulT(graph.MatMul(ABL, Sbe), graph.MatSub(A, KF))
	return K, momentsState{Sb: nextSb, Se: nextSe, Sbe: nextSbe}
}

// obsNoiseCov returns the covariance W Wᵀ + Σ_j D_j Σx D_jᵀ of the observation noise at p, Σx
// the second moment of the state deviation there.
func obsNoiseCov(p *Point, Sx graph.Mat) graph.Mat {
	cov := graph.Gram(p.W())
	for _, Dj := range p.D() {
		cov = graph.MatAdd(cov, graph.Sandwich(Dj, Sx))
	}
	return cov
}

// momentsUpdate is the update of an agent that sees before it acts (models.SeeThenAct) in the
// moments of ClosedLoopMoments: from the predicted moments (Sb, Se, Sbe) of b⁻ and e⁻ = x' − b⁻,
// the agent sees y' = F x' + ω (F, W, D at pn, the point of x') and updates in filter form,
// b' = b⁻ + K (F e⁻ + ω), e' = (I − KF) e⁻ − K ω, with ω's covariance R = obsNoiseCov(pn, Σx'):
//
//	S = F Se Fᵀ + R,   K = Se Fᵀ S⁻¹
//	Sb ← Sb + K S Kᵀ + Sbe (KF)ᵀ + KF Sbeᵀ,   Se ← Se − K S Kᵀ,   Sbe ← Sbe (I − KF)ᵀ
//
// (E[b' e'ᵀ] loses the terms KF Se (I − KF)ᵀ − K R Kᵀ, which cancel for this K, as the
// predictor form's do in momentsStep). Σx' = Sb + Se + Sbe + Sbeᵀ is unchanged by the update.
// Compared with the predictor form it differs in where the gain acts: on the predicted
// moments instead of A times the current ones, with F, W, D of x_{t+1} instead of x_t.
func momentsUpdate(pn *Point, mo momentsState) (K graph.Mat, next momentsState) {
	F := pn.F()
	S := graph.MatAdd(graph.Sandwich(F, mo.Se), obsNoiseCov(pn, mo.sx()))
	lg := graph.Chol(S)
	Z := graph.SolveLower(lg, graph.MatMul(F, mo.Se)) // Lg⁻¹ F Se = Lg⁻¹ (Se Fᵀ)ᵀ
	K = graph.T(graph.SolveLowerT(lg, Z))
	KSKt := graph.Gram(graph.T(Z))
	KF := graph.MatMul(K, F)
	next.Sb = graph.MatAdd(graph.MatAdd(mo.Sb, KSKt), symPlusT(graph.MatMulT(mo.Sbe, KF)))
	next.Se = graph.MatSub(mo.Se, KSKt)
	next.Sbe = graph.MatMulT(mo.Sbe, graph.MatSub(graph.Eye(len(F[0])), KF))
	return K, next
}

// ExpectedCostSpread returns the expected cost of the closed-loop system beyond the cost of
// its nominal trajectory, to second order: Σ_t [½tr(Q Σx) + ½tr(R Σu) + Σ_ij P_ij Σux_ij] +
// ½tr(Q_T Σx_T), with Σx = E[δx δxᵀ] = Sb + Se + Sbe + Sbeᵀ, Σu = L Sb Lᵀ and
// Σux = E[δu δxᵀ] = L (Sb + Sbe). Under partial observability this is what makes information
// worth seeking: a path that reduces the estimation error lowers it.
func (mo *Moments) ExpectedCostSpread(tr *Trajectory, L []graph.Mat) graph.S {
	total := graph.C(0)
	for t, p := range tr.Steps {
		total = graph.Add(total, spreadStep(p, L[t], momentsState{Sb: mo.Sb[t], Se: mo.Se[t], Sbe: mo.Sbe[t]}))
	}
	T := len(tr.Steps)
	return graph.Add(total, spreadFinal(tr.Final.FinalQ(), momentsState{Sb: mo.Sb[T], Se: mo.Se[T], Sbe: mo.Sbe[T]}))
}

// traceProd returns Σ_ij A_ij B_ij.
func traceProd(A, B graph.Mat) graph.S {
	s := graph.C(0)
	for i := range A {
		for j := range A[i] {
			s = graph.Add(s, graph.Mul(A[i][j], B[i][j]))
		}
	}
	return s
}

func (mo momentsState) sx() graph.Mat {
	return graph.MatAdd(graph.MatAdd(mo.Sb, mo.Se), symPlusT(mo.Sbe))
}

// spreadStep is the term of step t of ExpectedCostSpread, with p the model at step t.
func spreadStep(p *Point, L graph.Mat, mo momentsState) graph.S {
	total := graph.Scale(0.5, traceProd(p.Q(), mo.sx()))
	total = graph.Add(total, graph.Scale(0.5, traceProd(p.R(), graph.Sandwich(L, mo.Sb))))
	return graph.Add(total, traceProd(p.P(), graph.MatMul(L, graph.MatAdd(mo.Sb, mo.Sbe))))
}

// spreadFinal is the final term of ExpectedCostSpread.
func spreadFinal(finalQ graph.Mat, mo momentsState) graph.S {
	return graph.Scale(0.5, traceProd(finalQ, mo.sx()))
}

// FilterStep is one step of the agent's extended Kalman filter linearized at p (its belief
// mean and its control): the gain K = A P Fᵀ G⁻¹, G = F P Fᵀ + W Wᵀ, and the next covariance
// V Vᵀ + extra + A P Aᵀ − K G Kᵀ (extra: state noise beyond V Vᵀ, nil for none).
func FilterStep(p *Point, P, extra graph.Mat) (K, next graph.Mat) {
	stateCov := extra
	if V := p.V(); len(V) > 0 && len(V[0]) > 0 {
		stateCov = graph.Gram(V)
		if extra != nil {
			stateCov = graph.MatAdd(stateCov, extra)
		}
	}
	return kalmanStep(p.A(), p.F(), graph.Gram(p.W()), stateCov, P)
}

// FilterUpdateStep is one step of the agent's extended Kalman filter in filter form, for an
// agent that sees before it acts (models.SeeThenAct): from the covariance P of its belief
// when it acted at t, linearized at p (its belief and control then), it predicts
// P⁻ = A P Aᵀ + V Vᵀ + extra, then updates with the observation of x_{t+1}, linearized at pn
// (its predicted belief b⁻ = f(b, u, 0)):
//
//	S = F P⁻ Fᵀ + W Wᵀ,   K = P⁻ Fᵀ S⁻¹,   next = P⁻ − K S Kᵀ,
//
// its belief after the update being b⁻ + K·(y − h(b⁻, 0)). extra is state noise beyond V Vᵀ
// (nil for none). The gain of the predictor form (FilterStep) is A times this one for the
// same P⁻; the two agents differ in what the action at t has seen.
func FilterUpdateStep(p, pn *Point, P, extra graph.Mat) (K, next graph.Mat) {
	pred := graph.Sandwich(p.A(), P)
	if V := p.V(); len(V) > 0 && len(V[0]) > 0 {
		pred = graph.MatAdd(pred, graph.Gram(V))
	}
	pred = addIf(pred, extra)
	F := pn.F()
	S := graph.MatAdd(graph.Sandwich(F, pred), graph.Gram(pn.W()))
	lg := graph.Chol(S)
	Z := graph.SolveLower(lg, graph.MatMul(F, pred)) // Lg⁻¹ F P⁻ = Lg⁻¹ (P⁻ Fᵀ)ᵀ
	K = graph.T(graph.SolveLowerT(lg, Z))
	return K, graph.MatSub(pred, graph.Gram(graph.T(Z))) // K S Kᵀ = Zᵀ Z
}
