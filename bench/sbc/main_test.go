package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUniformity: when the "posterior" is the distribution the truth was drawn from (exact
// calibration) the ranks pass; when it is shifted or too narrow they fail.
func TestUniformity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ranks := func(shift, scale float64) []int {
		var out []int
		for range 400 {
			x := rng.NormFloat64()
			d := make([]float64, 99)
			for i := range d {
				d[i] = shift + scale*rng.NormFloat64()
			}
			out = append(out, rank(d, x))
		}
		return out
	}
	_, p := uniformity(ranks(0, 1), 99, 10)
	assert.Greater(t, p, 0.001, "calibrated")
	_, p = uniformity(ranks(0.5, 1), 99, 10)
	assert.Less(t, p, 1e-6, "biased")
	_, p = uniformity(ranks(0, 0.5), 99, 10)
	assert.Less(t, p, 1e-6, "overconfident")

	// Every rank value once: the statistic is exactly zero, also with bins of unequal size.
	var all []int
	for r := range 106 {
		all = append(all, r)
	}
	chi2, p := uniformity(all, 105, 10)
	assert.InDelta(t, 0, chi2, 1e-12)
	assert.InDelta(t, 1, p, 1e-12)
}

func TestThinningAndRank(t *testing.T) {
	d := []float64{5, 1, 4, 2, 3}
	assert.Equal(t, []float64{5, 1, 2}, thinned(d, 3), "draws 0, 1 and 3 of 5")
	assert.Equal(t, 2, rank(d, 2.5))
}
