package posterior

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// TestPooledEstimate: the metric estimated from several chains' window accumulators is the
// covariance of all their draws together (about their common mean), regularized as one
// window of that many draws, dense and diagonal.
func TestPooledEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const dim = 3
	sizes := []int{7, 12, 5, 9}
	var all [][]float64
	var stats []windowStats
	for c, n := range sizes {
		v := newVarAdapter(dim, 1000, 0, 0, n, true) // one window of n draws from the first
		m := unitMetric(dim, true)
		pool := func(st windowStats) ([]windowStats, error) {
			stats = append(stats, st)
			return []windowStats{st}, nil
		}
		for range n {
			q := []float64{float64(c) + rng.NormFloat64(), 3*rng.NormFloat64() - float64(c), rng.NormFloat64()}
			all = append(all, q)
			_, err := v.learn(q, m, pool)
			require.NoError(t, err)
		}
		require.Len(t, stats, c+1, "chain %d's window ended after its %d draws", c, n)
	}
	x := mat.NewDense(len(all), dim, nil)
	for i, q := range all {
		x.SetRow(i, q)
	}
	var want mat.SymDense
	stat.CovarianceMatrix(&want, x, nil)
	n := float64(len(all))
	for _, dense := range []bool{true, false} {
		v := newVarAdapter(dim, 1000, 0, 0, 10, dense)
		got, err := v.estimate(stats)
		require.NoError(t, err)
		for i := range dim {
			for j := range dim {
				if !dense && i != j {
					assert.Zero(t, got[i][j])
					continue
				}
				w := n / (n + 5) * want.At(i, j)
				if i == j {
					w += 1e-3 * 5 / (n + 5)
				}
				assert.InDelta(t, w, got[i][j], 1e-12, "dense %v (%d, %d)", dense, i, j)
			}
		}
	}
}

// TestCrossChainRidge: chains that start at different places along a long narrow ridge (a
// normal whose principal standard deviations are 7.1 and 0.05), each from a metric that
// knows only the ridge's width, as the Laplace approximation at one point of it does, with
// trees too shallow (depth 4) to cross the ridge in a draw, as navigation's at depth 7.
// After the warm-up each chain's own windows have seen a stretch of the ridge; pooled across
// the chains (CrossChain) they see its length, and the draws need fewer leapfrog steps and
// give several times the effective draws per step. Both draw the normal.
func TestCrossChainRidge(t *testing.T) {
	g := gaussian2{mu: [2]float64{0, 0}, sd: [2]float64{5, 5}, rho: 0.9999}
	local := [][]float64{{0.01, 0}, {0, 0.01}}
	steps, ess := map[bool]float64{}, map[bool]float64{}
	for _, cross := range []bool{false, true} {
		o := Options{Seed: 11, Warmup: 150, Draws: 400, DenseMetric: true, CrossChain: cross, MaxDepth: 4,
			InitMetric: func(int) [][]float64 { return local },
			Init: func(_, chain int) []float64 {
				s := 4 * float64(chain-2) // along the ridge, from −8 to 4
				return []float64{s, s}
			}}
		var res *Result
		res, steps[cross] = sampleGaussian2(t, g, o)
		sum, err := res.Summary(0)
		require.NoError(t, err)
		ess[cross] = math.Min(sum[0].ESSBulk, sum[1].ESSBulk)
	}
	t.Logf("mean leapfrog steps per draw: own windows %.1f, cross-chain %.1f; min bulk ESS %.0f, %.0f",
		steps[false], steps[true], ess[false], ess[true])
	assert.Less(t, 1.5*steps[true], steps[false])
	assert.Less(t, ess[false]/steps[false], ess[true]/steps[true]/2, "effective draws per leapfrog step")
}

