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

// TestXLAEqualsGo evaluates the same likelihoods and gradients on XLA's CPU plugin (the looped
// form, reverse-mode gradients, and for ours forward-mode ones too) and on the pure-Go backend
// (unrolled). It runs where a plugin is installed (make xla-cpu) and is skipped otherwise. The
// horizon is short to keep the compiles few and quick.
func TestXLAEqualsGo(t *testing.T) {
	bx, bg := xlaAndGo(t)
	for _, name := range []string{"linear", "pendulum"} {
		m, err := models.Get(name)
		require.NoError(t, err)
		natural, theta := testTheta(m.Spec())
		trials := simulateTrials(t, m, control.ObservePartial, natural, 2, 3, 1)
		for _, cfg := range []Options{{Method: Ours}, {Method: MCEBaseline}, {Method: Ours, ForwardGradient: true}} {
			var lls [2][]float64
			var grads [2][][]float64
			for i, b := range []backends.Backend{bg, bx} {
				o := cfg
				if b == bg {
					o.ForwardGradient = false
				}
				e, err := New(m, b, o)
				require.NoError(t, err)
				d, err := e.Prepare([][][][]float64{trials, trials}, 0)
				require.NoError(t, err)
				th2 := append([]float64(nil), theta...)
				th2[0] += 0.3
				lls[i], grads[i], err = e.Eval(d, [][]float64{theta, th2})
				require.NoError(t, err)
			}
			for r := range 2 {
				assert.InEpsilon(t, lls[0][r], lls[1][r], 1e-9, "%s %+v loglik", name, cfg)
				for j := range grads[0][r] {
					assert.InDelta(t, grads[0][r][j], grads[1][r][j], 1e-9*math.Max(1, math.Abs(grads[0][r][j])), "%s %+v grad %d", name, cfg, j)
				}
			}
		}
	}
}

// xlaAndGo returns XLA's CPU plugin and the Go backend, and skips the test where no plugin
// is installed (make xla-cpu).
func xlaAndGo(t *testing.T) (bx, bg backends.Backend) {
	t.Helper()
	if _, err := graph.FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	bx, err := graph.NewBackend(graph.BackendXLA)
	require.NoError(t, err)
	bg, err = graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	return bx, bg
}
