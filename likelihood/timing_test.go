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

// TestSeeThenActPartialPlanner: the partially observable planner follows an agent that sees
// before it acts. In the linear-Gaussian case its control law is the fully observable
// planner's (separation), so the likelihood of such an agent with it must still be the exact
// one of TestSeeThenActExact's dense computation, with every linearization, the tracked and the
// nominal filter. On light-dark (state-dependent observation noise) the planner matters: on
// the same data its likelihood differs from the fully observable planner's and from the
// paper's agent's, and is finite.
func TestSeeThenActPartialPlanner(t *testing.T) {
	base, err := models.Get("linear")
	require.NoError(t, err)
	m := models.WithTiming(base, models.SeeThenAct)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(23, 24))
	const T = 12
	for _, c := range linearCases {
		sys := newLinearSystem(c.actionCost, c.motorNoise, c.obsNoise)
		trials := noisyLinearTrials(rng, 3, T)
		theta := []float64{math.Log10(c.actionCost), math.Log10(c.motorNoise), math.Log10(c.obsNoise)}
		want := 0.0
		for _, tr := range trials {
			want += sys.exactLogLikSeeThenAct(tr, c.temperature, nil)
		}
		for _, lin := range Linearizations {
			for _, nominal := range []bool{false, true} {
				opts := Options{Planner: models.PlannerPartial, Jitter: 1e-13, Temperature: c.temperature, NoPolicyNoise: c.temperature == 0,
					Linearize: lin, NominalFilter: nominal}
				e, err := New(m, b, opts)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{trials}, 0)
				require.NoError(t, err)
				ll, _, err := e.Eval(d, [][]float64{theta})
				require.NoError(t, err)
				require.InEpsilon(t, want, ll[0], 1e-8, "case %+v, %s, nominal %v", c, lin, nominal)
			}
		}
	}

	ld, err := models.Get("lightdark")
	require.NoError(t, err)
	see := models.WithTiming(ld, models.SeeThenAct)
	natural, theta := testTheta(ld.Spec())
	trials := simulateTrialsWith(t, see, models.PlannerPartial, control.ObservePartial, natural, 5, 20, 7)
	// eval returns the log-likelihood of the trials, checking that the looped form gives the
	// unrolled one's value and gradient.
	eval := func(m models.Model, opts Options) float64 {
		var lls [2]float64
		var grads [2][]float64
		for i, form := range []Form{FormUnrolled, FormLooped} {
			opts.Form = form
			e, err := New(m, b, opts)
			require.NoError(t, err)
			d, err := e.Prepare([][][][]float64{trials}, 0)
			require.NoError(t, err)
			ll, grad, err := e.Eval(d, [][]float64{theta})
			require.NoError(t, err)
			require.False(t, math.IsInf(ll[0], 0) || math.IsNaN(ll[0]))
			lls[i], grads[i] = ll[0], grad[0]
		}
		require.InEpsilon(t, lls[0], lls[1], 1e-9, "looped form")
		for j := range grads[0] {
			require.InDelta(t, grads[0][j], grads[1][j], 1e-9*math.Max(1, math.Abs(grads[0][j])), "looped form, gradient %d", j)
		}
		return lls[0]
	}
	ilqg := func(planner models.Planner) Options { return Options{Planner: planner, Linearize: LinearizeILQG} }
	partial, full, paper := eval(see, ilqg(models.PlannerPartial)), eval(see, ilqg(models.PlannerFull)), eval(ld, ilqg(models.PlannerPartial))
	// The filter-form gains along the data in both forms, for both planners.
	for _, planner := range []models.Planner{models.PlannerPartial, models.PlannerFull} {
		eval(see, Options{Planner: planner, NominalFilter: true})
	}
	t.Logf("light-dark, see-then-act data: partial planner %.6g, full planner %.6g, act-then-see partial %.6g", partial, full, paper)
	require.Greater(t, math.Abs(partial-full), 1e-3*math.Abs(partial), "the planners differ")
	require.Greater(t, math.Abs(partial-paper), 1e-3*math.Abs(partial), "the timings differ")
	require.Greater(t, partial, paper, "the agent that made the data describes them best")
}
