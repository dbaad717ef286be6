package posterior

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Convergence diagnostics of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
// "Rank-normalization, folding, and localization: an improved R̂ for assessing convergence of
// MCMC", Bayesian Analysis 16(2), as computed by the R package posterior: chains are split
// in halves (the middle draw of an odd-length chain is dropped), draws are rank-normalized
// with z = Φ⁻¹((r − 3/8)/(S + 1/4)) over all S draws (ties get their average rank), and the
// effective sample size uses the biased autocovariance of every split chain, summed by
// Geyer's initial positive and initial monotone sequences.
//
// The draws of one parameter are given as x[chain][draw]; every chain must have the same
// number of draws (the functions panic otherwise). A diagnostic is NaN when the draws contain
// a value that is not finite or are all equal, or when there are too few: at least 2 draws a
// split chain (4 a chain) for R̂, and 3 a split chain (6 a chain) for the effective sample
// sizes. The autocovariances are summed directly, lag by lag until Geyer's sequence stops,
// which costs O(draws × lags).

// RHat returns the rank-normalized split R̂: the larger of the split R̂ of the
// rank-normalized draws (bulk) and of the rank-normalized draws folded about their median
// (tails). Values above 1.01 suggest the chains have not mixed.
func RHat(x [][]float64) float64 {
	if !checkDraws(x) {
		return math.NaN()
	}
	bulk := rhatBasic(zScale(splitChains(x)))
	tail := rhatBasic(zScale(splitChains(fold(x))))
	if math.IsNaN(bulk) || math.IsNaN(tail) {
		return math.NaN()
	}
	return math.Max(bulk, tail)
}

// ESS returns the basic effective sample size of the mean, computed on the split chains
// without rank normalization.
func ESS(x [][]float64) float64 {
	if !checkDraws(x) {
		return math.NaN()
	}
	return essBasic(splitChains(x))
}

// ESSBulk returns the bulk effective sample size: the effective sample size of the
// rank-normalized split chains.
func ESSBulk(x [][]float64) float64 {
	if !checkDraws(x) {
		return math.NaN()
	}
	return essBasic(zScale(splitChains(x)))
}

// ESSTail returns the tail effective sample size: the smaller of the effective sample sizes
// of the indicators of the draws at or below the 5% and the 95% quantiles.
func ESSTail(x [][]float64) float64 {
	if !checkDraws(x) {
		return math.NaN()
	}
	pooled := sortedPooled(x)
	ess := math.Inf(1)
	for _, p := range []float64{0.05, 0.95} {
		q := quantileSorted(p, pooled)
		ind := make([][]float64, len(x))
		for c, xc := range x {
			ind[c] = make([]float64, len(xc))
			for i, v := range xc {
				if v <= q {
					ind[c][i] = 1
				}
			}
		}
		ess = math.Min(ess, essBasic(splitChains(ind)))
	}
	return ess
}

// Quantile returns the p-quantile of the pooled draws of all chains, interpolated linearly
// between order statistics (R's default, type 7). It panics if p is outside [0, 1] and
// returns NaN if there are no draws.
func Quantile(p float64, x [][]float64) float64 {
	if p < 0 || p > 1 || math.IsNaN(p) {
		panic(fmt.Sprintf("posterior: quantile probability %g outside [0, 1]", p))
	}
	return quantileSorted(p, sortedPooled(x))
}

// Summary summarizes the draws of one parameter over several chains.
type Summary struct {
	Mean, SD     float64 // mean and standard deviation of the pooled draws
	Q5, Q50, Q95 float64 // 5%, 50% and 95% quantiles (type 7)
	RHat         float64 // rank-normalized split R̂
	ESSBulk      float64 // bulk effective sample size
	ESSTail      float64 // tail effective sample size
}

