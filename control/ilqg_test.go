package control

import (
	"math"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/require"
)

func TestILQGQuick(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	for _, name := range []string{"pendulum", "reaching", "navigation", "lightdark"} {
		m, err := models.Get(name)
		require.NoError(t, err)
		spec := m.Spec()
		opts := SolverOptions{Planner: spec.Planner}
		sv, err := NewSolver(m, spec.Steps, b, opts)
		require.NoError(t, err)
		t0 := time.Now()
		pol, err := sv.Solve([][]float64{spec.Defaults()}, nil)
		require.NoError(t, err)
		T, n := pol.Steps, pol.States
		final := make([]float64, n)
		for i := range n {
			final[i] = pol.Xbar[T*n+i]
		}
		t.Logf("%s: %d iters, cost %g, final %v, %v, stats %+v %+v", name, pol.Iterations, pol.Cost[0], final, time.Since(t0), sv.rollout.Stats(), sv.linearized.Stats())
		_ = math.Pi
	}
}