// TestCrossChainDeterministic: with CrossChain the draws do not depend on the scheduling (in
// lockstep or not, one thread or many), a group's chains wait for each other but not for
// other groups', and a chain that fails before its first window leaves the others to pool
// without it.
func TestCrossChainDeterministic(t *testing.T) {
	g := &groupedGaussians{}
	target := NewGroupTarget(2, 3, g.f)
	run := func(unsync bool, procs int) *Result {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		res, err := Sample(context.Background(), target, Options{Chains: 3, Warmup: 120, Draws: 50, Seed: 4,
			DenseMetric: true, CrossChain: true, Unsynchronized: unsync,
			Init: func(group, chain int) []float64 {
				if group == 1 && chain == 0 {
					return []float64{math.NaN(), 0} // fails: not a finite point
				}
				return []float64{0.5 * float64(chain), -float64(group)}
			}})
		require.NoError(t, err)
		return res
	}
	a := run(false, 4)
	for i, c := range a.Chains {
		if i == 3 { // group 1, chain 0
			require.Error(t, c.Err)
			continue
		}
		require.NoError(t, c.Err)
		assert.Len(t, c.Draws, 50)
	}
	// Chains of a group end warm-up with the same metric: the pooled estimate of the same draws.
	for g := range 3 {
		chains := a.Group(g)
		first := chains[0]
		if g == 1 {
			first = chains[1]
		}
		for _, c := range chains {
			if c.Err == nil {
				assert.Equal(t, first.InvMetricDense, c.InvMetricDense, "group %d", g)
			}
		}
	}
	assert.NotEqual(t, a.Group(0)[0].InvMetricDense, a.Group(2)[0].InvMetricDense, "groups pool their own chains")
	for _, b := range []*Result{run(true, 4), run(true, 1)} {
		assert.Equal(t, a.Chains, b.Chains)
		assert.Equal(t, a.Evaluations, b.Evaluations)
	}
}

// TestWindowRHat: the R-hat of window accumulators is that of the draws they describe.
func TestWindowRHat(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var stats []windowStats
	var draws [][]float64
	for c := range 4 {
		v := newVarAdapter(1, 1000, 0, 0, 30, false)
		var x []float64
		for range 30 {
			q := []float64{0.3*float64(c) + rng.NormFloat64()}
			x = append(x, q[0])
			_, err := v.learn(q, unitMetric(1, false), func(st windowStats) ([]windowStats, error) {
				stats = append(stats, st)
				return []windowStats{st}, nil
			})
			require.NoError(t, err)
		}
		draws = append(draws, x)
	}
	require.Len(t, stats, 4)
	assert.InDelta(t, rhatBasic(draws), windowRHat(stats), 1e-12)
	assert.True(t, math.IsNaN(windowRHat(stats[:1])))
}

// TestCrossChainExtendsWarmup: with MaxWarmup, the chains of a group that are still apart
// after the warm-up's last window (the ridge of TestCrossChainRidge) warm up in further
// windows, all alike and never past MaxWarmup, while a group whose chains agree does not.
func TestCrossChainExtendsWarmup(t *testing.T) {
	ridge := gaussian2{mu: [2]float64{0, 0}, sd: [2]float64{5, 5}, rho: 0.9999}
	easy := gaussian2{mu: [2]float64{1, -1}, sd: [2]float64{1, 2}, rho: 0.3}
	f := func(groups []int, x [][]float64) ([]float64, [][]float64, error) {
		logp, grad := make([]float64, len(x)), make([][]float64, len(x))
		for i := range x {
			g := easy
			if groups[i] == 0 {
				g = ridge
			}
			logp[i], grad[i] = g.logp(x[i])
		}
		return logp, grad, nil
	}
	o := Options{Seed: 2, Warmup: 150, MaxWarmup: 600, Draws: 100, DenseMetric: true, CrossChain: true, MaxDepth: 4,
		InitMetric: func(g int) [][]float64 {
			if g == 0 {
				return [][]float64{{0.01, 0}, {0, 0.01}}
			}
			return nil
		},
		Init: func(g, chain int) []float64 {
			s := 4 * float64(chain-2)
			if g == 1 {
				s = 0.2 * float64(chain-2)
			}
			return []float64{s, s}
		}}
	res, err := Sample(context.Background(), NewGroupTarget(2, 2, f), o)
	require.NoError(t, err)
	require.NoError(t, res.Err())
	for g, want := range map[int]bool{0: true, 1: false} {
		chains := res.Group(g)
		for _, c := range chains {
			assert.Equal(t, chains[0].Warmup, c.Warmup, "group %d: the chains decide alike", g)
			assert.LessOrEqual(t, c.Warmup, o.MaxWarmup)
			assert.Len(t, c.Draws, o.Draws)
		}
		assert.Equal(t, want, chains[0].Warmup > o.Warmup, "group %d warmed up for %d", g, chains[0].Warmup)
		t.Logf("group %d: warm-up %d", g, chains[0].Warmup)
	}
	o.MaxWarmup = 0
	res, err = Sample(context.Background(), NewGroupTarget(2, 2, f), o)
	require.NoError(t, err)
	assert.Equal(t, o.Warmup, res.Chains[0].Warmup, "MaxWarmup 0: no extension")
}
