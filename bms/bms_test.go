package bms

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/integrate/quad"
)

// exactTwoModels computes, by quadrature over r = r_1 ∈ (0, 1), the exact posterior of the
// model frequencies of two models, p(r | y) ∝ Beta(r; α0_1, α0_2) Π_n (r e^{L_n1} + (1 − r)
// e^{L_n2}): its log normalizing constant, the exact log p(y | H1), its mean E[r_1 | y] and
// P(r_1 > ½ | y). An independent computation: no variational approximation.
func exactTwoModels(logEv [][]float64, prior []float64) (logZ, mean, above float64) {
	shift := 0.0
	for _, row := range logEv {
		shift += math.Max(row[0], row[1])
	}
	lb, _ := math.Lgamma(prior[0])
	lb2, _ := math.Lgamma(prior[1])
	lb3, _ := math.Lgamma(prior[0] + prior[1])
	logBeta := lb + lb2 - lb3
	logDensity := func(r float64) float64 {
		s := (prior[0]-1)*math.Log(r) + (prior[1]-1)*math.Log(1-r) - logBeta
		for _, row := range logEv {
			m := math.Max(row[0], row[1])
			s += math.Log(r*math.Exp(row[0]-m) + (1-r)*math.Exp(row[1]-m))
		}
		return s
	}
	// The density's peak sets the scale of the integrands.
	peak := math.Inf(-1)
	for i := 1; i < 10000; i++ {
		peak = math.Max(peak, logDensity(float64(i)/10000))
	}
	integral := func(lo, hi float64, f func(r float64) float64) float64 {
		const panels = 2000
		s, w := 0.0, (hi-lo)/panels
		for i := range panels {
			s += quad.Fixed(func(r float64) float64 { return f(r) * math.Exp(logDensity(r)-peak) },
				lo+float64(i)*w, lo+float64(i+1)*w, 20, quad.Legendre{}, 0)
		}
		return s
	}
	one := func(float64) float64 { return 1 }
	z := integral(0, 1, one)
	logZ = shift + peak + math.Log(z)
	mean = integral(0, 1, func(r float64) float64 { return r }) / z
	above = integral(0.5, 1, one) / z
	return logZ, mean, above
}

// TestExceedanceTwoModels: for two models the exact exceedance probabilities from the Beta
// distribution agree with Monte Carlo draws of the Dirichlet (within 4 standard errors) and
// with the Gamma integral that Exceedance uses for more models (to 1e-9), also for α < 1 and
// for hundreds of subjects; they sum to 1.
func TestExceedanceTwoModels(t *testing.T) {
	const draws = 200000
	for i, alpha := range [][]float64{{1, 1}, {3, 2}, {16, 6}, {0.5, 2.5}, {0.3, 0.7}, {250.5, 240.5}, {21, 1}, {1, 41}} {
		beta := Exceedance(alpha)
		assert.InDelta(t, 1, beta[0]+beta[1], 1e-12, "%v", alpha)
		mc := ExceedanceMC(alpha, draws, rand.NewPCG(uint64(i), 7))
		se := math.Sqrt(beta[0]*(1-beta[0])/draws) + 1e-9
		assert.InDelta(t, beta[0], mc[0], 4*se, "%v: beta %v, monte carlo %v", alpha, beta, mc)
		for k := range 2 {
			assert.InDelta(t, beta[k], exceedanceOf(alpha, k), 1e-9, "%v: model %d, beta against the integral", alpha, k)
		}
	}
	assert.InDeltaSlice(t, []float64{0.5, 0.5}, Exceedance([]float64{4, 4}), 1e-12)
}

// TestExceedanceManyModels: the integral for three to five models agrees with Monte Carlo
// (within 4 standard errors) and sums to 1 (to 1e-9).
func TestExceedanceManyModels(t *testing.T) {
	const draws = 200000
	for i, alpha := range [][]float64{{1, 1, 1}, {5, 3, 2}, {0.4, 0.9, 3}, {12, 11, 1, 1}, {100.2, 95.1, 90.3, 1, 2.5}, {1, 1, 30}} {
		ep := Exceedance(alpha)
		mc := ExceedanceMC(alpha, draws, rand.NewPCG(uint64(i), 11))
		sum := 0.0
		for k := range alpha {
			se := math.Sqrt(ep[k]*(1-ep[k])/draws) + 1e-9
			assert.InDelta(t, ep[k], mc[k], 4*se, "%v: model %d: integral %v, monte carlo %v", alpha, k, ep, mc)
			sum += ep[k]
		}
		assert.InDelta(t, 1, sum, 1e-9, "%v: %v", alpha, ep)
	}
	ep := Exceedance([]float64{2, 2, 2})
	for k := range ep {
		assert.InDelta(t, 1.0/3, ep[k], 1e-10, "equal parameters")
	}
}

