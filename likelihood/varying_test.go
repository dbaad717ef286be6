package likelihood

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulateLengths simulates one trial of the task's agent per entry of lengths, each planned
// over its own length (models.HorizonTrial).
func simulateLengths(t testing.TB, m models.Model, theta []float64, lengths []int, seed uint64) [][][]float64 {
	t.Helper()
	out := make([][][]float64, len(lengths))
	for i, T := range lengths {
		out[i] = simulateTrials(t, m, control.ObservePartial, theta, 1, T, seed+uint64(i))[0]
	}
	return out
}

// assertSums asserts that got equals the sum of the terms to 1e-12 relative to the terms'
// magnitude.
func assertSums(t *testing.T, terms []float64, got float64, msgAndArgs ...any) {
	t.Helper()
	var sum, mag float64
	for _, v := range terms {
		sum += v
		mag += math.Abs(v)
	}
	assert.InDelta(t, sum, got, 1e-12*math.Max(1, mag), msgAndArgs...)
}

// TestVaryingLengthsEqualTrialByTrial (issue 12's acceptance): on pendulum trials of 30–50
// steps, the log-likelihood of a batch of rows of trials of different lengths, and its
// gradient, equal the sums over the trials evaluated one at a time, to 1e-12, for our method
// under both observabilities and both planners and for the baseline; and the same through
// EvalRows in chunks. With LinearizeMean, the trials of a row that share a length share the
// nominal, so the reference evaluates each row's trials of one length together.
func TestVaryingLengthsEqualTrialByTrial(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	rows := [][][][]float64{
		simulateLengths(t, m, natural, []int{30, 50, 37, 44, 30}, 1),
		simulateLengths(t, m, natural, []int{50, 37, 30}, 11),
	}
	for _, opts := range []Options{
		{FitTemperature: true},
		{Planner: models.PlannerPartial},
		{Observe: control.ObserveFull},
		{Method: MCEBaseline},
		{Linearize: LinearizeMean},
	} {
		e, err := New(m, b, opts)
		require.NoError(t, err)
		theta0 := withTemperature(m.Spec(), opts)
		theta1 := append([]float64(nil), theta0...)
		theta1[0] += 0.3
		thetas := [][]float64{theta0, theta1}
		d, err := e.Prepare(rows, 0)
		require.NoError(t, err)
		require.True(t, d.Varying())
		assert.Equal(t, 50, d.Steps)
		ll, grad, err := e.Eval(d, thetas)
		require.NoError(t, err)
		chunked, chunkedGrad, err := e.EvalRows(rows, thetas, Batching{MaxBatch: 5})
		require.NoError(t, err)
		for p, row := range rows {
			// The reference: each trial alone (with LinearizeMean, each group of one length).
			groups := map[int][][][]float64{}
			var order []int
			for _, tr := range row {
				key := len(tr)
				if opts.Linearize != LinearizeMean {
					key = len(order)
				}
				if _, ok := groups[key]; !ok {
					order = append(order, key)
				}
				groups[key] = append(groups[key], tr)
			}
			var terms []float64
			gradTerms := make([][]float64, len(thetas[p]))
			for _, key := range order {
				one, err := e.Prepare([][][][]float64{groups[key]}, 0)
				require.NoError(t, err)
				require.False(t, one.Varying())
				l, g, err := e.Eval(one, thetas[p:p+1])
				require.NoError(t, err)
				require.False(t, math.IsInf(l[0], 0), "%+v row %d: not finite", opts, p)
				terms = append(terms, l[0])
				for j := range g[0] {
					gradTerms[j] = append(gradTerms[j], g[0][j])
				}
			}
			assertSums(t, terms, ll[p], "%+v row %d loglik", opts, p)
			assertSums(t, terms, chunked[p], "%+v row %d loglik, EvalRows", opts, p)
			for j := range gradTerms {
				assertSums(t, gradTerms[j], grad[p][j], "%+v row %d grad %d", opts, p, j)
				assertSums(t, gradTerms[j], chunkedGrad[p][j], "%+v row %d grad %d, EvalRows", opts, p, j)
			}
		}
	}
}

// lengthOwnHorizon is the linear task with models.HorizonTask: its agent plans over Steps
// steps whatever the trial's length.
type lengthOwnHorizon struct{ models.LinearGaussian }

func (lengthOwnHorizon) Spec() models.Spec {
	s := models.LinearGaussian{}.Spec()
	s.Name, s.Horizon = "linear-task-horizon", models.HorizonTask
	return s
}

