package posterior

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

// groupedGaussians is a target of three groups, each a 2-D normal of its own, that records
// the batches it is called with.
type groupedGaussians struct {
	mu      sync.Mutex
	batches [][]int
}

func (g *groupedGaussians) gaussian(group int) gaussian2 {
	return gaussian2{mu: [2]float64{float64(group), -float64(group)}, sd: [2]float64{1 + float64(group), 0.5}, rho: 0.3 * float64(group)}
}

func (g *groupedGaussians) f(groups []int, x [][]float64) ([]float64, [][]float64, error) {
	g.mu.Lock()
	g.batches = append(g.batches, append([]int(nil), groups...))
	g.mu.Unlock()
	logp := make([]float64, len(x))
	grad := make([][]float64, len(x))
	for i, xi := range x {
		logp[i], grad[i] = g.gaussian(groups[i]).logp(xi)
	}
	return logp, grad, nil
}

// sampleAlone runs one chain by itself, evaluating the log density point by point.
func sampleAlone(t *testing.T, target *Target, opts Options, group, index int) Chain {
	t.Helper()
	o, err := opts.resolve()
	require.NoError(t, err)
	c := newChainRun(target, &o, group, index)
	eval := func(q []float64) (float64, []float64, error) {
		lp, g, err := target.Eval([]int{group}, [][]float64{q})
		if err != nil {
			return 0, nil, err
		}
		return lp[0], g[0], nil
	}
	c.out.Err = c.run(eval, func() bool { return true }, nil)
	return c.out
}

// TestBatchedEqualsAlone: chains of several groups sampled together, in lockstep or not,
// give exactly the draws of each chain run alone, and every batch holds at most one point per
// chain.
func TestBatchedEqualsAlone(t *testing.T) {
	g := &groupedGaussians{}
	target := NewGroupTarget(2, 3, g.f)
	opts := Options{Chains: 3, Warmup: 150, Draws: 100, Seed: 42}
	res, err := Sample(context.Background(), target, opts)
	require.NoError(t, err)
	require.NoError(t, res.Err())
	lockstepCalls := len(g.batches)
	assert.Equal(t, res.Calls, lockstepCalls)
	evals, largest := 0, 0
	for _, b := range g.batches {
		largest = max(largest, len(b))
		evals += len(b)
	}
	assert.Equal(t, 9, largest, "one call serves every chain of every group")
	assert.Equal(t, res.Evaluations, evals)
	t.Logf("lockstep: %d evaluations in %d calls", res.Evaluations, res.Calls)

	g.batches = nil
	unsync := opts
	unsync.Unsynchronized = true
	free, err := Sample(context.Background(), target, unsync)
	require.NoError(t, err)
	assert.Less(t, free.Calls, lockstepCalls, "without the barrier the batches are fuller and fewer")
	assert.Equal(t, res.Evaluations, free.Evaluations)
	t.Logf("unsynchronized: %d evaluations in %d calls", free.Evaluations, free.Calls)

	perChain := 0
	for i, c := range res.Chains {
		assert.Equal(t, i/3, c.Group)
		assert.Equal(t, i%3, c.Index)
		alone := sampleAlone(t, target, opts, c.Group, c.Index)
		require.NoError(t, alone.Err)
		require.Equal(t, alone, c, "chain %d of group %d", c.Index, c.Group)
		require.Equal(t, alone, free.Chains[i], "unsynchronized chain %d of group %d", c.Index, c.Group)
		perChain += c.Evaluations
	}
	assert.Equal(t, res.Evaluations, perChain)
	// The groups' draws follow their own densities.
	for group := range 3 {
		sum, err := res.Summary(group)
		require.NoError(t, err)
		want := g.gaussian(group)
		for j := range 2 {
			within(t, fmt.Sprintf("group %d mean %d", group, j), sum[j].Mean, want.mu[j], want.sd[j]/math.Sqrt(sum[j].ESSBulk), 5)
		}
	}
}

// TestDeterministic: the same seed gives the same draws whatever the parallelism; another
// seed gives others.
func TestDeterministic(t *testing.T) {
	g := gaussian2{mu: [2]float64{0, 1}, sd: [2]float64{1, 3}, rho: -0.5}
	run := func(seed uint64) *Result {
		res, err := Sample(context.Background(), NewTarget(2, batch(g.logp)), Options{Chains: 4, Warmup: 100, Draws: 50, Seed: seed})
		require.NoError(t, err)
		return res
	}
	a := run(1)
	prev := runtime.GOMAXPROCS(1)
	b := run(1)
	runtime.GOMAXPROCS(prev)
	assert.Equal(t, a, b)
	c := run(2)
	assert.NotEqual(t, a.Chains[0].Draws, c.Chains[0].Draws)
	assert.NotEqual(t, a.Chains[0].Draws, a.Chains[1].Draws, "chains have their own streams")
}

