package likelihood

import (
	"math"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loopConfigs are every method, observability and linearization.
var loopConfigs = []Options{
	{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeData},
	{Method: Ours, Observe: control.ObserveFull, Linearize: LinearizeData},
	{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeMean},
	{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeData, FirstOrderNoise: true},
	{Method: MCEBaseline, Linearize: LinearizeData},
	{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeILQG},
	{Method: Ours, Observe: control.ObserveFull, Linearize: LinearizeILQG},
	{Method: MCEBaseline, Linearize: LinearizeILQG},
	{Method: Ours, Observe: control.ObservePartial, Linearize: LinearizeData, FitTemperature: true},
	{Method: Ours, Observe: control.ObserveFull, Linearize: LinearizeData, FitTemperature: true},
	{Method: MCEBaseline, Linearize: LinearizeData, FitTemperature: true},
}

// assertFormsAgree evaluates two rows of trials (the second with a shifted θ and a padded
// trial) in the unrolled and the looped form on backend name and asserts equal values and
// gradients to 1e-9 relative.
func assertFormsAgree(t *testing.T, backend string, tasks []string, steps int) {
	b, err := graph.NewBackend(backend)
	require.NoError(t, err)
	for _, name := range tasks {
		m, err := models.Get(name)
		require.NoError(t, err)
		natural, _ := testTheta(m.Spec())
		trials := simulateTrials(t, m, control.ObservePartial, natural, 3, steps, 2)
		for _, opts := range loopConfigs {
			theta := withTemperature(m.Spec(), opts)
			th2 := append([]float64(nil), theta...)
			th2[0] += 0.2
			var calls [4]int
			var lls [4][]float64
			var grads [4][][]float64
			for i, form := range []Form{FormUnrolled, FormLooped, FormLooped, FormLooped} {
				o := opts
				o.Form = form
				o.ForwardGradient = i == 2
				if i == 3 {
					o.StepsPerCall = 4 // a block of 4 steps and one of the rest
				}
				e, err := New(m, b, o)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{trials, trials[:2]}, 3)
				require.NoError(t, err)
				lls[i], grads[i], err = e.Eval(d, [][]float64{theta, th2})
				require.NoError(t, err, "%s %+v %s", name, opts, form)
				if form == FormLooped {
					assert.Zero(t, e.engine.Stats().Late, "%s %+v: the dry run compiled every program", name, opts)
					calls[i] = e.engine.Calls()
				}
			}
			assert.Less(t, calls[3], calls[1], "%s %+v: blocks of steps take fewer calls", name, opts)
			for r := range 2 {
				require.False(t, math.IsInf(lls[0][r], 0), "%s %+v: not finite", name, opts)
				for i, mode := range []string{"", "looped, reverse mode", "looped, forward mode", "looped, 4 steps per call"} {
					if i == 0 {
						continue
					}
					assert.InEpsilon(t, lls[0][r], lls[i][r], 1e-9, "%s %+v row %d loglik, %s", name, opts, r, mode)
					for j := range grads[0][r] {
						assert.InDelta(t, grads[0][r][j], grads[i][r][j], 1e-9*math.Max(1, math.Abs(grads[0][r][j])),
							"%s %+v row %d grad %d, %s", name, opts, r, j, mode)
					}
				}
			}
		}
	}
}

// TestLoopedEqualsUnrolled: the looped form (one compiled step per recursion, reverse mode
// over the steps; forward mode; blocks of 4 steps per call) gives the unrolled graph's values
// and gradients on every task, method, observability and linearization.
func TestLoopedEqualsUnrolled(t *testing.T) {
	assertFormsAgree(t, graph.BackendGo, []string{"reaching", "navigation", "pendulum", "cartpole", "lightdark", "linear"}, 6)
}

// TestLoopedEvalRowsConcurrent evaluates rows in concurrent chunks of two shapes in the looped
// form (each shape's first evaluation compiling its programs in a dry run, possibly at the
// same time as the other's) and checks the values and gradients against one evaluation of all
// rows, and that no program was compiled outside a dry run. Run it with -race too.
func TestLoopedEvalRowsConcurrent(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 3, 6, 2)
	opts := Options{Form: FormLooped}
	theta := withTemperature(m.Spec(), opts)
	rows := make([][][][]float64, 9)
	thetas := make([][]float64, 9)
	for i := range rows {
		rows[i], thetas[i] = trials, append([]float64(nil), theta...)
		thetas[i][0] += 0.05 * float64(i)
	}
	e, err := New(m, b, opts)
	require.NoError(t, err)
	ll, grad, err := e.EvalRows(rows, thetas, Batching{MaxBatch: 6}) // chunks of 2 rows and 1
	require.NoError(t, err)
	assert.Zero(t, e.engine.Stats().Late)

	whole, err := New(m, b, opts)
	require.NoError(t, err)
	d, err := whole.Prepare(rows, 0)
	require.NoError(t, err)
	wantLL, wantGrad, err := whole.Eval(d, thetas)
	require.NoError(t, err)
	for i := range rows {
		assert.InEpsilon(t, wantLL[i], ll[i], 1e-12, "row %d", i)
		assert.InDeltaSlice(t, wantGrad[i], grad[i], 1e-9, "row %d", i)
	}
}
