package control

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateSeeThenAct checks the simulated agent that sees before it acts
// (models.SeeThenAct) against the linear task's agent written out here in plain Go, with the
// same noise draws: u_t = ū_t + l_t + L_t (b_t − x̄_t), x' = A x + B u + V v,
// b⁻ = A b + B u, P⁻ = A P Aᵀ + V Vᵀ, K = P⁻Cᵀ/(C P⁻ Cᵀ + W²), b' = b⁻ + K (C x' + W w − C b⁻),
// P' = P⁻ − K (C P⁻ Cᵀ + W²) Kᵀ, from b_0 = x_0 and P_0 = I. The unrolled and looped forms
// agree, on the linear task and on the pendulum.
func TestSimulateSeeThenAct(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	base, spec, theta := taskDefaults(t, "linear")
	m := models.WithTiming(base, models.SeeThenAct)
	const T, trials, seed = 12, 2, 5
	sv, err := NewSolver(m, T, b, SolverOptions{})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	var xs [2][][][][]float64
	for i, form := range []string{"unrolled", "looped"} {
		xs[i], err = Simulate(m, pol, [][]float64{theta}, b, SimOptions{Trials: trials, Seed: seed, Form: form})
		require.NoError(t, err)
	}
	const dt = 0.1
	mn, on := theta[1], theta[2]
	for r := range trials {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		x := [2]float64{spec.X0[0], spec.X0[1]}
		bel := x
		P := [2][2]float64{{1, 0}, {0, 1}}
		for tt := range T {
			v := [2]float64{rng.NormFloat64(), rng.NormFloat64()}
			w := rng.NormFloat64()
			rng.NormFloat64() // the policy noise's draw, unused at temperature 0
			L := [2]float64{pol.Gain[(tt*2 + 0)], pol.Gain[(tt*2 + 1)]}
			u := pol.Ubar[tt] + pol.Offset[tt] + L[0]*(bel[0]-pol.Xbar[tt*2]) + L[1]*(bel[1]-pol.Xbar[tt*2+1])
			x = [2]float64{x[0] + dt*x[1] + mn*v[0], x[1] + dt*u + mn*v[1]}
			pred := [2]float64{bel[0] + dt*bel[1], bel[1] + dt*u}
			// P⁻ = A P Aᵀ + mn² I with A = [[1, dt], [0, 1]].
			AP := [2][2]float64{{P[0][0] + dt*P[1][0], P[0][1] + dt*P[1][1]}, {P[1][0], P[1][1]}}
			Pm := [2][2]float64{
				{AP[0][0] + dt*AP[0][1] + mn*mn, AP[0][1]},
				{AP[1][0] + dt*AP[1][1], AP[1][1] + mn*mn},
			}
			S := Pm[0][0] + on*on
			K := [2]float64{Pm[0][0] / S, Pm[1][0] / S}
			innov := x[0] + on*w - pred[0]
			bel = [2]float64{pred[0] + K[0]*innov, pred[1] + K[1]*innov}
			for i := range 2 {
				for j := range 2 {
					P[i][j] = Pm[i][j] - K[i]*S*K[j]
				}
			}
			assert.InDeltaSlice(t, x[:], xs[0][0][r][tt+1], 1e-12, "trial %d t=%d", r, tt+1)
			assert.InDeltaSlice(t, xs[0][0][r][tt+1], xs[1][0][r][tt+1], 1e-12, "trial %d t=%d: unrolled vs looped", r, tt+1)
		}
	}

	// The same noise under the paper's timing is another trajectory.
	paper, err := Simulate(base, pol, [][]float64{theta}, b, SimOptions{Trials: trials, Seed: seed})
	require.NoError(t, err)
	assert.NotEqual(t, paper[0][0][T], xs[0][0][0][T])

	// A non-linear task: the two forms agree.
	pb, pspec, ptheta := taskDefaults(t, "pendulum")
	pm := models.WithTiming(pb, models.SeeThenAct)
	sv, err = NewSolver(pm, 10, b, SolverOptions{})
	require.NoError(t, err)
	pol, err = sv.Solve([][]float64{ptheta}, nil)
	require.NoError(t, err)
	for i, form := range []string{"unrolled", "looped"} {
		xs[i], err = Simulate(pm, pol, [][]float64{ptheta}, b, SimOptions{Trials: 2, Seed: 3, Temperature: pspec.Temperature, Form: form})
		require.NoError(t, err)
	}
	for r := range 2 {
		for tt := range 11 {
			assert.InDeltaSlice(t, xs[0][0][r][tt], xs[1][0][r][tt], 1e-12, "pendulum trial %d t=%d", r, tt)
		}
	}
}