// TestCompareAgainstExactPosterior: for two models, the variational posterior's expected
// frequency and exceedance probability agree with the exact posterior computed by quadrature
// where the subjects are well separated (each favours one model by 8 nats or more), and its
// free energy is a lower bound on the exact log evidence of H1, close to it there; the
// omnibus risk from the exact evidence agrees with the variational one.
func TestCompareAgainstExactPosterior(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name      string
		favour    int     // subjects favouring model 0; the others favour model 1
		n         int     // subjects
		margin    float64 // log Bayes factor of each subject, at least
		separated bool
	}{
		{"15 of 20, separated", 15, 20, 8, true},
		{"8 of 10, separated", 8, 10, 12, true},
		{"12 of 20, separated", 12, 20, 10, true},
		{"6 of 10, weak", 6, 10, 0.2, false},
	}
	for _, c := range cases {
		L := make([][]float64, c.n)
		for n := range L {
			d := c.margin + 2*rng.Float64()
			base := -1000 * rng.Float64()
			if n < c.favour {
				L[n] = []float64{base + d, base}
			} else {
				L[n] = []float64{base, base + d}
			}
		}
		r, err := Compare(L, Options{})
		require.NoError(t, err, c.name)
		logZ, mean, above := exactTwoModels(L, r.Prior)
		assert.LessOrEqual(t, r.FreeEnergy, logZ+1e-9, "%s: the free energy bounds the log evidence", c.name)
		if c.separated {
			assert.InDelta(t, mean, r.Frequency[0], 0.005, "%s: expected frequency, exact %g", c.name, mean)
			assert.InDelta(t, above, r.Exceedance[0], 0.01, "%s: exceedance, exact %g", c.name, above)
			assert.InDelta(t, logZ, r.FreeEnergy, 0.01, "%s: free energy against the exact log evidence", c.name)
			exactBOR := 1 / (1 + math.Exp(logZ-r.NullEvidence))
			assert.InDelta(t, exactBOR, r.BOR, 0.01, "%s: omnibus risk", c.name)
			for n := range L {
				assert.Equal(t, map[bool]int{true: 0, false: 1}[n < c.favour], r.Best[n], "%s: subject %d", c.name, n)
			}
		} else {
			assert.InDelta(t, mean, r.Frequency[0], 0.05, "%s: expected frequency, exact %g", c.name, mean)
		}
	}
}

// TestCompareEqualEvidence: a subject whose data do not tell the models apart (the same
// evidence under each) leaves them as the prior has them: frequencies ½, exceedance ½, so
// protected exceedance ½, whatever the omnibus risk. For identical evidences the null and the
// alternative explain the data equally well (exact BOR ½), and the free energy, a lower bound
// on the alternative's evidence, puts BOR at ½ or above. Evidences that differ by noise
// alone (±0.3 nats), half of 20 subjects each way, favour the null: BOR 0.79.
func TestCompareEqualEvidence(t *testing.T) {
	for _, K := range []int{2, 3} {
		L := make([][]float64, 20)
		for n := range L {
			L[n] = make([]float64, K)
			for k := range L[n] {
				L[n][k] = -50 - float64(n)
			}
		}
		r, err := Compare(L, Options{})
		require.NoError(t, err)
		for k := range K {
			assert.InDelta(t, 1/float64(K), r.Frequency[k], 1e-12, "K=%d", K)
			assert.InDelta(t, 1/float64(K), r.Exceedance[k], 1e-9, "K=%d", K)
			assert.InDelta(t, 1/float64(K), r.Protected[k], 1e-9, "K=%d", K)
		}
		assert.GreaterOrEqual(t, r.BOR, 0.5, "K=%d", K)
	}
	L := make([][]float64, 20)
	for n := range L {
		d := 0.3 * float64(1-2*(n%2))
		L[n] = []float64{d, -d}
	}
	r, err := Compare(L, Options{})
	require.NoError(t, err)
	assert.Greater(t, r.BOR, 0.75, "noise only")
	assert.InDelta(t, 0.5, r.Protected[0], 0.05)
}

