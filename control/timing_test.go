package control

import (
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
