package taskfile

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// paperTasks are the built-in tasks that examples/tasks holds as files of the same name.
var paperTasks = []string{"reaching", "navigation", "pendulum", "cartpole", "lightdark", "linear"}

// loadExample loads examples/tasks/<name>.toml.
func loadExample(t testing.TB, name string) *Task {
	t.Helper()
	task, err := Load(filepath.Join("..", "..", "examples", "tasks", name+".toml"))
	require.NoError(t, err)
	return task
}

// flatten lists every expression of a symbolic model, derivatives included.
func flatten(s *models.Symbolic) []sym.Expr {
	var out []sym.Expr
	vec := func(v sym.Vec) { out = append(out, v...) }
	mat := func(m [][]sym.Expr) {
		for _, r := range m {
			vec(r)
		}
	}
	vec(s.Fv)
	vec(s.F0)
	mat(s.A)
	mat(s.B)
	mat(s.Vn)
	for _, m := range append(append(append([][][]sym.Expr{}, s.Cx...), s.Cu...), s.D...) {
		mat(m)
	}
	vec(s.Hw)
	vec(s.H0)
	mat(s.Fo)
	mat(s.Wn)
	vec(sym.Vec{s.Cost, s.Final})
	vec(s.Cq)
	vec(s.Cr)
	mat(s.CQ)
	mat(s.CR)
	mat(s.CP)
	mat(s.FinalQ)
	vec(s.Finalq)
	return out
}

// TestExamplesEqualBuiltins: each paper task written as a file has the built-in task's spec,
// and its dynamics, observation, costs and every derivative the solver and the likelihood use
// agree with the built-in task's at random points to 1e-12 relative.
func TestExamplesEqualBuiltins(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range paperTasks {
		t.Run(name, func(t *testing.T) {
			file := loadExample(t, name)
			builtin, err := models.Get(name)
			require.NoError(t, err)
			require.Equal(t, builtin.Spec(), file.Spec())
			sb, err := models.Derive(builtin)
			require.NoError(t, err)
			sf, err := models.Derive(file)
			require.NoError(t, err)
			require.NotSame(t, sb, sf, "a file task is derived on its own, not taken from the built-in task's cache")
			assert.Equal(t, sb.AffineInControls, sf.AffineInControls)
			eb, ef := flatten(sb), flatten(sf)
			require.Len(t, ef, len(eb))
			for range 5 {
				point := func(n int, scale float64) []float64 {
					x := make([]float64, n)
					for i := range x {
						x[i] = scale * (2*rng.Float64() - 1)
					}
					return x
				}
				x, u := point(len(sb.X), 1), point(len(sb.U), 1)
				v, w := point(len(sb.V), 1), point(len(sb.W), 1)
				theta := make([]float64, len(sb.Theta))
				for i, p := range sb.Spec.Params {
					lo, hi := p.ToScale(p.Lo), p.ToScale(p.Hi)
					theta[i] = p.FromScale(lo + rng.Float64()*(hi-lo))
				}
				bind := func(s *models.Symbolic) map[*sym.Node]float64 {
					b := sym.Bind(nil, s.X, x)
					sym.Bind(b, s.U, u)
					sym.Bind(b, s.V, v)
					sym.Bind(b, s.W, w)
					return sym.Bind(b, s.Theta, theta)
				}
				bb, bf := bind(sb), bind(sf)
				for i := range eb {
					want, got := sym.Eval(eb[i], bb), sym.Eval(ef[i], bf)
					assert.InDelta(t, want, got, 1e-12*math.Max(1, math.Abs(want)), "expression %d: %s vs %s", i, eb[i], ef[i])
				}
			}
		})
	}
}
