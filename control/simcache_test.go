package control

import (
	"sync"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateProgramsShared: the unrolled simulation's programs are kept across calls
// (simPrograms), one per observation mode, temperature and delay (temperature 0, no policy
// noise, shares temperature 1's: Simulate runs it without noise), so each of these options
// gets its own program and a call gives the same bits whether its program was just built or
// kept from calls with other options and other batch shapes before it.
func TestSimulateProgramsShared(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, spec, theta := taskDefaults(t, "pendulum")
	const T = 15
	sv, err := NewSolver(m, T, b, SolverOptions{Planner: spec.Planner})
	require.NoError(t, err)
	pol, err := sv.Solve([][]float64{theta}, nil)
	require.NoError(t, err)
	cases := []SimOptions{
		{Observe: ObservePartial, Temperature: spec.Temperature},
		{Observe: ObservePartial, Temperature: 0},
		{Observe: ObservePartial, Temperature: 1}, // 0's program
		{Observe: ObservePartial, Temperature: 4 * spec.Temperature},
		{Observe: ObserveFull, Temperature: spec.Temperature},
		{Observe: ObservePartial, Temperature: spec.Temperature, Delay: 1},
		{Observe: ObservePartial, Temperature: spec.Temperature, Trials: 7}, // another batch shape
	}
	run := func(o SimOptions) [][][]float64 {
		o.Seed, o.Form = 3, "unrolled"
		if o.Trials == 0 {
			o.Trials = 4
		}
		xs, err := Simulate(m, pol, [][]float64{theta}, b, o)
		require.NoError(t, err)
		return xs[0][:4]
	}
	fresh := make([][][][]float64, len(cases))
	for i, o := range cases {
		simPrograms = sync.Map{} // every program built anew
		fresh[i] = run(o)
	}
	simPrograms = sync.Map{}
	for i, o := range cases { // each after the others' programs were kept
		assert.Equal(t, fresh[i], run(o), "case %d, kept programs", i)
	}
	for i := range cases[:len(cases)-2] {
		assert.NotEqual(t, fresh[i], fresh[i+1], "cases %d and %d must differ", i, i+1)
	}
	n := 0
	simPrograms.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, len(cases)-2, n, "one program per options, the batch shapes compiled within it")
}
