package posterior

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// ar1 returns chains of a stationary Gaussian AR(1) process xₜ = φxₜ₋₁ + √(1−φ²)·εₜ.
func ar1(chains, n int, phi float64, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([][]float64, chains)
	for c := range x {
		x[c] = make([]float64, n)
		v := rng.NormFloat64()
		for i := range n {
			x[c][i] = v
			v = phi*v + math.Sqrt(1-phi*phi)*rng.NormFloat64()
		}
	}
	return x
}

func TestDiagnosticsIID(t *testing.T) {
	for seed := range uint64(3) {
		x := ar1(4, 1000, 0, seed)
		assert.InDelta(t, 1, RHat(x), 0.01, "R-hat")
		assert.InEpsilon(t, 4000, ESS(x), 0.2, "ESS")
		assert.InEpsilon(t, 4000, ESSBulk(x), 0.2, "bulk ESS")
		assert.InEpsilon(t, 4000, ESSTail(x), 0.25, "tail ESS")
	}
}

func TestDiagnosticsAR1(t *testing.T) {
	const phi, chains, n = 0.9, 4, 25000
	want := float64(chains*n) * (1 - phi) / (1 + phi)
	for seed := range uint64(2) {
		x := ar1(chains, n, phi, seed)
		assert.InEpsilon(t, want, ESS(x), 0.2, "ESS")
		assert.InEpsilon(t, want, ESSBulk(x), 0.2, "bulk ESS")
		assert.InDelta(t, 1, RHat(x), 0.01)
		assert.InEpsilon(t, 2*(1-phi), EBFMI(x[0]), 0.1, "E-BFMI of an AR(1) series is 2(1−φ)")
	}
}

func TestRHatDetects(t *testing.T) {
	// One chain shifted by one standard deviation.
	x := ar1(4, 500, 0.5, 1)
	for i := range x[3] {
		x[3][i]++
	}
	assert.Greater(t, RHat(x), 1.1)
	// Chains with the same location and different scales: only the folded R-hat sees it.
	x = ar1(4, 500, 0, 2)
	for i := range x[3] {
		x[3][i] *= 4
	}
	assert.Less(t, rhatBasic(zScale(splitChains(x))), 1.05)
	assert.Greater(t, RHat(x), 1.1)
	// A trend within chains: split R-hat sees it.
	x = ar1(4, 500, 0, 3)
	for c := range x {
		for i := range x[c] {
			x[c][i] += 3 * float64(i) / 500
		}
	}
	assert.Greater(t, RHat(x), 1.1)
}

// TestDiagnosticsReference compares with values computed by a line-by-line transcription of
// the R package posterior's rhat, ess_basic, ess_bulk and ess_tail (version 1.6, direct
// autocovariances instead of the FFT) on a small odd-length sample with ties.
func TestDiagnosticsReference(t *testing.T) {
	x := [][]float64{
		{0.1, 0.3, 0.3, -0.2, 0.5, 0.9, 1.2, 0.8, 0.4, 0.4, 0.1, -0.5, -0.3, 0.0, 0.2},
		{1.1, 0.7, 0.9, 1.5, 1.3, 0.8, 0.6, 0.9, 1.0, 1.4, 1.8, 1.2, 0.7, 0.3, 0.5},
		{-0.4, -0.1, 0.2, 0.6, 0.3, 0.3, 0.0, -0.6, -0.9, -0.2, 0.4, 0.8, 0.5, 0.1, -0.3},
		{0.2, 0.9, -0.7, 0.4, 1.6, -0.2, 0.3, 0.8, -1.1, 0.6, 0.0, 0.3, 1.0, -0.4, 0.7},
	}
	ref := struct{ rhat, ess, bulk, tail, q5, q50, q95 float64 }{
		rhat: 1.1875609639585016, ess: 31.325513196480944, bulk: 31.230530928216538, tail: 72.4403669724771,
		q5: -0.605, q50: 0.4, q95: 1.405,
	}
	assert.InDelta(t, ref.rhat, RHat(x), 1e-12, "R-hat")
	assert.InDelta(t, ref.ess, ESS(x), 1e-10, "ESS")
	assert.InDelta(t, ref.bulk, ESSBulk(x), 1e-10, "bulk ESS")
	assert.InDelta(t, ref.tail, ESSTail(x), 1e-10, "tail ESS")
	s := Summarize(x)
	assert.InDelta(t, ref.q5, s.Q5, 1e-12)
	assert.InDelta(t, ref.q50, s.Q50, 1e-12)
	assert.InDelta(t, ref.q95, s.Q95, 1e-12)
}

func TestQuantile(t *testing.T) {
	x := [][]float64{{3, 1, 2, 5, 4}, {10, 9, 8, 7, 6}}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {0.05, 1.45}, {0.5, 5.5}, {0.95, 9.55}, {1, 10}} {
		assert.InDelta(t, c.want, Quantile(c.p, x), 1e-12, "p = %g", c.p) // R: quantile(1:10, p)
	}
	assert.Panics(t, func() { Quantile(1.5, x) })
	assert.True(t, math.IsNaN(Quantile(0.5, nil)))
}

func TestDiagnosticsDegenerate(t *testing.T) {
	constant := [][]float64{{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}}
	withNaN := [][]float64{{1, 2, 3, 4, 5, math.NaN()}, {1, 2, 3, 4, 5, 6}}
	short := [][]float64{{1, 2, 3, 4}, {3, 4, 5, 7}}
	for name, x := range map[string][][]float64{"constant": constant, "NaN": withNaN, "empty": {}} {
		assert.True(t, math.IsNaN(RHat(x)), name)
		assert.True(t, math.IsNaN(ESSBulk(x)), name)
		assert.True(t, math.IsNaN(ESSTail(x)), name)
		assert.True(t, math.IsNaN(ESS(x)), name)
	}
	assert.True(t, math.IsNaN(ESSBulk(short)), "too short for the ESS")
	assert.False(t, math.IsNaN(RHat(short)))
	assert.Panics(t, func() { RHat([][]float64{{1, 2, 3}, {1, 2}}) })
	assert.True(t, math.IsNaN(EBFMI([]float64{1})))
	assert.True(t, math.IsNaN(EBFMI([]float64{2, 2, 2})))
	s := Summarize(nil)
	assert.True(t, math.IsNaN(s.Mean) && math.IsNaN(s.ESSTail))
}

func TestSplitChains(t *testing.T) {
	assert.Equal(t, [][]float64{{1, 2}, {6, 7}, {4, 5}, {9, 10}}, splitChains([][]float64{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}}))
	assert.Equal(t, [][]float64{{1, 2}, {3, 4}}, splitChains([][]float64{{1, 2, 3, 4}}))
}

func TestZScaleTies(t *testing.T) {
	z := zScale([][]float64{{2, 1, 2}, {3, 2, 0}})
	// Ranks 4, 2, 4 / 6, 4, 1 with S = 6: z = Φ⁻¹((r − 3/8)/6.25).
	assert.Equal(t, z[0][0], z[0][2])
	assert.Equal(t, z[0][0], z[1][1])
	assert.InDelta(t, 0.20189347914185077, z[0][0], 1e-9) // Φ⁻¹(0.58)
	assert.Less(t, z[1][2], z[0][1])
	assert.Greater(t, z[1][0], z[0][0])
}