// TestCompareStrongEvidence: every subject favours model 1 of three by 20 nats: its expected
// frequency is (N+1)/(N+3), its protected exceedance probability tends to 1 and the omnibus
// risk to 0 as N grows (5 subjects: BOR 0.08; 20: 7e-8); each subject's most probable model
// is model 1.
func TestCompareStrongEvidence(t *testing.T) {
	for _, N := range []int{5, 20} {
		L := make([][]float64, N)
		for n := range L {
			L[n] = []float64{-120, -100, -130}
		}
		r, err := Compare(L, Options{})
		require.NoError(t, err)
		assert.InDelta(t, float64(N+1)/float64(N+3), r.Frequency[1], 1e-6, "N=%d", N)
		if N == 5 {
			assert.Less(t, r.BOR, 0.1, "N=%d", N)
		} else {
			assert.Greater(t, r.Protected[1], 0.9999)
			assert.Less(t, r.BOR, 1e-6)
		}
		for n := range L {
			assert.Equal(t, 1, r.Best[n])
		}
	}
}

// TestCompareInvariance: adding a constant to a subject's row (the evidences' arbitrary
// offset) changes nothing but the free energies, and reordering the models reorders the
// results.
func TestCompareInvariance(t *testing.T) {
	L := [][]float64{{-10, -12, -11}, {-5, -4, -9}, {-20, -26, -19}, {-7, -7.5, -8}, {-3, -1, -6}}
	r, err := Compare(L, Options{})
	require.NoError(t, err)
	shifted := make([][]float64, len(L))
	swapped := make([][]float64, len(L))
	for n, row := range L {
		shifted[n] = []float64{row[0] + 1e4*float64(n), row[1] + 1e4*float64(n), row[2] + 1e4*float64(n)}
		swapped[n] = []float64{row[2], row[0], row[1]}
	}
	s, err := Compare(shifted, Options{})
	require.NoError(t, err)
	assert.InDeltaSlice(t, r.Alpha, s.Alpha, 1e-9)
	assert.InDelta(t, r.BOR, s.BOR, 1e-6)
	assert.InDeltaSlice(t, r.Protected, s.Protected, 1e-6)
	w, err := Compare(swapped, Options{})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{r.Alpha[2], r.Alpha[0], r.Alpha[1]}, w.Alpha, 1e-9)
	assert.InDeltaSlice(t, []float64{r.Exceedance[2], r.Exceedance[0], r.Exceedance[1]}, w.Exceedance, 1e-9)
	assert.InDelta(t, r.FreeEnergy, w.FreeEnergy, 1e-9)
}

// TestCompareFixedPoint: at the fixed point the free energy is at a maximum: moving α or a
// subject's posterior away from it lowers F1; and the Monte Carlo exceedance option agrees
// with the exact one.
func TestCompareFixedPoint(t *testing.T) {
	L := [][]float64{{-10, -12, -11}, {-5, -4, -9}, {-20, -26, -19}, {-7, -7.5, -8}, {-3, -1, -6}, {-2, -2.2, -2.1}}
	r, err := Compare(L, Options{})
	require.NoError(t, err)
	assert.InDelta(t, r.FreeEnergy, FreeEnergy(L, r.Prior, r.Alpha, r.Posterior), 1e-12)
	for k := range r.Alpha {
		for _, d := range []float64{-0.05, 0.05} {
			a := append([]float64(nil), r.Alpha...)
			a[k] += d
			assert.Less(t, FreeEnergy(L, r.Prior, a, r.Posterior), r.FreeEnergy, "α_%d %+g", k, d)
		}
	}
	g := make([][]float64, len(L))
	for n := range g {
		g[n] = append([]float64(nil), r.Posterior[n]...)
	}
	g[3][0], g[3][1] = g[3][0]+0.01, g[3][1]-0.01
	assert.Less(t, FreeEnergy(L, r.Prior, r.Alpha, g), r.FreeEnergy)
	mc, err := Compare(L, Options{Samples: 200000, Seed: 3})
	require.NoError(t, err)
	assert.Equal(t, "monte carlo", mc.ExceedanceMethod)
	assert.Equal(t, "integration", r.ExceedanceMethod)
	assert.InDeltaSlice(t, r.Exceedance, mc.Exceedance, 0.005)
	again, err := Compare(L, Options{Samples: 200000, Seed: 3})
	require.NoError(t, err)
	assert.Equal(t, mc.Exceedance, again.Exceedance, "the seed fixes the draws")
}

