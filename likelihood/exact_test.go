package likelihood

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// linearSystem is the "linear" task written out in plain Go matrices, independently of the
// symbolic model and the graphs.
type linearSystem struct {
	A, B, C, V, W, Q, R, QT *mat.Dense
	dt                      float64
}

func newLinearSystem(actionCost, motorNoise, obsNoise float64) linearSystem {
	const dt = 0.1
	return linearSystem{
		A:  mat.NewDense(2, 2, []float64{1, dt, 0, 1}),
		B:  mat.NewDense(2, 1, []float64{0, dt}),
		C:  mat.NewDense(1, 2, []float64{1, 0}),
		V:  mat.NewDense(2, 2, []float64{motorNoise, 0, 0, motorNoise}),
		W:  mat.NewDense(1, 1, []float64{obsNoise}),
		Q:  mat.NewDense(2, 2, []float64{dt, 0, 0, dt}),
		R:  mat.NewDense(1, 1, []float64{actionCost}),
		QT: mat.NewDense(2, 2, []float64{10, 0, 0, 10}),
		dt: dt,
	}
}

func mul(ms ...mat.Matrix) *mat.Dense {
	var out mat.Dense
	out.CloneFrom(ms[0])
	for _, m := range ms[1:] {
		var next mat.Dense
		next.Mul(&out, m)
		out = next
	}
	return &out
}

func add(a, b mat.Matrix) *mat.Dense {
	var out mat.Dense
	out.Add(a, b)
	return &out
}

func inv(a mat.Matrix) *mat.Dense {
	var out mat.Dense
	if err := out.Inverse(a); err != nil {
		panic(err)
	}
	return &out
}

// lqr returns the LQR gains L_t (u = L_t x) and control Hessians H_t for horizon T.
func (s linearSystem) lqr(T int) (L, H []*mat.Dense) {
	L, H = make([]*mat.Dense, T), make([]*mat.Dense, T)
	S := mat.DenseCopyOf(s.QT)
	for t := T - 1; t >= 0; t-- {
		H[t] = add(s.R, mul(s.B.T(), S, s.B))
		G := mul(s.B.T(), S, s.A)
		L[t] = mul(inv(H[t]), G)
		L[t].Scale(-1, L[t])
		ABL := add(s.A, mul(s.B, L[t]))
		S = add(add(s.Q, mul(L[t].T(), s.R, L[t])), mul(ABL.T(), S, ABL))
	}
	return L, H
}

// kalman returns the predictor-form Kalman gains for horizon T.
func (s linearSystem) kalman(T int, P0 *mat.Dense) []*mat.Dense {
	K := make([]*mat.Dense, T)
	P := P0
	for t := range T {
		G := add(mul(s.C, P, s.C.T()), mul(s.W, s.W.T()))
		K[t] = mul(s.A, P, s.C.T(), inv(G))
		AKC := mul(K[t], s.C)
		AKC.Sub(s.A, AKC)
		P = add(mul(s.V, s.V.T()), mul(AKC, P, s.A.T()))
	}
	return K
}

// exactLogLik returns log p(x_1..x_T | x_0) of the joint linear-Gaussian system of state x and
// belief mean b, computed by writing every (x_t, b_t) as an affine function of all the
// Gaussian variables (b_0's deviation, with variance prior in each coordinate, and each step's
// state, observation and policy noise) and evaluating the dense Gaussian density of the
// stacked x_1..x_T.
func (s linearSystem) exactLogLik(X [][]float64, temperature, prior float64) float64 {
	return s.exactLogLikOver(X, temperature, len(X)-1, prior)
}

// exactLogLikOver is exactLogLik of an agent that plans over horizon ≥ T steps.
func (s linearSystem) exactLogLikOver(X [][]float64, temperature float64, horizon int, prior float64) float64 {
	T := len(X) - 1
	L, H := s.lqr(horizon)
	K := s.kalman(horizon, mat.NewDense(2, 2, []float64{1, 0, 0, 1}))
	// Noise variables: b_0 deviation (2), then per step v (2), w (1), ξ (1).
	nE := 2 + 4*T
	type affine struct {
		mean []float64
		coef *mat.Dense // 2 × nE
	}
	x := affine{mean: X[0], coef: mat.NewDense(2, nE, nil)}
	b := affine{mean: X[0], coef: mat.NewDense(2, nE, nil)}
	b.coef.Set(0, 0, math.Sqrt(prior)) // b_0 = x_0 + e, e ~ N(0, prior·I)
	b.coef.Set(1, 1, math.Sqrt(prior))
	var means []float64
	var rows [][]float64
	for t := range T {
		off := 2 + 4*t
		policyStd := 0.0
		if temperature > 0 {
			policyStd = math.Sqrt(temperature / H[t].At(0, 0))
		}
		// u = L b + policyStd·ξ
		uMean := mat.NewVecDense(1, nil)
		uMean.MulVec(L[t], mat.NewVecDense(2, b.mean))
		uCoef := mul(L[t], b.coef)
		uCoef.Set(0, off+3, policyStd)
		// x' = A x + B u + V v
		nx := affine{mean: make([]float64, 2), coef: add(mul(s.A, x.coef), mul(s.B, uCoef))}
		// b' = A b + B u + K (C x + W w − C b)
		nb := affine{mean: make([]float64, 2), coef: add(add(mul(s.A, b.coef), mul(s.B, uCoef)), mul(K[t], s.C, add(x.coef, scaled(-1, b.coef))))}
		for i := range 2 {
			nx.mean[i] = s.A.At(i, 0)*x.mean[0] + s.A.At(i, 1)*x.mean[1] + s.B.At(i, 0)*uMean.AtVec(0)
			nb.mean[i] = s.A.At(i, 0)*b.mean[0] + s.A.At(i, 1)*b.mean[1] + s.B.At(i, 0)*uMean.AtVec(0) +
				K[t].At(i, 0)*(x.mean[0]-b.mean[0])
			for j := range 2 {
				nx.coef.Set(i, off+j, nx.coef.At(i, off+j)+s.V.At(i, j))
			}
			nb.coef.Set(i, off+2, nb.coef.At(i, off+2)+K[t].At(i, 0)*s.W.At(0, 0))
		}
		x, b = nx, nb
		for i := range 2 {
			means = append(means, x.mean[i])
			rows = append(rows, mat.Row(nil, i, x.coef))
		}
	}
	return denseLogLik(X, means, rows, nE)
}

