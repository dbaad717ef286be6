package likelihood

import (
	"math"

	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayEqualsTape: the looped form's evaluations after the first run as replays of it
// (graph's replays) and give the values and gradients of evaluations on tapes to the last bit,
// on each method and linearization, on the Go backend and, where a plugin is
// installed, on XLA's CPU plugin (while loops, fused calls, trials as lanes).
func TestReplayEqualsTape(t *testing.T) {
	bg, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	bes := []backends.Backend{bg}
	if _, err := graph.FindPlugin("cpu"); err == nil {
		bx, err := graph.NewBackend(graph.BackendXLA)
		require.NoError(t, err)
		bes = append(bes, bx)
	} else {
		t.Log("no XLA CPU plugin installed (make xla-cpu): the Go backend only")
	}
	for _, b := range bes {
		t.Run(b.Name(), func(t *testing.T) { assertReplaysEqualTapes(t, b) })
	}
}

// assertReplaysEqualTapes is TestReplayEqualsTape on backend b.
func assertReplaysEqualTapes(t *testing.T, b backends.Backend) {
	// Every configuration's kind of flow: the data, mean and iLQG linearizations, the
	// baseline, a fitted temperature (on XLA, where each compiles for seconds, three).
	tasks := []string{"pendulum", "reaching"}
	configs := []Options{loopConfigs[0], loopConfigs[2], loopConfigs[4], loopConfigs[5], loopConfigs[8]}
	if graph.BuildsStableHLO(b) {
		tasks, configs = []string{"pendulum"}, []Options{loopConfigs[0], loopConfigs[4], loopConfigs[5]}
	}
	for _, name := range tasks {
		m, err := models.Get(name)
		require.NoError(t, err)
		natural, _ := testTheta(m.Spec())
		trials := simulateTrials(t, m, control.ObservePartial, natural, 3, 6, 2)
		for _, opts := range configs {
			theta := withTemperature(m.Spec(), opts)
			points := [][][]float64{{theta, theta}, {shifted(theta, 0.2), shifted(theta, -0.1)}, {shifted(theta, 0.05), theta}}
			opts.Form = FormLooped
			e, err := New(m, b, opts)
			require.NoError(t, err)
			rows := [][][][]float64{trials, trials[:2]}
			var got [2][][]float64 // replays off, on: values then gradients, per point
			for k := range 2 {
				e.engine.SetReplays(k == 1) // the same programs, compiled once
				for _, th := range points {
					ll, grad, err := e.EvalRows(rows, th, Batching{Trials: 3, Keep: true})
					require.NoError(t, err, "%s %s %+v", b.Name(), name, opts)
					got[k] = append(got[k], ll)
					got[k] = append(got[k], grad...)
				}
			}
			replays := e.engine.Stats().Replays
			assert.Positive(t, replays, "%s %s %+v: evaluations replayed", b.Name(), name, opts)
			assert.Equal(t, got[0], got[1], "%s %s %+v: replays give the tape's numbers", b.Name(), name, opts)
		}
	}
}

// shifted returns theta with d added to its first entry.
func shifted(theta []float64, d float64) []float64 {
	out := append([]float64(nil), theta...)
	out[0] += d
	return out
}

// TestReplayProgram: on XLA's CPU plugin, replays linked into one program (one call an
// evaluation) give every evaluation, the first of a shape too, the one program's numbers: the
// same whatever was evaluated before, and within 1e-12 of the calls one by one (XLA compiles
// the module as a whole: last bits). It runs where a plugin is installed (make xla-cpu) and
// is skipped otherwise.
func TestReplayProgram(t *testing.T) {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 50, 20, 2)
	theta := m.Spec().Defaults()
	for i, p := range m.Spec().Params {
		theta[i] = p.ToScale(natural[i])
	}
	points := [][][]float64{
		{theta, theta, theta, theta},
		{shifted(theta, 0.2), shifted(theta, -0.1), theta, shifted(theta, 0.1)},
		{shifted(theta, 0.05), theta, shifted(theta, -0.2), theta},
	}
	rows := [][][][]float64{trials, trials, trials, trials}
	evaluate := func(asOne bool, order []int) (map[int][][]float64, int) {
		e, err := New(m, bx, Options{Form: FormLooped})
		require.NoError(t, err)
		e.engine.SetReplayPrograms(asOne)
		got := map[int][][]float64{}
		for _, i := range order {
			ll, grad, err := e.EvalRows(rows, points[i], Batching{Trials: len(trials), Keep: true})
			require.NoError(t, err)
			require.NoError(t, e.engine.LinkError())
			got[i] = append([][]float64{ll}, grad...)
		}
		return got, e.engine.Stats().ReplayPrograms
	}
	calls, _ := evaluate(false, []int{0, 1, 2})
	first, linked := evaluate(true, []int{0, 1, 2})
	again, _ := evaluate(true, []int{2, 0, 1})
	assert.Positive(t, linked, "evaluations ran as one program")
	assert.Equal(t, first, again, "each evaluation gets the one program's numbers, the first of a shape too")
	for i := range points {
		for r := range first[i] {
			for j := range first[i][r] {
				a, b := calls[i][r][j], first[i][r][j]
				assert.InDelta(t, a, b, 1e-12*math.Max(1, math.Abs(a)), "point %d, %d %d", i, r, j)
			}
		}
	}
}