// linearSpread returns the expected cost of the linear task's closed loop beyond the cost of
// its nominal trajectory, for the agent u = ū + L_t (b − x̄) with the timing's filter, written
// out here in plain Go: the covariance of the joint deviation z = (x, b), from x's Σ0 and b's
// 0, follows z' = M z + noise with, for the paper's agent (K = A P Cᵀ (C P Cᵀ + W²)⁻¹,
// P ← V Vᵀ + A P Aᵀ − K (C P Cᵀ + W²) Kᵀ),
//
//	x' = A x + B L b + V v,   b' = (A + B L) b + K (C (x − b) + W w),
//
// and for the agent that sees first (P⁻ = A P Aᵀ + V Vᵀ, K = P⁻ Cᵀ (C P⁻ Cᵀ + W²)⁻¹,
// P ← P⁻ − K (C P⁻ Cᵀ + W²) Kᵀ)
//
//	x' = A x + B L b + V v,   b' = (A + B L) b + K (C (x' − (A + B L) b) + W w);
//
// the spread is Σ_t [½ tr(Q Σx_t) + ½ R L Σb_t Lᵀ] + ½ tr(Q_T Σx_T).
func linearSpread(theta []float64, L [][]float64, sigma0 [][]float64, seeFirst bool) float64 {
	const dt = 0.1
	ac, mn, on := theta[0], theta[1], theta[2]
	A, B := dense{{1, dt}, {0, 1}}, dense{{0}, {dt}}
	V, Z := dense{{mn, 0}, {0, mn}}, zeros(2, 2)
	P := dense(sigma0)
	J := blocks(P, Z, Z, Z)
	spread := 0.0
	for _, Lt := range L {
		BL := mm(B, dense{Lt})
		ABL := madd(A, BL)
		spread += 0.5*dt*(J[0][0]+J[1][1]) + 0.5*ac*dot(Lt, mv(dense{J[2][2:], J[3][2:]}, Lt))
		var M, G dense // z' = M z + G (v, w)
		if seeFirst {
			pred := madd(mulT(mm(A, P), A), mulT(V, V))
			S := pred[0][0] + on*on
			K := dense{{pred[0][0] / S}, {pred[1][0] / S}}
			P = madd(pred, scaledMat(-S, mulT(K, K), 2))
			KC := mm(K, dense{{1, 0}})
			M = blocks(A, BL, mm(KC, A), madd(ABL, scaledMat(-1, mm(KC, A), 2)))
			G = blocks(V, zeros(2, 1), mm(KC, V), scaledMat(on, K, 1))
		} else {
			S := P[0][0] + on*on
			AP := mm(A, P)
			K := dense{{AP[0][0] / S}, {AP[1][0] / S}}
			P = madd(madd(mulT(V, V), mulT(AP, A)), scaledMat(-S, mulT(K, K), 2))
			KC := mm(K, dense{{1, 0}})
			M = blocks(A, BL, KC, madd(ABL, scaledMat(-1, KC, 2)))
			G = blocks(V, zeros(2, 1), Z, scaledMat(on, K, 1))
		}
		J = madd(mulT(mm(M, J), M), mulT(G, G))
	}
	return spread + 0.5*10*(J[0][0]+J[1][1])
}