func TestWindows(t *testing.T) {
	for _, c := range []struct {
		warmup, init, term, base int
		ends                     []int
	}{
		{1000, 75, 50, 25, []int{99, 149, 249, 449, 949}},
		{1000, 75, 25, 25, []int{99, 149, 249, 449, 974}},
		{500, 75, 50, 25, []int{99, 149, 249, 449}},
		{150, 75, 50, 25, []int{99}},
		{100, 75, 50, 25, []int{15 + 75 - 1}}, // reduced to 15 / 75 / 10
		{19, 75, 50, 25, nil},                 // too short: no metric adaptation
	} {
		v := newVarAdapter(1, c.warmup, c.init, c.term, c.base, false)
		m := unitMetric(1, false)
		var ends []int
		for it := range c.warmup {
			updated, err := v.learn([]float64{float64(it % 7)}, m, nil)
			require.NoError(t, err)
			if updated {
				ends = append(ends, it)
			}
		}
		assert.Equal(t, c.ends, ends, "warm-up %d, buffers %d/%d, window %d", c.warmup, c.init, c.term, c.base)
	}
	// The regularized variance (diagonal) or covariance (dense) of the first window, 75..99.
	for _, dense := range []bool{false, true} {
		v := newVarAdapter(2, 1000, 75, 50, 25, dense)
		m := unitMetric(2, dense)
		var xs, ys []float64
		for it := range 100 {
			x, y := math.Sin(float64(it)), math.Cos(float64(it))+0.5*math.Sin(float64(it))
			if it >= 75 {
				xs, ys = append(xs, x), append(ys, y)
			}
			_, err := v.learn([]float64{x, y}, m, nil)
			require.NoError(t, err)
		}
		cov := func(a, b []float64) float64 {
			var ma, mb, s float64
			for i := range a {
				ma, mb = ma+a[i]/25, mb+b[i]/25
			}
			for i := range a {
				s += (a[i] - ma) * (b[i] - mb)
			}
			return 25.0 / 30 * s / 24
		}
		reg := 1e-3 * 5 / 30
		assert.InDelta(t, cov(xs, xs)+reg, m.diag[0], 1e-12)
		assert.InDelta(t, cov(ys, ys)+reg, m.diag[1], 1e-12)
		if !dense {
			assert.Nil(t, m.dense)
			continue
		}
		want := [][]float64{{cov(xs, xs) + reg, cov(xs, ys)}, {cov(xs, ys), cov(ys, ys) + reg}}
		for i := range want {
			assert.InDeltaSlice(t, want[i], m.dense[i], 1e-12)
		}
	}
}

// TestWindowsShrinkTowardsPrior: with an initial metric (Options.InitMetric) a window's
// estimate is shrunk towards it, as towards priorDrawsPerParameter draws of it per parameter
// (40 here), instead of towards 10⁻³·I.
func TestWindowsShrinkTowardsPrior(t *testing.T) {
	prior := [][]float64{{4e-4, 1e-4}, {1e-4, 9e-4}}
	for _, dense := range []bool{false, true} {
		v := newVarAdapter(2, 1000, 75, 50, 25, dense)
		v.prior = prior
		m := unitMetric(2, dense)
		require.NoError(t, m.set(prior))
		var xs, ys []float64
		for it := range 100 {
			x, y := 0.02*math.Sin(float64(it)), 0.03*math.Cos(float64(it))
			if it >= 75 {
				xs, ys = append(xs, x), append(ys, y)
			}
			_, err := v.learn([]float64{x, y}, m, nil)
			require.NoError(t, err)
		}
		cov := func(a, b []float64) float64 {
			return 25.0 / 65 * stat.Covariance(a, b, nil)
		}
		w := 40.0 / 65
		assert.InDelta(t, cov(xs, xs)+w*prior[0][0], m.diag[0], 1e-15)
		assert.InDelta(t, cov(ys, ys)+w*prior[1][1], m.diag[1], 1e-15)
		if !dense {
			assert.Nil(t, m.dense)
			continue
		}
		assert.InDelta(t, cov(xs, ys)+w*prior[0][1], m.dense[0][1], 1e-15)
		assert.Equal(t, m.dense[0][1], m.dense[1][0])
	}
}

// TestMetricSet: an initial metric must be a finite symmetric positive-definite matrix of
// the metric's dimension; a diagonal metric takes its diagonal.
func TestMetricSet(t *testing.T) {
	for _, c := range []struct {
		name string
		cov  [][]float64
		err  string
	}{
		{"wrong dimension", [][]float64{{1}}, "1×1 matrix for a metric of dimension 2"},
		{"short row", [][]float64{{1, 0}, {0}}, "row 1 has 1 entries"},
		{"zero diagonal", [][]float64{{1, 0}, {0, 0}}, "diagonal entry 1 is 0"},
		{"not symmetric", [][]float64{{1, 0.5}, {0.4, 1}}, "entry (0, 1) is 0.5"},
		{"NaN", [][]float64{{1, math.NaN()}, {math.NaN(), 1}}, "entry (0, 1) is NaN"},
		{"indefinite", [][]float64{{1, 2}, {2, 1}}, "not positive definite"},
	} {
		err := unitMetric(2, true).set(c.cov)
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.err, c.name)
		}
	}
	cov := [][]float64{{4, 1}, {1, 2}}
	m := unitMetric(2, false)
	require.NoError(t, m.set(cov))
	assert.Equal(t, []float64{4, 2}, m.diag)
	assert.Nil(t, m.dense)
	m = unitMetric(2, true)
	require.NoError(t, m.set(cov))
	assert.Equal(t, cov, m.dense)
	cov[0][0] = 9
	assert.Equal(t, 4.0, m.dense[0][0], "set keeps a copy")
}