// reference is one case of testdata/groupbmc.json, computed by the groupBMC Python package
// (a port of the VBA toolbox's VBA_groupBMC; bench/bms/groupbmc_reference.py).
type reference struct {
	Name        string      `json:"name"`
	LogEvidence [][]float64 `json:"log_evidence"` // subjects × models
	Prior       []float64   `json:"prior"`
	Alpha       []float64   `json:"alpha"`
	Frequency   []float64   `json:"frequency"`
	Exceedance  []float64   `json:"exceedance"`
	Protected   []float64   `json:"protected_exceedance"`
	BOR         float64     `json:"bor"`
	F0          float64     `json:"f0"`
	F1          float64     `json:"f1"`
	Posterior   [][]float64 `json:"posterior"` // subjects × models
}

// TestCompareReference: the numbers of the VBA toolbox's algorithm, as the groupBMC Python
// package computes them (run to convergence; testdata/groupbmc.json says how it was made),
// for two to four models, with its default prior (1/K a model) and a flat one (1): they agree
// to 1e-9 (α, the exceedance probabilities) and 1e-13 (BOR, the free energies).
func TestCompareReference(t *testing.T) {
	b, err := os.ReadFile("testdata/groupbmc.json")
	require.NoError(t, err)
	var file struct {
		Command string      `json:"command"`
		Cases   []reference `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &file))
	require.NotEmpty(t, file.Cases)
	for _, c := range file.Cases {
		r, err := Compare(c.LogEvidence, Options{Prior: c.Prior})
		require.NoError(t, err, c.Name)
		assert.InDeltaSlice(t, c.Alpha, r.Alpha, 1e-8, "%s: alpha", c.Name)
		assert.InDeltaSlice(t, c.Frequency, r.Frequency, 1e-9, "%s: frequency", c.Name)
		assert.InDeltaSlice(t, c.Exceedance, r.Exceedance, 1e-8, "%s: exceedance", c.Name)
		assert.InDeltaSlice(t, c.Protected, r.Protected, 1e-8, "%s: protected exceedance", c.Name)
		assert.InDelta(t, c.BOR, r.BOR, 1e-9, "%s: BOR", c.Name)
		assert.InDelta(t, c.F0, r.NullEvidence, 1e-9*math.Max(1, math.Abs(c.F0)), "%s: F0", c.Name)
		assert.InDelta(t, c.F1, r.FreeEnergy, 1e-9*math.Max(1, math.Abs(c.F1)), "%s: F1", c.Name)
		for n := range c.Posterior {
			assert.InDeltaSlice(t, c.Posterior[n], r.Posterior[n], 1e-8, "%s: subject %d", c.Name, n)
		}
	}
}

// TestCompareErrors: malformed input is an error that says what is wrong.
func TestCompareErrors(t *testing.T) {
	for _, c := range []struct {
		L    [][]float64
		opts Options
		want string
	}{
		{nil, Options{}, "no subjects"},
		{[][]float64{{1}}, Options{}, "two at least"},
		{[][]float64{{1, 2}, {1}}, Options{}, "subject 1 has 1"},
		{[][]float64{{1, math.NaN()}}, Options{}, "NaN"},
		{[][]float64{{1, math.Inf(-1)}}, Options{}, "-Inf"},
		{[][]float64{{1, 2}}, Options{Prior: []float64{1}}, "1 prior counts for 2 models"},
		{[][]float64{{1, 2}}, Options{Prior: []float64{1, 0}}, "must be finite and > 0"},
		{[][]float64{{1, 2}, {2, 1}, {0, 0.5}}, Options{MaxIter: 1, Tol: 1e-15}, "did not converge"},
	} {
		_, err := Compare(c.L, c.opts)
		if assert.Error(t, err, c.want) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
	assert.Panics(t, func() { Exceedance([]float64{1}) })
	assert.Panics(t, func() { Exceedance([]float64{1, -1}) })
	assert.Panics(t, func() { ExceedanceMC([]float64{1, 1}, 0, rand.NewPCG(1, 1)) })
}