// TestPartialPlannerLinear: in the linear-Gaussian case the belief's covariance does not
// depend on the controls, so the partially observable planner's control law is the fully
// observable planner's (separation), for either timing; its cost is the nominal cost plus the
// expected spread of the closed loop, which must be linearSpread's (computed independently)
// for the timing's agent, and differ between the timings.
func TestPartialPlannerLinear(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	base, spec, theta := taskDefaults(t, "linear")
	const T = 20
	spreads := map[models.Timing]float64{}
	for _, timing := range []models.Timing{models.ActThenSee, models.SeeThenAct} {
		m := models.WithTiming(base, timing)
		var pols [2]*Policy
		for i, planner := range []models.Planner{models.PlannerFull, models.PlannerPartial} {
			sv, err := NewSolver(m, T, b, SolverOptions{Planner: planner})
			require.NoError(t, err)
			pols[i], err = sv.Solve([][]float64{theta}, nil)
			require.NoError(t, err)
			require.True(t, pols[i].Converged[0], "%s %s converged", timing, planner)
		}
		full, partial := pols[0], pols[1]
		for name, pair := range map[string][2][]float64{"gain": {full.Gain, partial.Gain}, "offset": {full.Offset, partial.Offset},
			"hessian": {full.Hessian, partial.Hessian}, "xbar": {full.Xbar, partial.Xbar}, "ubar": {full.Ubar, partial.Ubar}} {
			for i := range pair[0] {
				require.InDelta(t, pair[0][i], pair[1][i], 1e-9*math.Max(1, math.Abs(pair[0][i])), "%s: %s[%d]", timing, name, i)
			}
		}
		L := make([][]float64, T)
		for tt := range T {
			L[tt] = partial.Gain[tt*2 : tt*2+2]
		}
		spreads[timing] = linearSpread(theta, L, spec.InitialBeliefCov(), timing == models.SeeThenAct)
		require.InEpsilon(t, spreads[timing], partial.Cost[0]-full.Cost[0], 1e-9, "%s: expected cost beyond the nominal", timing)
	}
	t.Logf("expected spread: act-then-see %.10g, see-then-act %.10g", spreads[models.ActThenSee], spreads[models.SeeThenAct])
	require.Greater(t, math.Abs(spreads[models.ActThenSee]-spreads[models.SeeThenAct]), 1e-3*spreads[models.ActThenSee], "the timings are different agents")
}

// constTrajectory returns the task m linearized at its default parameters along states X and
// controls U, all constants (the graph functions fold to numbers), and its symbolic form.
func constTrajectory(t *testing.T, m models.Model, X, U [][]float64) (*models.Symbolic, *Trajectory) {
	s, err := models.Derive(m)
	require.NoError(t, err)
	xs, us := make([]graph.Vec, len(X)), make([]graph.Vec, len(U))
	for i := range X {
		xs[i] = constVec(X[i])
	}
	for i := range U {
		us[i] = constVec(U[i])
	}
	return s, Linearize(s, constVec(s.Spec.Defaults()), xs, us)
}

// TestPartialFlowsFollowTiming checks how the partially observable planner's passes are wired
// along a trajectory whose observation model changes from step to step. Without feedback
// (L = 0) and without state-dependent noise (the pendulum: its noise scales with the control)
// the planner's closed-loop filter is the agent's EKF, so its gains must be KalmanGains' for
// the paper's agent and FilterUpdateGainsFlow's (the likelihood's and the simulator's update
// with the observation of x_{t+1}) for the agent that sees first. On light-dark (state-dependent
// observation noise) the backward pass must be backwardPartialTimed run backwards with the
// point of step t+1 for the update after step t (t for the last one, whose update acts no more).
func TestPartialFlowsFollowTiming(t *testing.T) {
	const T = 6
	pend, err := models.Get("pendulum")
	require.NoError(t, err)
	var X, U [][]float64
	for tt := range T + 1 {
		X = append(X, []float64{0.4 * float64(tt), 0.5})
		U = append(U, []float64{0.3})
	}
	U = U[:T]
	var gains [2][]graph.Mat
	for i, timing := range []models.Timing{models.ActThenSee, models.SeeThenAct} {
		s, tr := constTrajectory(t, models.WithTiming(pend, timing), X, U)
		n, k, _, m, _ := dims(s)
		L := make([]graph.Mat, T)
		for tt := range L {
			L[tt] = graph.NewMat(k, n)
		}
		sigma0 := graph.ConstMat(s.Spec.InitialBeliefCov())
		want := KalmanGains(tr, sigma0)
		if timing == models.SeeThenAct {
			want = matsOf(FilterUpdateGainsFlow(graph.Unrolled{}, tr.flat(), graph.Values(graph.Flatten(sigma0))[0]), n, m)
		}
		gains[i] = ClosedLoopMoments(tr, L, sigma0).K
		for tt := range T {
			g, w := numMat(gains[i][tt]), numMat(want[tt])
			for r := range g {
				require.InDeltaSlice(t, w[r], g[r], 1e-12, "%s: K_%d", timing, tt)
			}
		}
	}
	require.NotEqual(t, numMat(gains[0][2]), numMat(gains[1][2]), "the timings filter differently")

	ld, err := models.Get("lightdark")
	require.NoError(t, err)
	X, U = nil, nil
	for tt := range T + 1 {
		X = append(X, []float64{2 + 0.5*float64(tt), 2 - 0.3*float64(tt)})
		U = append(U, []float64{0.5, -0.3})
	}
	U = U[:T]
	s, tr := constTrajectory(t, models.WithTiming(ld, models.SeeThenAct), X, U)
	n, _, _, m, _ := dims(s)
	rng := rand.New(rand.NewPCG(3, 4))
	K, Kv := make([]graph.Mat, T), make([]*graph.Value, T)
	for tt := range T {
		K[tt] = constMat(randDense(rng, n, m))
		Kv[tt] = graph.Values(graph.Flatten(K[tt]))[0]
	}
	got := GainsOf(s, BackwardPassPartialFlow(graph.Unrolled{}, tr.flat(), Kv, RegularizationEps))
	v := partialValue{Sx: graph.Symmetrize(tr.Final.FinalQ()), Sb: graph.NewMat(n, n), Sxb: graph.NewMat(n, n), sx: tr.Final.Finalq(), sb: make(graph.Vec, n)}
	for tt := T - 1; tt >= 0; tt-- {
		var L graph.Mat
		var l graph.Vec
		L, l, _, v = backwardPartialTimed(tr.Steps[tt], tr.Steps[min(tt+1, T-1)], K[tt], v, nil, RegularizationEps)
		for r := range L {
			require.InDeltaSlice(t, numVec(L[r]), numVec(got.L[tt][r]), 1e-12, "L_%d", tt)
		}
		require.InDeltaSlice(t, numVec(l), numVec(got.l[tt]), 1e-12, "l_%d", tt)
	}
}

