package control

import (
	"math"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/require"
)

func TestSimQuick(t *testing.T) {
	b, _ := graph.NewBackend(graph.BackendGo)
	for _, name := range []string{"pendulum", "reaching", "navigation", "lightdark", "cartpole"} {
		m, _ := models.Get(name)
		spec := m.Spec()
		sv, err := NewSolver(m, spec.Steps, b, SolverOptions{Planner: spec.Planner})
		require.NoError(t, err)
		t0 := time.Now()
		th := [][]float64{spec.Defaults()}
		pol, err := sv.Solve(th, nil)
		require.NoError(t, err)
		t1 := time.Now()
		xs, err := Simulate(m, pol, th, b, SimOptions{Trials: 50, Seed: 1})
		require.NoError(t, err)
		mean := make([]float64, len(spec.States))
		maxx := 0.0
		for _, tr := range xs[0] {
			for i := range mean {
				mean[i] += tr[spec.Steps][i] / 50
			}
			for _, st := range tr {
				maxx = math.Max(maxx, st[0])
			}
		}
		t.Logf("%s: solve %v (%d it), sim %v, mean final %v maxx0 %.2f", name, t1.Sub(t0), pol.Iterations, time.Since(t1), mean, maxx)
	}
}
