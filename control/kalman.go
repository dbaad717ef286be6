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
	K := make([]graph.Mat, len(tr.Steps))
	P := Sigma0
	for t, p := range tr.Steps {
		var VVt graph.Mat
		if len(p.V()) > 0 && len(p.V()[0]) > 0 {
			VVt = graph.Gram(p.V())
		}
		K[t], P = kalmanStep(p.A(), p.F(), graph.Gram(p.W()), VVt, P)
	}
	return K
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
// current control law, with the signal-dependent noises (Cx, Cu, D) entering through the
// expected state and control. It tracks, in deviations from the nominal trajectory, the means
// of the belief b and of the estimation error e = x − b and their second moments
// Σb = E[bbᵀ], Σe = E[eeᵀ], Σbe = E[beᵀ], starting at b = 0, Σe = Sigma0:
//
//	K = A Σe Fᵀ (F Σe Fᵀ + P)⁻¹,   P = Σ_j E[(W_j + D_j x)(W_j + D_j x)ᵀ]
//	b ← (A + BL) b + K F e + B l,   e ← (A − KF) e
//	Σe ← A Σe Aᵀ − K G Kᵀ + M,      M = Σ_j E[(V_j + Cx_j x + Cu_j u)(…)ᵀ]
//	Σb ← (A+BL) Σb (A+BL)ᵀ + K G Kᵀ + (A+BL) Σbe FᵀKᵀ + K F Σbeᵀ (A+BL)ᵀ + (terms of l)
//	Σbe ← (A+BL) Σbe (A−KF)ᵀ + B l eᵀ (A−KF)ᵀ
//
// with x = b + e and u = L b + l. The public reference implementation of this pass differs in
// three places that look like slips: it multiplies where it should add in (A + BL)ᵀ, starts
// the belief mean at the absolute initial state instead of a zero deviation, and counts the
// cross moment Σbe once instead of twice in E[xxᵀ].
func FilterGainsPartial(tr *Trajectory, gains Gains, Sigma0 graph.Mat) []graph.Mat {
	n := len(Sigma0)
	K := make([]graph.Mat, len(tr.Steps))
	mb, me := make(graph.Vec, n), make(graph.Vec, n)
	for i := range n {
		mb[i], me[i] = graph.C(0), graph.C(0)
	}
	Sb, Se, Sbe := graph.NewMat(n, n), Sigma0, graph.NewMat(n, n)
	for t, p := range tr.Steps {
		A, B, F := p.A(), p.B(), p.F()
		L, l := gains.L[t], gains.l[t]
		mx := graph.VecAdd(mb, me)
		Sx := graph.MatAdd(graph.MatAdd(Sb, Se), symPlusT(Sbe)) // E[xxᵀ]
		mu := graph.VecAdd(graph.MatVec(L, mb), l)              // E[u]
		Exu := graph.MatAdd(graph.MatMulT(graph.MatAdd(Sb, graph.T(Sbe)), L), graph.Outer(mx, l))
		Euu := graph.MatAdd(graph.Sandwich(L, Sb), graph.MatAdd(symPlusT(graph.Outer(graph.MatVec(L, mb), l)), graph.Outer(l, l)))

		// Observation noise covariance P = Σ_j E[(W_j + D_j x)(W_j + D_j x)ᵀ].
		W, D := p.W(), p.D()
		obsCov := graph.Gram(W)
		for j := range D {
			wj := W.ColVec(j)
			cross := graph.Outer(wj, graph.MatVec(D[j], mx))
			obsCov = graph.MatAdd(obsCov, graph.MatAdd(symPlusT(cross), graph.Sandwich(D[j], Sx)))
		}
		// State noise covariance M = Σ_j E[(V_j + Cx_j x + Cu_j u)(…)ᵀ].
		V, Cx, Cu := p.V(), p.Cx(), p.Cu()
		var M graph.Mat
		for j := range Cx {
			vj := V.ColVec(j)
			mean := graph.VecAdd(graph.MatVec(Cx[j], mx), graph.MatVec(Cu[j], mu))
			second := graph.MatAdd(graph.Sandwich(Cx[j], Sx), graph.Sandwich(Cu[j], Euu))
			second = graph.MatAdd(second, symPlusT(graph.MatMul(Cx[j], graph.MatMulT(Exu, Cu[j]))))
			term := graph.MatAdd(graph.MatAdd(graph.Outer(vj, vj), symPlusT(graph.Outer(vj, mean))), second)
			M = addIf(term, M)
		}

		G := graph.MatAdd(graph.Sandwich(F, Se), obsCov)
		lg := graph.Chol(G)
		Z := graph.SolveLower(lg, graph.MatMul(F, graph.MatMulT(Se, A)))
		K[t] = graph.T(graph.SolveLowerT(lg, Z))
		KGKt := graph.Gram(graph.T(Z))

		ABL := graph.MatAdd(A, graph.MatMul(B, L))
		AKF := graph.MatSub(A, graph.MatMul(K[t], F))
		KF := graph.MatMul(K[t], F)
		Bl := graph.MatVec(B, l)
		drift := graph.VecAdd(graph.MatVec(ABL, mb), graph.MatVec(KF, me))

		nextSb := graph.MatAdd(graph.Sandwich(ABL, Sb), KGKt)
		nextSb = graph.MatAdd(nextSb, symPlusT(graph.MatMul(ABL, graph.MatMulT(Sbe, KF))))
		nextSb = graph.MatAdd(nextSb, graph.MatAdd(symPlusT(graph.Outer(drift, Bl)), graph.Outer(Bl, Bl)))
		nextSe := addIf(graph.MatSub(graph.Sandwich(A, Se), KGKt), M)
		nextSbe := graph.MatMulT(graph.MatAdd(graph.MatMul(ABL, Sbe), graph.Outer(Bl, me)), AKF)

		mb, me = graph.VecAdd(drift, Bl), graph.MatVec(AKF, me)
		Sb, Se, Sbe = nextSb, nextSe, nextSbe
	}
	return K
}