// denseLogLik returns log N(x_1..x_T; means, G Gᵀ) of the states of X after the first (two
// coordinates each), with G's rows the coefficients of each state on nE standard normal
// variables.
func denseLogLik(X [][]float64, means []float64, rows [][]float64, nE int) float64 {
	T := len(X) - 1
	G := mat.NewDense(len(rows), nE, nil)
	for i, r := range rows {
		G.SetRow(i, r)
	}
	var cov mat.SymDense
	cov.SymOuterK(1, G)
	var chol mat.Cholesky
	if !chol.Factorize(&cov) {
		panic("joint covariance not positive definite")
	}
	r := make([]float64, len(means))
	for t := 1; t <= T; t++ {
		for i := range 2 {
			r[(t-1)*2+i] = X[t][i] - means[(t-1)*2+i]
		}
	}
	rv := mat.NewVecDense(len(r), r)
	var z mat.VecDense
	if err := chol.SolveVecTo(&z, rv); err != nil {
		panic(err)
	}
	return -0.5*mat.Dot(rv, &z) - 0.5*chol.LogDet() - 0.5*float64(len(r))*math.Log(2*math.Pi)
}

// linearCases are the linear task's parameters (and policy noise) of the exact tests.
var linearCases = []struct {
	actionCost, motorNoise, obsNoise, temperature float64
}{
	{0.1, 0.05, 0.2, 0},
	{0.1, 0.05, 0.2, 1e-3},
	{1.5, 0.2, 0.05, 1e-2},
}

// noisyLinearTrials returns n trajectories of T steps of a noisy controlled point mass: any
// trajectories will do for an exact likelihood.
func noisyLinearTrials(rng *rand.Rand, n, T int) [][][]float64 {
	var trials [][][]float64
	for range n {
		x := []float64{1, 0}
		tr := [][]float64{x}
		for range T {
			u := -0.8*x[0] - 1.2*x[1]
			x = []float64{x[0] + 0.1*x[1] + 0.05*rng.NormFloat64(), x[1] + 0.1*u + 0.05*rng.NormFloat64()}
			tr = append(tr, x)
		}
		trials = append(trials, tr)
	}
	return trials
}

func scaled(c float64, a mat.Matrix) *mat.Dense {
	var out mat.Dense
	out.Scale(c, a)
	return &out
}

// TestLinearGaussianExact checks the belief-tracking log-likelihood against the exact marginal
// likelihood of the linear-Gaussian special case, where the method makes no approximation:
// with every linearization (at data the backward pass must account for the gaps between the
// data and the model's prediction, or its plan is wrong) and with the agent's initial belief
// at x_0 (the default) or spread around it (the reference's prior).
func TestLinearGaussianExact(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(11, 12))
	const T = 15
	for _, c := range linearCases {
		sys := newLinearSystem(c.actionCost, c.motorNoise, c.obsNoise)
		trials := noisyLinearTrials(rng, 3, T)
		theta := []float64{math.Log10(c.actionCost), math.Log10(c.motorNoise), math.Log10(c.obsNoise)}
		for _, prior := range []float64{0, 1} {
			want := 0.0
			for _, tr := range trials {
				want += sys.exactLogLik(tr, c.temperature, prior)
			}
			for _, lin := range Linearizations {
				opts := Options{Jitter: 1e-13, Temperature: c.temperature, NoPolicyNoise: c.temperature == 0, Linearize: lin}
				if prior > 0 {
					opts.Prior = ReferencePrior(m.Spec())
				}
				e, err := New(m, b, opts)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{trials}, 0)
				require.NoError(t, err)
				ll, _, err := e.Eval(d, [][]float64{theta})
				require.NoError(t, err)
				require.InEpsilon(t, want, ll[0], 1e-8, "case %+v, prior %g, %s: graph %v exact %v", c, prior, lin, ll[0], want)
				t.Logf("case %+v, prior %g, %s: relative error %.2g", c, prior, lin, math.Abs(ll[0]-want)/math.Abs(want))
			}
		}
	}
}
