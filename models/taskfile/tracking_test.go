package taskfile

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryExampleLoads: every file in examples/tasks reads, validates and derives, under a
// name of its own.
func TestEveryExampleLoads(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "tasks", "*.toml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	names := map[string]string{}
	for _, f := range files {
		task, err := Load(f)
		require.NoError(t, err, f)
		_, err = models.Derive(task)
		require.NoError(t, err, f)
		name := task.Spec().Name
		require.NotContains(t, names, name, "%s and %s have the same name", f, names[name])
		names[name] = f
	}
}

// TestTrackingFilesWriteLqgModels: the tracking task files write the linear-Gaussian models of
// lqg 0.3.1's BoundedActor, OptimalActor and RelativeObservationBoundedActor (state [target,
// cursor], A = I, B = dt·[0; 1], V = diag(1, motor_noise), F = I or [1, −1], W = diag of the
// perceptual noises, cost (target − cursor)² + action_cost·u² and (target − cursor)² at the
// end), with lqg's timing and no policy noise: checked at random states, controls, noises and
// parameters against those matrices.
func TestTrackingFilesWriteLqgModels(t *testing.T) {
	const dt = 1.0 / 60
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		file   string
		params []string
		obs    func(x, w []float64, p map[string]float64) []float64
		cost   func(p map[string]float64) float64 // action cost
	}{
		{"tracking", []string{"motor_noise", "sigma_target", "sigma_cursor", "action_cost"},
			func(x, w []float64, p map[string]float64) []float64 {
				return []float64{x[0] + p["sigma_target"]*w[0], x[1] + p["sigma_cursor"]*w[1]}
			},
			func(p map[string]float64) float64 { return p["action_cost"] }},
		{"tracking-optimal", []string{"motor_noise", "sigma_target", "sigma_cursor"},
			func(x, w []float64, p map[string]float64) []float64 {
				return []float64{x[0] + p["sigma_target"]*w[0], x[1] + p["sigma_cursor"]*w[1]}
			},
			func(map[string]float64) float64 { return 1e-3 }},
		{"tracking-relative", []string{"motor_noise", "sigma", "action_cost"},
			func(x, w []float64, p map[string]float64) []float64 {
				return []float64{x[0] - x[1] + p["sigma"]*w[0]}
			},
			func(p map[string]float64) float64 { return p["action_cost"] }},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			task := loadExample(t, c.file)
			spec := task.Spec()
			assert.Equal(t, c.file, spec.Name)
			assert.Equal(t, []string{"target", "cursor"}, spec.States)
			assert.Len(t, spec.Controls, 1)
			assert.Equal(t, 1067, spec.Steps)
			assert.Equal(t, models.SeeThenAct, spec.Timing)
			assert.Equal(t, models.PlannerFull, spec.Planner)
			assert.Zero(t, spec.Temperature)
			assert.Equal(t, []float64{0, 0}, spec.X0)
			assert.Equal(t, [][]float64{{1, 0}, {0, 0.25}}, spec.BeliefCov)
			var names []string
			for _, p := range spec.Params {
				names = append(names, p.Name)
				assert.Equal(t, models.Log10Scale, p.Scale, p.Name)
			}
			require.Equal(t, c.params, names)
			s, err := models.Derive(task)
			require.NoError(t, err)
			require.Len(t, s.V, 2)
			require.Len(t, s.W, len(c.obs([]float64{0, 0}, []float64{0, 0}, nil)))
			assert.True(t, s.AffineInControls)
			for range 20 {
				x := []float64{20 * (2*rng.Float64() - 1), 20 * (2*rng.Float64() - 1)}
				u := []float64{50 * (2*rng.Float64() - 1)}
				v := []float64{rng.NormFloat64(), rng.NormFloat64()}
				w := make([]float64, len(s.W))
				for i := range w {
					w[i] = rng.NormFloat64()
				}
				theta := make([]float64, len(spec.Params))
				p := map[string]float64{}
				for i, q := range spec.Params {
					lo, hi := q.ToScale(q.Lo), q.ToScale(q.Hi)
					theta[i] = q.FromScale(lo + rng.Float64()*(hi-lo))
					p[q.Name] = theta[i]
				}
				b := sym.Bind(nil, s.X, x)
				sym.Bind(b, s.U, u)
				sym.Bind(b, s.V, v)
				sym.Bind(b, s.W, w)
				sym.Bind(b, s.Theta, theta)
				eq := func(want float64, e sym.Expr, what string) {
					got := sym.Eval(e, b)
					assert.InDelta(t, want, got, 1e-13*math.Max(1, math.Abs(want)), "%s: %s", what, e)
				}
				eq(x[0]+v[0], s.Fv[0], "target's next value")
				eq(x[1]+dt*u[0]+p["motor_noise"]*v[1], s.Fv[1], "cursor's next value")
				for i, y := range c.obs(x, w, p) {
					eq(y, s.Hw[i], "observation")
				}
				e := x[0] - x[1]
				eq(e*e+c.cost(p)*u[0]*u[0], s.Cost, "running cost")
				eq(e*e, s.Final, "final cost")
			}
		})
	}
}

// The tracking files differ only where their models do: the sub-models are tracking.toml
// with the lines that make them sub-models changed.
func TestTrackingSubModelsShareTheRest(t *testing.T) {
	read := func(name string) *Task { return loadExample(t, name) }
	full := read("tracking").Spec()
	for _, name := range []string{"tracking-optimal", "tracking-relative"} {
		sub := read(name).Spec()
		assert.Equal(t, full.Steps, sub.Steps, name)
		assert.Equal(t, full.Jitter, sub.Jitter, name)
		assert.Equal(t, full.BeliefCov, sub.BeliefCov, name)
		assert.True(t, strings.HasPrefix(sub.Name, full.Name+"-"), name)
		for _, p := range sub.Params {
			for _, q := range full.Params {
				if p.Name == q.Name {
					assert.Equal(t, q, p, "parameter %s of %s", p.Name, name)
				}
			}
		}
	}
}
