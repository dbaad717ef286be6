package likelihood

import (
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Agent is the agent's control law and belief dynamics at one step t of a linearization, as
// graph values: it applies u(b) = Ubar + l + L·(b − Xbar) to its belief mean b (or to the
// state, when it observes the state) plus maximum-causal-entropy noise with covariance
// Temperature·H̃⁻¹, and its belief follows b' = f(b, u, 0) + K·(y − h(b, 0)).
type Agent struct {
	Xbar, Ubar  graph.Vec
	L           graph.Mat
	l           graph.Vec
	H           graph.Mat
	K           graph.Mat // Kalman gain; nil for a fully observing agent
	Temperature graph.S   // of the policy noise: a constant (0 for none) or the fitted τ
	// FirstOrderNoise drops the variance of products of noises (see BeliefTracking), as the
	// reference implementation does.
	FirstOrderNoise bool
	// RawAngles takes the innovation as it is, atan2 terms and all (Options.RawAngles).
	RawAngles bool
}

// innovation returns h(x, 0) − h(b, 0), the agent's innovation for an observation of x when
// its belief is b, px and pb the model at x and at b. An atan2 in the observation (navigation's
// bearing of the target) jumps by 2π across its branch cut, and where x and b lie on either
// side of it the raw difference would kick the belief by K·2π: unless a.RawAngles, each atan2
// term's difference is taken modulo 2π instead (models.Atan2Term), so that the belief, and
// with it the likelihood, is continuous in b and θ there (docs/method.md, "Angles in the
// observation"). The rest of the difference, such as the headings', is left as it is.
func (a *Agent) innovation(s *models.Symbolic, px, pb *control.Point) graph.Vec {
	d := graph.VecSub(px.H0(), pb.H0()) // a new vector
	if a.RawAngles || len(s.Atan2) == 0 {
		return d
	}
	ax, ab := px.Atan2(), pb.Atan2()
	for k, t := range s.Atan2 {
		diff := graph.Sub(ax[k], ab[k])
		d[t.Obs] = graph.Add(d[t.Obs], graph.Scale(t.Coef, graph.Sub(graph.WrapAngle(diff), diff)))
	}
	return d
}

// Control returns the agent's noise-free control for belief (or state) b.
func (a *Agent) Control(b graph.Vec) graph.Vec {
	u := graph.VecAdd(a.Ubar, a.l)
	return graph.VecAdd(u, graph.MatVec(a.L, graph.VecSub(b, a.Xbar)))
}

// policyNoise returns the covariance of the maximum-causal-entropy noise of the control,
// Temperature·H̃⁻¹; nil when the temperature is 0.
func (a *Agent) policyNoise() graph.Mat {
	if a.Temperature.IsZero() {
		return nil
	}
	return graph.MatScale(a.Temperature, graph.SPDInverse(a.H))
}

// productNoiseCov returns the covariance of the state-noise terms that are products of the
// control-dependent noise with the random part of the control, Σ_j Cu_j·covU·Cu_jᵀ (covU the
// control's covariance: belief spread and policy noise). A first-order linearization in the
// noises drops these; they matter where the motor noise is large relative to the control
// (reaching: σ_m/√dt = 1). nil when there is nothing to add.
func (a *Agent) productNoiseCov(Cu []graph.Mat, covU graph.Mat) graph.Mat {
	if a.FirstOrderNoise || covU == nil {
		return nil
	}
	var out graph.Mat
	for _, C := range Cu {
		out = addCov(graph.Sandwich(C, covU), out)
	}
	return out
}

func addCov(A, B graph.Mat) graph.Mat {
	if B == nil {
		return A
	}
	return graph.MatAdd(A, B)
}

// BeliefTracking is one step of the log-likelihood log p(x_1..x_T | x_0, θ) of an observed
// trajectory under a partially observable agent (paper Sec. 3.1–3.2, App. C–D). The state
// and the agent's belief mean form a Markov system
//
//	x' = f(x, u(b), v),   b' = f(b, u(b), 0) + K·(h(x, w) − h(b, 0)),
//
// which is linearized at the observed state and the current mean μ of the belief. A Gaussian
// N(μ, Σ) over the belief, starting at N(x_0, Options.Prior) (by default the point x_0), is
// pushed through it to the joint Gaussian of (x', b'):
//
//	mean = (f(x, u(μ), 0), f(μ, u(μ), 0) + K·(h(x, 0) − h(μ, 0)))
//	J_b = [B_x·L; A_μ − K·F_μ + B_μ·L],  J_v = [V_x; 0],  J_w = [0; K·W_x],  J_ξ-noise = [B_x; B_μ]
//	cov = J_b Σ J_bᵀ + J_v J_vᵀ + J_w J_wᵀ + temperature·[B_x; B_μ] H̃⁻¹ [B_x; B_μ]ᵀ
//	      + [Σ_j Cu_j (L Σ Lᵀ + temperature·H̃⁻¹) Cu_jᵀ, 0; 0, 0]
//
// (A, B, V, F, W the model's Jacobians at the subscripted point; Cu_j = ∂V_j/∂u; K the agent's
// Kalman gain at this step, from TrackedFilter by default or along the linearization with
// Options.NominalFilter; the innovation h(x, 0) − h(μ, 0) has its atan2 terms' differences
// taken modulo 2π, Agent.innovation). The last
// term is the exact variance of the products of the control-dependent state noise with the
// random part of the control (belief deviation and policy noise), which the paper's
// first-order linearization in all noises drops (Agent.FirstOrderNoise restores that). Without
// it the likelihood underestimates the motor variability of an agent with policy noise and
// biases the control cost. The observed x' contributes
// log N(x'; mean_x, cov_xx + jitter·I), and conditioning on it gives the next belief
// distribution. The observation noise enters at the true state x, where it arises; the belief
// update uses no state noise. It returns log p(x' | x, belief) and the next belief
// distribution.
func BeliefTracking(s *models.Symbolic, theta graph.Vec, x, xnext graph.Vec, agent *Agent, b Belief, jitter float64) (ll graph.S, next Belief) {
	return beliefTracking(s, theta, x, xnext, agent, b, newAtBelief(s, theta, agent, b), jitter)
}

// atBelief is what the agent's side of a tracking step evaluates at the mean μ of the
// distribution of its belief: its control u(μ), the model at (μ, u(μ)) (Jacobians evaluated
// lazily, once) and the control's covariance Cu = L Σ Lᵀ + τ H̃⁻¹. BeliefTracking and
// TrackedFilter both need them; TrackedStep computes them once for both.
type atBelief struct {
	u   graph.Vec
	p   *control.Point
	cov graph.Mat
}

func newAtBelief(s *models.Symbolic, theta graph.Vec, agent *Agent, b Belief) *atBelief {
	u := agent.Control(b.Mean)
	return &atBelief{u: u, p: control.At(s, theta, b.Mean, u), cov: addCov(graph.Sandwich(agent.L, b.Cov), agent.policyNoise())}
}

// TrackedStep is one step of the default partially observable likelihood: TrackedFilter
// gives the agent's Kalman gain at this step, with which BeliefTracking then pushes the
// belief distribution; the model at the belief mean and the control's covariance, which
// both use, are evaluated once. It returns what the two return.
func TrackedStep(s *models.Symbolic, theta graph.Vec, x, xnext graph.Vec, agent *Agent, b Belief, P graph.Mat, jitter float64) (ll graph.S, next Belief, nextP graph.Mat) {
	at := newAtBelief(s, theta, agent, b)
	var K graph.Mat
	K, nextP = trackedFilter(agent, at, P)
	withK := *agent
	withK.K = K
	ll, next = beliefTracking(s, theta, x, xnext, &withK, b, at, jitter)
	return ll, next, nextP
}

func beliefTracking(s *models.Symbolic, theta graph.Vec, x, xnext graph.Vec, agent *Agent, b Belief, at *atBelief, jitter float64) (ll graph.S, next Belief) {
	Sigma := b.Cov
	u := at.u
	px := control.At(s, theta, x, u) // the state's side
	pb := at.p                       // the belief's side
	K, L := agent.K, agent.L
	Bx, Bb := px.B(), pb.B()

	meanX := px.F0()
	// With J_b = [B_x; B_μ]·L + [0; D], D = A_μ − K·F_μ, and the control's covariance
	// Cu = L Σ Lᵀ + τ H̃⁻¹ (belief spread and policy noise), the joint covariance is
	// formed in control space, which is cheaper than J_b Σ J_bᵀ for few controls. K nil is
	// the prediction alone, b' = f(b, u(b), 0) (SeeThenActStep).
	meanB, D := pb.F0(), pb.A()
	if K != nil {
		meanB = graph.VecAdd(meanB, graph.MatVec(K, agent.innovation(s, px, pb)))
		D = graph.MatSub(D, graph.MatMul(K, pb.F()))
	}
	LS := graph.MatMul(L, Sigma)
	Cu := at.cov
	cross := graph.MatMulT(LS, D) // L Σ Dᵀ
	BbCross := graph.MatMul(Bb, cross)
	Sxx := graph.MatAdd(graph.Sandwich(Bx, Cu), graph.Gram(px.V()))
	Sxx = addCov(Sxx, agent.productNoiseCov(px.Cu(), Cu))
	Sxb := graph.MatAdd(graph.MatMul(Bx, graph.MatMulT(Cu, Bb)), graph.MatMul(Bx, cross))
	Sbb := graph.MatAdd(graph.Sandwich(Bb, Cu), graph.MatAdd(BbCross, graph.T(BbCross)))
	Sbb = graph.MatAdd(Sbb, graph.Sandwich(D, Sigma))
	if K != nil {
		Sbb = graph.MatAdd(Sbb, graph.Gram(graph.MatMul(K, px.W())))
	}

	chol := graph.Chol(graph.AddDiag(Sxx, graph.C(jitter)))
	residual := graph.VecSub(xnext, meanX)
	ll = graph.GaussLogDensity(residual, chol)

	// Condition the belief on the observed state (Gaussian conditioning, Eq. 5).
	z := graph.SolveLower(chol, graph.Col(residual)).ColVec(0)
	Z := graph.SolveLower(chol, Sxb) // L⁻¹Σ_xb
	next.Mean = graph.VecAdd(meanB, graph.TMatVec(Z, z))
	next.Cov = graph.MatSub(Sbb, graph.Gram(graph.T(Z)))
	return ll, next
}

// TrackedFilter is one step of the agent's own extended Kalman filter as the likelihood tracks
// it (the default; Options.NominalFilter for the paper's gains). The filter is linearized at
// the mean μ of the distribution b of the agent's belief, under the control the agent's
// policy gives there, and P is the agent's filter covariance carried from the previous step
// (starting at the task's initial belief covariance). It returns the gain
// K = A P Fᵀ (F P Fᵀ + W Wᵀ)⁻¹ and the next covariance
//
//	V Vᵀ + Σ_j Cu_j (L Σ Lᵀ + τ H̃⁻¹) Cu_jᵀ + A P Aᵀ − K (F P Fᵀ + W Wᵀ) Kᵀ
//
// with A, F, V, W, Cu at (μ, u(μ)), Σ the covariance of b: the agent's control-dependent
// noise averaged over the control it may have applied, as in BeliefTracking (the second term
// is dropped with Agent.FirstOrderNoise). An agent's EKF (paper Sec. 2.4; control.Simulate;
// the reference's simulator) computes its gains at its own belief and control; with
// signal-dependent noise or a non-linear observation they differ from the gains along any
// fixed trajectory, and the difference biases the estimates (docs/method.md, "Deliberate
// differences").
func TrackedFilter(s *models.Symbolic, theta graph.Vec, agent *Agent, b Belief, P graph.Mat) (K, next graph.Mat) {
	return trackedFilter(agent, newAtBelief(s, theta, agent, b), P)
}

func trackedFilter(agent *Agent, at *atBelief, P graph.Mat) (K, next graph.Mat) {
	return control.FilterStep(at.p, P, agent.productNoiseCov(at.p.Cu(), at.cov))
}

// SeeThenActStep is one step of the partially observable likelihood for an agent that sees
// before it acts (models.SeeThenAct): b is the distribution of its belief after it has seen x
// (its posterior at t; at t = 0 its initial belief), P its own filter covariance then. The
// step pushes b through the action and the prediction b⁻ = f(b, u(b), 0) with the state,
// which is BeliefTracking without an observation term (x' = f(x, u(b), v), the same ll), and
// conditions on the observed x'. The agent then sees y' = h(x', w'); linearizing h at the mean
// μ⁻ of b⁻ | x',
//
//	b' = b⁻ + K·(h(x', w') − h(b⁻, 0)):   mean μ⁻ + K·(h(x', 0) − h(μ⁻, 0)),
//	                                      cov (I − K F) Σ⁻ (I − K F)ᵀ + K W Wᵀ Kᵀ,
//
// F at μ⁻ and W at x' (the noise arises at the true state). K is the agent's gain of the
// update (control.FilterUpdateStep): with K nil the step computes it, with P, from the
// agent's filter linearized at the mean of b and at μ⁻ (the tracked filter, as TrackedStep),
// and returns the next P; a non-nil K (Options.NominalFilter) is used as given and nextP is
// nil. The exact linear-Gaussian likelihood of this agent (lqg's, Straub & Rothkopf 2022) is
// the special case of a linear model.
func SeeThenActStep(s *models.Symbolic, theta graph.Vec, x, xnext graph.Vec, agent *Agent, b Belief, P, K graph.Mat, jitter float64) (ll graph.S, next Belief, nextP graph.Mat) {
	at := newAtBelief(s, theta, agent, b)
	predict := *agent
	predict.K = nil
	ll, pred := beliefTracking(s, theta, x, xnext, &predict, b, at, jitter)
	pn := control.At(s, theta, pred.Mean, at.u) // the agent's observation model at μ⁻
	if K == nil {
		K, nextP = control.FilterUpdateStep(at.p, pn, P, agent.productNoiseCov(at.p.Cu(), at.cov))
	}
	px := control.At(s, theta, xnext, nil) // the observation of x'
	IKF := graph.MatSub(graph.Eye(len(pred.Mean)), graph.MatMul(K, pn.F()))
	next.Mean = graph.VecAdd(pred.Mean, graph.MatVec(K, agent.innovation(s, px, pn)))
	next.Cov = graph.MatAdd(graph.Sandwich(IKF, pred.Cov), graph.Gram(graph.MatMul(K, px.W())))
	return ll, next, nextP
}

// Belief is a Gaussian N(Mean, Cov) over the agent's belief mean.
type Belief struct {
	Mean graph.Vec
	Cov  graph.Mat
}

// FullyObservable returns log p(x' | x, θ), one step of the log-likelihood of a trajectory
// under an agent that observes the state (paper App. E): x' ~ N(f(x, u(x), 0), V Vᵀ + temperature·B H̃⁻¹ Bᵀ +
// temperature·Σ_j Cu_j H̃⁻¹ Cu_jᵀ + jitter·I) with V, B, Cu at (x, u(x)); the Cu term is
// dropped with Agent.FirstOrderNoise.
func FullyObservable(s *models.Symbolic, theta graph.Vec, x, xnext graph.Vec, agent *Agent, jitter float64) graph.S {
	u := agent.Control(x)
	p := control.At(s, theta, x, u)
	noise := agent.policyNoise()
	cov := graph.Gram(p.V())
	if noise != nil {
		cov = graph.MatAdd(cov, graph.Sandwich(p.B(), noise))
	}
	cov = addCov(cov, agent.productNoiseCov(p.Cu(), noise))
	chol := graph.Chol(graph.AddDiag(cov, graph.C(jitter)))
	return graph.GaussLogDensity(graph.VecSub(xnext, p.F0()), chol)
}

// Baseline returns one step of the maximum-causal-entropy IRL log-likelihood of a trajectory
// (paper App. B): the estimated control û_t is treated as observed, with the density of the
// linearized MCE policy, log N(û_t; u(x_t), temperature·H̃_t⁻¹); the log-likelihood sums it
// over t. It has no
// observation model. (The reference implementation averages over steps and trials; this is
// the sum, the log-likelihood proper.)
func Baseline(uhat, x graph.Vec, agent *Agent) graph.S {
	residual := graph.VecSub(uhat, agent.Control(x))
	// N(r; 0, τH̃⁻¹) has precision H̃/τ, whose Cholesky factor is chol(H̃)/√τ.
	chol := graph.Chol(graph.MatScale(graph.Recip(agent.Temperature), agent.H))
	z := graph.MatVec(graph.T(chol), residual) // rᵀ(H̃/τ)r = |cholᵀ r|²
	k := float64(len(residual))
	logdetPrec := graph.LogDetChol(chol)
	return graph.Sub(graph.Scale(0.5, graph.Sub(logdetPrec, graph.Dot(z, z))), graph.C(0.5*k*log2Pi))
}

// ReferencePrior returns the covariance of the agent's initial belief mean around the first
// observed state that the reference implementation's likelihood assumes: the identity. The
// default (Options.Prior nil) is 0.
func ReferencePrior(spec models.Spec) [][]float64 { return models.Identity(len(spec.States)) }
