package study

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewAxis(t *testing.T) {
	spec := linearSpec(t) // action_cost (0) and motor_noise (1) are log10-scale
	spec.Params = append(spec.Params, models.Param{Name: "x", Lo: -1, Hi: 1, Scale: models.LinearScale, Signed: true})
	for _, c := range []struct {
		index  int
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 0.01, 10, 4, []float64{0.01, 0.1, 1, 10}},
		{1, 0.001, 0.1, 3, []float64{0.001, 0.01, 0.1}},
		{3, -1, 0.5, 4, []float64{-1, -0.5, 0, 0.5}},
	} {
		ax := NewAxis(spec, c.index, c.lo, c.hi, c.n)
		assert.Equal(t, c.index, ax.Index)
		assert.Equal(t, spec.Params[c.index].Name, ax.Param.Name)
		assert.InDeltaSlice(t, c.want, ax.Values, 1e-12, ax.Param.Name)
		assert.Equal(t, c.lo, ax.Values[0], "the ends exactly as given")
		assert.Equal(t, c.hi, ax.Values[c.n-1], "the ends exactly as given")
	}
}

func TestPointsAndMaximum(t *testing.T) {
	spec := linearSpec(t)
	x, y := NewAxis(spec, 0, 0.1, 1, 2), NewAxis(spec, 2, 0.01, 1, 3)
	pts := Points(spec, []float64{0.5, 0.01, 0.5}, x, y)
	want := [][]float64{{-1, -2, -2}, {0, -2, -2}, {-1, -2, -1}, {0, -2, -1}, {-1, -2, 0}, {0, -2, 0}}
	require.Len(t, pts, len(want))
	for i := range want {
		assert.InDeltaSlice(t, want[i], pts[i], 1e-12, "point %d: row-major over (y, x), in log10 scale", i)
	}
	inf := math.Inf(-1)
	for _, c := range []struct {
		ll   []float64
		want int
	}{
		{[]float64{1, 3, 2}, 1},
		{[]float64{3, 3, 2}, 0},
		{[]float64{inf, inf, -5, 4}, 3},
		{nil, 0},
	} {
		assert.Equal(t, c.want, Maximum(c.ll), "%v", c.ll)
	}
}

// TestLogLiks: the grid's log-likelihoods evaluated in padded chunks are those of one run,
// and LogLik's of each subject at one point.
func TestLogLiks(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	e, err := likelihood.New(m, b, likelihood.Options{})
	require.NoError(t, err)
	spec := e.Spec()
	set, _, err := Simulate(m, b, Simulation{Theta: spec.Defaults(), Subjects: 2, Trials: 3, Steps: 6, Seed: 1,
		Solver: control.SolverOptions{Planner: spec.Planner}, Sim: control.SimOptions{Observe: control.ObservePartial, Temperature: spec.Temperature}})
	require.NoError(t, err)
	trials := set.Subjects[0].States()
	thetas := Points(spec, spec.Defaults(), NewAxis(spec, 0, 0.05, 0.5, 5), NewAxis(spec, 2, 0.1, 0.4, 2))
	all, err := LogLiks(e, trials, thetas, 1000)
	require.NoError(t, err)
	chunked, err := LogLiks(e, trials, thetas, 3*len(trials)) // 3 points a run: 10 = 3+3+3+1
	require.NoError(t, err)
	require.Len(t, all, 10)
	assert.InDeltaSlice(t, all, chunked, 1e-9)

	ll, grad, err := LogLik(e, set, spec.Defaults())
	require.NoError(t, err)
	require.Len(t, ll, 2)
	require.Len(t, grad[1], len(spec.Params))
	one, err := LogLiks(e, set.Subjects[1].States(), [][]float64{toScale(spec, spec.Defaults())}, 1)
	require.NoError(t, err)
	assert.InDelta(t, one[0], ll[1], 1e-9*math.Abs(ll[1]))

	path := filepath.Join(t.TempDir(), "grid.csv")
	best, err := WriteGrid(path, filepath.Join(filepath.Dir(path), "grid.png"), "linear",
		NewAxis(spec, 0, 0.05, 0.5, 5), NewAxis(spec, 2, 0.1, 0.4, 2), all, []float64{0.1, 0.2})
	require.NoError(t, err)
	assert.Equal(t, Maximum(all), best)
	rows := readCSV(t, path)
	assert.Equal(t, []string{"action_cost", "obs_noise", "loglik"}, rows[0])
	assert.Len(t, rows, 11)
}