// Summarize returns the summary of one parameter's draws x[chain][draw].
func Summarize(x [][]float64) Summary {
	pooled := sortedPooled(x)
	if len(pooled) == 0 {
		nan := math.NaN()
		return Summary{nan, nan, nan, nan, nan, nan, nan, nan}
	}
	mean, sd := stat.MeanStdDev(pooled, nil)
	return Summary{Mean: mean, SD: sd,
		Q5: quantileSorted(0.05, pooled), Q50: quantileSorted(0.5, pooled), Q95: quantileSorted(0.95, pooled),
		RHat: RHat(x), ESSBulk: ESSBulk(x), ESSTail: ESSTail(x)}
}

// ParamDraws returns the draws of parameter j in the fitting scale (Chain.Scaled) of the
// given chains, as [chain][draw]. It panics if j is out of range.
func ParamDraws(chains []Chain, j int) [][]float64 {
	x := make([][]float64, len(chains))
	for c := range chains {
		x[c] = make([]float64, len(chains[c].Scaled))
		for i, d := range chains[c].Scaled {
			x[c][i] = d[j]
		}
	}
	return x
}

// SummarizeChains returns the summary of every parameter, in the fitting scale, over the
// given chains (typically one group's: Result.Group). It returns an error if there are no
// chains, a chain failed (Chain.Err) or the chains have different numbers of draws.
func SummarizeChains(chains []Chain) ([]Summary, error) {
	if len(chains) == 0 {
		return nil, fmt.Errorf("posterior: no chains to summarize")
	}
	for i := range chains {
		if chains[i].Err != nil {
			return nil, chains[i].Err
		}
		if len(chains[i].Scaled) != len(chains[0].Scaled) {
			return nil, fmt.Errorf("posterior: chains with %d and %d draws", len(chains[0].Scaled), len(chains[i].Scaled))
		}
	}
	if len(chains[0].Scaled) == 0 {
		return nil, fmt.Errorf("posterior: no draws to summarize")
	}
	dim := len(chains[0].Scaled[0])
	out := make([]Summary, dim)
	for j := range dim {
		out[j] = Summarize(ParamDraws(chains, j))
	}
	return out, nil
}

