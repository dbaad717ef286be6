package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/posterior"
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

// TestRunCoverageAndWidth: on two sets whose draws are 0.5, 1.0, …, 50 (natural units; a
// log10 parameter in the fits), a truth at 10 lies inside the draws' 90 % interval and one at
// 60 outside, and the interval's width is reported in decades.
func TestRunCoverageAndWidth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	write("truth.csv", "subject,a\ns1,10\ns2,60\n") // robustness.py names the key subject
	var draws strings.Builder
	draws.WriteString("subject,chain,draw,a,log_posterior\n")
	var d []float64
	for _, s := range []string{"s1", "s2"} {
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&draws, "%s,1,%d,%g,0\n", s, i, 0.5*float64(i))
			if s == "s1" {
				d = append(d, 0.5*float64(i))
			}
		}
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "post"), 0o755))
	write("post/draws.csv", draws.String())
	fits := write("fit.jsonl", `{"subject":"s1","params":{"a":10},"scale":{"a":"log10"},"stderr_scaled":{"a":0.1},"uncertainty":"robust"}
{"subject":"s2","params":{"a":10},"scale":{"a":"log10"},"stderr_scaled":{"a":0.1},"uncertainty":"robust"}
`)
	var out strings.Builder
	require.NoError(t, run(dir, []string{filepath.Join(dir, "post")}, fits, 20, &out))
	width := math.Log10(posterior.Quantile(0.95, [][]float64{d})) - math.Log10(posterior.Quantile(0.05, [][]float64{d}))
	assert.Contains(t, out.String(), fmt.Sprintf("| 50.0 %% | %.4g | 50.0 %% |", width), "half covered; the width in decades; Laplace: 10 ± 0.16 decades holds 10, not 60")
}