// linearTrials draws trials of the given lengths from a noisy controlled linear system.
func linearTrials(seed uint64, lengths ...int) [][][]float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	var trials [][][]float64
	for _, T := range lengths {
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

// TestVaryingLengthsExact checks trials shorter than the task's horizon against the exact
// likelihood of the linear-Gaussian case: with HorizonTask the agent plans over the task's 20
// steps, around its own iLQG solution (where the method is exact), and each trial counts its
// own steps only. (With HorizonTrial each trial alone is the reference, see
// TestVaryingLengthsEqualTrialByTrial.)
func TestVaryingLengthsExact(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	trials := linearTrials(4, 7, 15, 3, 15, 11)
	const actionCost, motorNoise, obsNoise, temperature = 0.1, 0.05, 0.2, 1e-3
	sys := newLinearSystem(actionCost, motorNoise, obsNoise)
	theta := []float64{math.Log10(actionCost), math.Log10(motorNoise), math.Log10(obsNoise)}
	m := lengthOwnHorizon{}
	e, err := New(m, b, Options{Jitter: 1e-13, Temperature: temperature, Linearize: LinearizeILQG})
	require.NoError(t, err)
	rows := [][][][]float64{trials, trials[2:], trials[1:2]}
	d, err := e.Prepare(rows, 0)
	require.NoError(t, err)
	require.True(t, d.Varying())
	ll, _, err := e.Eval(d, [][]float64{theta, theta, theta})
	require.NoError(t, err)
	for p, row := range rows {
		want := 0.0
		for _, tr := range row {
			want += sys.exactLogLikOver(tr, temperature, m.Spec().Steps, 0)
		}
		assert.InEpsilon(t, want, ll[p], 1e-8, "row %d: graph %v exact %v", p, ll[p], want)
	}
}

// TestVaryingLengthsLoopedEqualsUnrolled: trials of their own length give the same values and
// gradients in the looped form as unrolled, under both horizons.
func TestVaryingLengthsLoopedEqualsUnrolled(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	pendulum, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(pendulum.Spec())
	for _, c := range []struct {
		m      models.Model
		trials [][][]float64
	}{
		{pendulum, simulateLengths(t, pendulum, natural, []int{3, 6, 4}, 3)},
		{lengthOwnHorizon{}, linearTrials(5, 8, 20, 4)},
	} {
		for _, opts := range loopConfigs {
			if opts.Linearize == LinearizeILQG && c.m.Spec().PlanningHorizon() == models.HorizonTrial {
				continue
			}
			theta := withTemperature(c.m.Spec(), opts)
			th2 := append([]float64(nil), theta...)
			th2[0] += 0.2
			var lls [2][]float64
			var grads [2][][]float64
			for i, form := range []Form{FormUnrolled, FormLooped} {
				o := opts
				o.Form = form
				e, err := New(c.m, b, o)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{c.trials, c.trials[:2]}, 3)
				require.NoError(t, err)
				require.True(t, d.Varying())
				lls[i], grads[i], err = e.Eval(d, [][]float64{theta, th2})
				require.NoError(t, err, "%+v %s", opts, form)
			}
			for r := range 2 {
				require.False(t, math.IsInf(lls[0][r], 0), "%+v: not finite", opts)
				assert.InEpsilon(t, lls[0][r], lls[1][r], 1e-9, "%s %+v row %d loglik", c.m.Spec().Name, opts, r)
				for j := range grads[0][r] {
					assert.InDelta(t, grads[0][r][j], grads[1][r][j], 1e-9*math.Max(1, math.Abs(grads[0][r][j])),
						"%s %+v row %d grad %d", c.m.Spec().Name, opts, r, j)
				}
			}
		}
	}
}

// TestVaryingLengthsErrors: what cannot be evaluated is refused with the row and trial named.
func TestVaryingLengthsErrors(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	trials := linearTrials(6, 5, 9)
	e, err := New(models.LinearGaussian{}, b, Options{Linearize: LinearizeILQG})
	require.NoError(t, err)
	_, err = e.Prepare([][][][]float64{trials}, 0)
	assert.ErrorContains(t, err, "trials of different lengths (5 to 9 steps)")
	d, err := e.Prepare([][][][]float64{trials[1:]}, 0)
	require.NoError(t, err, "one length is fine")
	assert.False(t, d.Varying())

	e, err = New(lengthOwnHorizon{}, b, Options{})
	require.NoError(t, err)
	_, err = e.Prepare([][][][]float64{trials, linearTrials(7, 21)}, 0)
	assert.ErrorContains(t, err, "row 1 trial 0 has 21 steps, more than the 20 steps the agent of task linear-task-horizon plans over")
	d, err = e.Prepare([][][][]float64{linearTrials(7, 20, 20)}, 0)
	require.NoError(t, err)
	assert.False(t, d.Varying(), "trials of the task's length")
	d, err = e.Prepare([][][][]float64{linearTrials(7, 12, 12)}, 0)
	require.NoError(t, err)
	assert.True(t, d.Varying(), "shorter than the task's horizon")
	assert.Equal(t, 20, d.Steps)

	_, err = e.Prepare([][][][]float64{{trials[0][:1]}}, 0)
	assert.ErrorContains(t, err, "row 0 trial 0 has 1 state(s)")
}
