package likelihood

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// filterGains returns the filter-form Kalman gains of an agent that sees before it acts, for
// horizon T from its first belief's covariance P0: K_t updates its belief with the
// observation of x_{t+1}.
func (s linearSystem) filterGains(T int, P0 *mat.Dense) []*mat.Dense {
	K := make([]*mat.Dense, T)
	P := P0
	for t := range T {
		pred := add(mul(s.A, P, s.A.T()), mul(s.V, s.V.T()))
		S := add(mul(s.C, pred, s.C.T()), mul(s.W, s.W.T()))
		K[t] = mul(pred, s.C.T(), inv(S))
		KC := mul(K[t], s.C)
		KC.Sub(mat.NewDense(2, 2, []float64{1, 0, 0, 1}), KC)
		P = mul(KC, pred)
	}
	return K
}

// exactLogLikSeeThenAct is exactLogLik for an agent that sees before it acts: u_t = L_t b_t
// (+ policy noise), x' = A x + B u + V v, b⁻ = A b + B u, b' = b⁻ + K_t (C x' + W w − C b⁻),
// every x_t and b_t written as an affine function of b_0's deviation and each step's noises,
// and the dense Gaussian density of x_1..x_T evaluated.
func (s linearSystem) exactLogLikSeeThenAct(X [][]float64, temperature float64, prior *mat.Dense) float64 {
	T := len(X) - 1
	L, H := s.lqr(T)
	K := s.filterGains(T, mat.NewDense(2, 2, []float64{1, 0, 0, 1}))
	nE := 2 + 4*T // b_0's deviation, then per step v (2), w (1), ξ (1)
	xMean, bMean := []float64{X[0][0], X[0][1]}, []float64{X[0][0], X[0][1]}
	xCoef, bCoef := mat.NewDense(2, nE, nil), mat.NewDense(2, nE, nil)
	if prior != nil { // b_0 = x_0 + chol(prior)·e
		var c mat.Cholesky
		require := c.Factorize(mat.NewSymDense(2, []float64{prior.At(0, 0), prior.At(0, 1), prior.At(1, 0), prior.At(1, 1)}))
		if !require {
			panic("prior not positive definite")
		}
		var l mat.TriDense
		c.LTo(&l)
		bCoef.Slice(0, 2, 0, 2).(*mat.Dense).Copy(&l)
	}
	mv := func(M *mat.Dense, v []float64) []float64 {
		var out mat.VecDense
		out.MulVec(M, mat.NewVecDense(len(v), v))
		return out.RawVector().Data
	}
	addv := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] + b[i]
		}
		return out
	}
	var means []float64
	var rows [][]float64
	for t := range T {
		off := 2 + 4*t
		uMean := mv(L[t], bMean)
		uCoef := mul(L[t], bCoef)
		if temperature > 0 {
			uCoef.Set(0, off+3, math.Sqrt(temperature/H[t].At(0, 0)))
		}
		nxMean := addv(mv(s.A, xMean), mv(s.B, uMean))
		nxCoef := add(mul(s.A, xCoef), mul(s.B, uCoef))
		for i := range 2 {
			for j := range 2 {
				nxCoef.Set(i, off+j, nxCoef.At(i, off+j)+s.V.At(i, j))
			}
		}
		predMean := addv(mv(s.A, bMean), mv(s.B, uMean))
		predCoef := add(mul(s.A, bCoef), mul(s.B, uCoef))
		// b' = pred + K (C x' + W w − C pred)
		innovMean := addv(mv(s.C, nxMean), mv(scaled(-1, s.C), predMean))
		innovCoef := add(mul(s.C, nxCoef), scaled(-1, mul(s.C, predCoef)))
		innovCoef.Set(0, off+2, innovCoef.At(0, off+2)+s.W.At(0, 0))
		bMean = addv(predMean, mv(K[t], innovMean))
		bCoef = add(predCoef, mul(K[t], innovCoef))
		xMean, xCoef = nxMean, nxCoef
		for i := range 2 {
			means = append(means, xMean[i])
			rows = append(rows, mat.Row(nil, i, xCoef))
		}
	}
	return denseLogLik(X, means, rows, nE)
}

// TestSeeThenActExact checks the likelihood of an agent that sees before it acts
// (models.SeeThenAct) against the exact marginal likelihood of the linear-Gaussian case,
// computed densely, with every linearization, the tracked and the nominal filter, with and
// without policy noise, and with the agent's first belief at x_0 or spread around it by a
// full covariance. The same data under the paper's timing give another value (the timings
// are different agents), which the test also checks, so that a timing ignored somewhere fails.
func TestSeeThenActExact(t *testing.T) {
	base, err := models.Get("linear")
	require.NoError(t, err)
	m := models.WithTiming(base, models.SeeThenAct)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(21, 22))
	const T = 12
	for _, c := range linearCases {
		sys := newLinearSystem(c.actionCost, c.motorNoise, c.obsNoise)
		trials := noisyLinearTrials(rng, 3, T)
		theta := []float64{math.Log10(c.actionCost), math.Log10(c.motorNoise), math.Log10(c.obsNoise)}
		for _, prior := range [][][]float64{nil, {{0.3, 0.1}, {0.1, 0.2}}} {
			var P *mat.Dense
			if prior != nil {
				P = mat.NewDense(2, 2, []float64{prior[0][0], prior[0][1], prior[1][0], prior[1][1]})
			}
			want, paper := 0.0, 0.0
			for _, tr := range trials {
				want += sys.exactLogLikSeeThenAct(tr, c.temperature, P)
				if prior == nil {
					paper += sys.exactLogLik(tr, c.temperature, 0)
				}
			}
			for _, lin := range Linearizations {
				for _, nominal := range []bool{false, true} {
					opts := Options{Jitter: 1e-13, Temperature: c.temperature, NoPolicyNoise: c.temperature == 0,
						Linearize: lin, NominalFilter: nominal, Prior: prior}
					e, err := New(m, b, opts)
					require.NoError(t, err)
					d, err := e.Prepare([][][][]float64{trials}, 0)
					require.NoError(t, err)
					ll, grad, err := e.Eval(d, [][]float64{theta})
					require.NoError(t, err)
					require.InEpsilon(t, want, ll[0], 1e-8, "case %+v, prior %v, %s, nominal %v", c, prior, lin, nominal)
					for _, g := range grad[0] {
						require.False(t, math.IsNaN(g))
					}
					if prior == nil {
						require.Greater(t, math.Abs(want-paper), 1e-3*math.Abs(want), "the timings are different agents")
					}
				}
			}
		}
	}
}

// TestSeeThenActPlanner: the partially observable planner is written for the paper's timing;
// asking for it with an agent that sees first is an error that says so, in the likelihood
// and the planner.
func TestSeeThenActPlanner(t *testing.T) {
	base, err := models.Get("linear")
	require.NoError(t, err)
	m := models.WithTiming(base, models.SeeThenAct)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	_, err = New(m, b, Options{Planner: models.PlannerPartial})
	require.ErrorContains(t, err, "see-then-act")
	_, err = control.NewSolver(m, 10, b, control.SolverOptions{Planner: models.PlannerPartial})
	require.ErrorContains(t, err, "see-then-act")
}