// checkDraws panics on ragged draws and reports whether they are usable: at least one draw,
// every value finite, not all equal.
func checkDraws(x [][]float64) bool {
	if len(x) == 0 {
		return false
	}
	n := len(x[0])
	for _, xc := range x {
		if len(xc) != n {
			panic(fmt.Sprintf("posterior: chains with %d and %d draws", n, len(xc)))
		}
	}
	if n == 0 {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xc := range x {
		for _, v := range xc {
			if !finite(v) {
				return false
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi-lo >= 2.220446049250313e-16
}

// splitChains returns the first and second halves of every chain as separate chains,
// dropping the middle draw of an odd length; chains of one draw are kept whole.
func splitChains(x [][]float64) [][]float64 {
	n := len(x[0])
	if n < 2 {
		return x
	}
	out := make([][]float64, 0, 2*len(x))
	for _, xc := range x {
		out = append(out, xc[:n/2])
	}
	for _, xc := range x {
		out = append(out, xc[(n+1)/2:])
	}
	return out
}

// fold returns |x − median(x)| with the median of the pooled draws.
func fold(x [][]float64) [][]float64 {
	med := quantileSorted(0.5, sortedPooled(x))
	out := make([][]float64, len(x))
	for c, xc := range x {
		out[c] = make([]float64, len(xc))
		for i, v := range xc {
			out[c][i] = math.Abs(v - med)
		}
	}
	return out
}

// zScale returns the rank-normalized draws, ranks taken over all chains.
func zScale(x [][]float64) [][]float64 {
	type item struct {
		v    float64
		c, i int
	}
	var items []item
	for c, xc := range x {
		for i, v := range xc {
			items = append(items, item{v, c, i})
		}
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].v < items[b].v })
	s := float64(len(items))
	out := make([][]float64, len(x))
	for c, xc := range x {
		out[c] = make([]float64, len(xc))
	}
	for lo := 0; lo < len(items); {
		hi := lo + 1
		for hi < len(items) && items[hi].v == items[lo].v {
			hi++
		}
		rank := float64(lo+1+hi) / 2 // average of the 1-based ranks lo+1 … hi
		z := distuv.UnitNormal.Quantile((rank - 3.0/8) / (s + 0.25))
		for _, it := range items[lo:hi] {
			out[it.c][it.i] = z
		}
		lo = hi
	}
	return out
}

// rhatBasic is the potential scale reduction of Gelman et al. (BDA3) of the given chains.
func rhatBasic(x [][]float64) float64 {
	m, n := len(x), len(x[0])
	if m < 2 || n < 2 {
		return math.NaN()
	}
	means := make([]float64, m)
	var within float64
	for c, xc := range x {
		mu, v := stat.MeanVariance(xc, nil)
		means[c] = mu
		within += v / float64(m)
	}
	between := float64(n) * stat.Variance(means, nil)
	return math.Sqrt((between/within + float64(n) - 1) / float64(n))
}

// essBasic is the effective sample size of the mean of the given chains (Geyer's initial
// monotone sequence on the averaged biased autocovariances).
func essBasic(x [][]float64) float64 {
	m, n := len(x), len(x[0])
	if n < 3 {
		return math.NaN()
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xc := range x {
		for _, v := range xc {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if !(hi-lo >= 2.220446049250313e-16) {
		return math.NaN()
	}
	means := make([]float64, m)
	centred := make([][]float64, m)
	for c, xc := range x {
		means[c] = stat.Mean(xc, nil)
		centred[c] = make([]float64, n)
		for i, v := range xc {
			centred[c][i] = v - means[c]
		}
	}
	// acov returns the biased autocovariance at lag t averaged over the chains.
	acov := func(t int) float64 {
		var s float64
		for _, y := range centred {
			var a float64
			for i := 0; i+t < n; i++ {
				a += y[i] * y[i+t]
			}
			s += a / float64(n)
		}
		return s / float64(m)
	}
	meanVar := acov(0) * float64(n) / float64(n-1)
	varPlus := meanVar * float64(n-1) / float64(n)
	if m > 1 {
		varPlus += stat.Variance(means, nil)
	}
	rho := make([]float64, n)
	rho[0] = 1
	rhoEven, rhoOdd := 1.0, 1-(meanVar-acov(1))/varPlus
	rho[1] = rhoOdd
	t := 0
	// Geyer's initial positive sequence: pairs of autocorrelations while their sum is positive.
	for t < n-5 && !math.IsNaN(rhoEven+rhoOdd) && rhoEven+rhoOdd > 0 {
		t += 2
		rhoEven = 1 - (meanVar-acov(t))/varPlus
		rhoOdd = 1 - (meanVar-acov(t+1))/varPlus
		if rhoEven+rhoOdd >= 0 {
			rho[t], rho[t+1] = rhoEven, rhoOdd
		}
	}
	maxT := t
	if rhoEven > 0 {
		rho[maxT] = rhoEven // used by the improved estimate
	}
	// Geyer's initial monotone sequence.
	for t = 0; t <= maxT-4; {
		t += 2
		if rho[t]+rho[t+1] > rho[t-2]+rho[t-1] {
			rho[t] = (rho[t-2] + rho[t-1]) / 2
			rho[t+1] = rho[t]
		}
	}
	s := float64(m * n)
	tau := -1 + rho[maxT]
	for _, r := range rho[:maxT] {
		tau += 2 * r
	}
	tau = math.Max(tau, 1/math.Log10(s)) // caps the ESS at S·log10(S)
	return s / tau
}

func sortedPooled(x [][]float64) []float64 {
	var pooled []float64
	for _, xc := range x {
		pooled = append(pooled, xc...)
	}
	slices.Sort(pooled)
	return pooled
}

// quantileSorted is the type-7 quantile of sorted values.
func quantileSorted(p float64, sorted []float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := p * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Summary returns the summary of every parameter of group g, in the fitting scale, over the
// group's chains (see SummarizeChains). It panics if g is out of range.
func (r *Result) Summary(g int) ([]Summary, error) { return SummarizeChains(r.Group(g)) }
