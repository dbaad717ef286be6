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
			var calls [5]int
			var lls [5][]float64
			var grads [5][][]float64
			for i, form := range []Form{FormUnrolled, FormLooped, FormLooped, FormLooped, FormLooped} {
				o := opts
				o.Form = form
				o.ForwardGradient = i == 2
				switch i {
				case 3:
					o.StepsPerCall = 4 // a block of 4 steps and one of the rest
				case 4:
					o.StepsPerCall = WholeRecursion // a while loop on XLA, a block of every step elsewhere
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
			assert.Less(t, calls[4], calls[3], "%s %+v: whole recursions take fewer calls still", name, opts)
			for r := range 2 {
				require.False(t, math.IsInf(lls[0][r], 0), "%s %+v: not finite", name, opts)
				for i, mode := range []string{"", "looped, reverse mode", "looped, forward mode", "looped, 4 steps per call", "looped, whole recursions"} {
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

// TestWhileLoopsEqualUnrolled checks the while-loop form on XLA's CPU plugin (each recursion
// one program, its sequences stacked: StepsPerCall WholeRecursion) against the Go backend's
// unrolled graph on every task, for the data, iLQG and fitted-temperature configurations, and
// that it takes far fewer calls than one step per call. It runs where a plugin is installed
// (make xla-cpu) and is skipped otherwise.
func TestWhileLoopsEqualUnrolled(t *testing.T) {
	bx, bg := xlaAndGo(t)
	configs := []Options{loopConfigs[0], loopConfigs[1], loopConfigs[4], loopConfigs[5], loopConfigs[8]}
	for _, name := range []string{"reaching", "cartpole", "lightdark"} {
		m, err := models.Get(name)
		require.NoError(t, err)
		natural, _ := testTheta(m.Spec())
		const T = 6
		trials := simulateTrials(t, m, control.ObservePartial, natural, 3, T, 2)
		for _, opts := range configs {
			if name != "reaching" && opts.Linearize == LinearizeILQG {
				continue // the solver's flows: reaching's is enough
			}
			theta := withTemperature(m.Spec(), opts)
			th2 := append([]float64(nil), theta...)
			th2[0] += 0.2
			var lls [2][]float64
			var grads [2][][]float64
			for i := range 2 {
				o := opts
				b := bg
				o.Form = FormUnrolled
				if i == 1 {
					b, o.Form, o.StepsPerCall = bx, FormLooped, WholeRecursion
				}
				e, err := New(m, b, o)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{trials, trials[:2]}, 3)
				require.NoError(t, err)
				lls[i], grads[i], err = e.Eval(d, [][]float64{theta, th2})
				require.NoError(t, err, "%s %+v", name, opts)
				if i == 1 {
					assert.Zero(t, e.engine.Stats().Late, "%s %+v: the dry run compiled every program", name, opts)
					// Each recursion and stage is one call and its VJP one: 42 calls for
					// reaching with one step per call.
					assert.LessOrEqual(t, e.engine.Calls(), 30, "%s %+v: few calls", name, opts)
				}
			}
			for r := range 2 {
				assert.InEpsilon(t, lls[0][r], lls[1][r], 1e-9, "%s %+v row %d", name, opts, r)
				for j := range grads[0][r] {
					assert.InDelta(t, grads[0][r][j], grads[1][r][j], 1e-9*math.Max(1, math.Abs(grads[0][r][j])), "%s %+v row %d grad %d", name, opts, r, j)
				}
			}
		}
	}
}