func TestDualAveraging(t *testing.T) {
	// With acceptance always at the target the iterate stays at μ.
	d := dualAveraging{mu: math.Log(10), delta: 0.8, gamma: 0.05, kappa: 0.75, t0: 10}
	for range 10 {
		assert.InDelta(t, 10, d.learn(0.8), 1e-12)
	}
	assert.InDelta(t, 10, d.final(), 1e-12)
	// Low acceptance shrinks the step size, high acceptance grows it.
	d.restart()
	assert.Less(t, d.learn(0.1), 10.0)
	d.restart()
	assert.Greater(t, d.learn(1.5), 10.0)
}

func TestLogSumExp(t *testing.T) {
	inf := math.Inf(-1)
	assert.Equal(t, 2.0, logSumExp(inf, 2))
	assert.Equal(t, 2.0, logSumExp(2, inf))
	assert.True(t, math.IsInf(logSumExp(inf, inf), -1))
	assert.InDelta(t, math.Log(math.Exp(1)+math.Exp(3)), logSumExp(1, 3), 1e-14)
	assert.InDelta(t, 1000+math.Log(2), logSumExp(1000, 1000), 1e-12)
}

// TestTreeDepthLimit: with a tiny fixed step size every trajectory runs to the maximum depth.
func TestTreeDepthLimit(t *testing.T) {
	g := gaussian2{sd: [2]float64{1, 1}}
	res, err := Sample(context.Background(), NewTarget(2, batch(g.logp)),
		Options{Chains: 1, Warmup: -1, Draws: 5, StepSize: 1e-4, MaxDepth: 4})
	require.NoError(t, err)
	for i := range 5 {
		assert.Equal(t, 4, res.Chains[0].TreeDepth[i])
		assert.Equal(t, 15, res.Chains[0].NLeapfrog[i])
		assert.False(t, res.Chains[0].Divergent[i])
	}
}

// TestTransitionEnergy: the energy of a transition is the Hamiltonian of the draw it returns,
// −log π(q) + ½ pᵀM⁻¹p with the draw's own position and momentum, here computed from the
// draw's p with explicit sums (not the sampler's metric code), under a diagonal and a dense
// metric that are not the identity; and its tree statistics are consistent.
func TestTransitionEnergy(t *testing.T) {
	g := gaussian2{mu: [2]float64{1, -1}, sd: [2]float64{0.5, 2}, rho: 0.6}
	diag := []float64{0.3, 3}
	dense := [][]float64{{0.3, 0.4}, {0.4, 3}}
	for _, name := range []string{"diagonal", "dense"} {
		t.Run(name, func(t *testing.T) {
			m := &metric{diag: clone(diag), z: make([]float64, 2)}
			if name == "dense" {
				require.NoError(t, m.setDense([][]float64{clone(dense[0]), clone(dense[1])}))
			}
			s := &nuts{dim: 2, rng: rand.New(rand.NewPCG(7, 8)), metric: m, qStep: make([]float64, 2),
				eps: 0.4, maxDepth: 6, maxDeltaH: 1000,
				eval: func(q []float64) (float64, []float64, error) { lp, grad := g.logp(q); return lp, grad, nil }}
			z := newState(2)
			copy(z.q, []float64{0.5, 0.5})
			require.NoError(t, s.evaluate(z))
			moved, mixed := 0, 0
			for range 200 {
				next, st, err := s.transition(z)
				require.NoError(t, err)
				var kinetic float64 // ½ pᵀM⁻¹p
				for i := range next.p {
					if name == "diagonal" {
						kinetic += 0.5 * diag[i] * next.p[i] * next.p[i]
						continue
					}
					for j := range next.p {
						kinetic += 0.5 * next.p[i] * dense[i][j] * next.p[j]
					}
				}
				lp, _ := g.logp(next.q)
				require.Equal(t, lp, next.logp)
				require.InDelta(t, -lp+kinetic, st.energy, 1e-12*(1+math.Abs(st.energy)), "H at the draw")
				require.GreaterOrEqual(t, st.energy, -lp, "kinetic energy ≥ 0")
				require.GreaterOrEqual(t, st.acceptStat, 0.0)
				require.LessOrEqual(t, st.acceptStat, 1.0)
				require.GreaterOrEqual(t, st.nLeapfrog, 1<<st.depth-1)
				require.LessOrEqual(t, st.nLeapfrog, 1<<(st.depth+1)-1)
				if !slices.Equal(next.q, z.q) {
					moved++
				}
				if st.acceptStat < 1 {
					mixed++
				}
				z = next
			}
			assert.Greater(t, moved, 150, "the chain moves")
			assert.Positive(t, mixed, "some trajectories lose energy: the statistic is not a constant")
		})
	}
}