// TestLightDarkSeeThenAct: on light-dark (non-linear, state-dependent observation noise) the
// partially observable planner of an agent that sees before it acts converges with a
// non-increasing cost, plans otherwise than the paper's agent, and still seeks information:
// it detours towards the light (x₁ = 5) before it reaches the target at the origin.
func TestLightDarkSeeThenAct(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	base, spec, _ := taskDefaults(t, "lightdark")
	theta := []float64{0, 0, 0.2}
	var pols [2]*Policy
	for i, timing := range []models.Timing{models.ActThenSee, models.SeeThenAct} {
		sv, err := NewSolver(models.WithTiming(base, timing), spec.Steps, b, SolverOptions{Planner: models.PlannerPartial})
		require.NoError(t, err)
		pols[i], err = sv.Solve([][]float64{theta}, nil)
		require.NoError(t, err)
		require.True(t, pols[i].Converged[0], "%s converged", timing)
		for it := 1; it < len(pols[i].CostTrace); it++ {
			require.LessOrEqual(t, pols[i].CostTrace[it][0], pols[i].CostTrace[it-1][0], "%s iteration %d", timing, it)
		}
	}
	largest := func(a, b []float64) (diff, size float64) {
		for i := range a {
			diff, size = math.Max(diff, math.Abs(a[i]-b[i])), math.Max(size, math.Abs(a[i]))
		}
		return diff, size
	}
	dL, sL := largest(pols[0].Gain, pols[1].Gain)
	dX, sX := largest(pols[0].Xbar, pols[1].Xbar)
	t.Logf("expected cost: act-then-see %.6g, see-then-act %.6g; largest gain difference %.3g (of %.3g), nominal %.3g (of %.3g)",
		pols[0].Cost[0], pols[1].Cost[0], dL, sL, dX, sX)
	require.Greater(t, dL, 1e-3*sL, "the timings plan differently")

	see := pols[1]
	sv, err := NewSolver(models.WithTiming(base, models.SeeThenAct), spec.Steps, b, SolverOptions{Planner: models.PlannerPartial, Form: "looped"})
	require.NoError(t, err)
	looped, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	require.InDeltaSlice(t, see.Gain, looped.Gain, 1e-9, "looped form: gains")
	require.InDeltaSlice(t, see.Cost, looped.Cost, 1e-9, "looped form: cost")
	m := models.WithTiming(base, models.SeeThenAct)
	xs, err := Simulate(m, see, [][]float64{theta}, b, SimOptions{Trials: 50, Seed: 6, Temperature: spec.Temperature})
	require.NoError(t, err)
	best := math.Inf(-1)
	for step := range xs[0][0] {
		mean := 0.0
		for _, tr := range xs[0] {
			mean += tr[step][0] / float64(len(xs[0]))
		}
		best = math.Max(best, mean)
	}
	final := finalMean(xs[0])
	t.Logf("see-then-act: largest mean x₁ %.3g, final mean %v", best, final)
	assert.Greater(t, best, 3.5, "it moves towards the light")
	assert.Less(t, math.Hypot(final[0], final[1]), 0.2, "and then to the target")
}
