package plots

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
)

// labelValue parses a tick label back to a number.
func labelValue(t *testing.T, label string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(label, 64)
	require.NoError(t, err, "label %q is not a number", label)
	return v
}

// checkTicks requires ticks of [min, max] that a reader can read the range from: at least two
// labelled ticks and at most four (which fit a corner plot's small panels without running
// into each other), all in range, spanning at least a third of it (of its log10 on a log axis),
// each label a number equal to its tick's value to a millionth of their spacing, no label
// twice.
func checkTicks(t *testing.T, ts []plot.Tick, min, max float64, log bool, what string) {
	t.Helper()
	var vals []float64
	seen := map[string]bool{}
	for _, tk := range ts {
		tol := 1e-9 * math.Max(math.Abs(min), math.Abs(max))
		require.True(t, tk.Value >= min-tol && tk.Value <= max+tol, "%s: tick %g outside [%g, %g]", what, tk.Value, min, max)
		if tk.Label == "" {
			continue
		}
		require.False(t, seen[tk.Label], "%s: label %q twice", what, tk.Label)
		seen[tk.Label] = true
		vals = append(vals, tk.Value)
	}
	require.GreaterOrEqual(t, len(vals), 2, "%s [%g, %g]: labelled ticks %v", what, min, max, ts)
	assert.LessOrEqual(t, len(vals), 4, "%s [%g, %g]: labels %v", what, min, max, vals)
	spacing := math.Inf(1)
	for i := 1; i < len(vals); i++ {
		spacing = math.Min(spacing, math.Abs(vals[i]-vals[i-1]))
	}
	for _, tk := range ts {
		if tk.Label != "" {
			assert.InDelta(t, tk.Value, labelValue(t, tk.Label), 1e-6*spacing, "%s: label %q of %g", what, tk.Label, tk.Value)
		}
	}
	tr := func(v float64) float64 { return v }
	if log {
		tr = math.Log10
	}
	first, last := tr(vals[0]), tr(vals[len(vals)-1])
	assert.GreaterOrEqual(t, math.Abs(last-first), (tr(max)-tr(min))/3, "%s [%g, %g]: labels %v span too little of the axis", what, min, max, vals)
}

// TestTickersLabelTheRange: on linear and log axes of every width and magnitude, from a
// posterior's 1 % to many decades, every ticker labels at least two ticks that span the axis.
// (The corner plot used to label one tick of a narrow log axis, or none.)
func TestTickersLabelTheRange(t *testing.T) {
	// The x axis of effort_cost in the tutorial's corner plot, labelled 2e-4 5e-4 1e-3 2e-3 5e-3
	// on 1.4 inches, where the labels ran into each other.
	checkTicks(t, compactLogTicks{}.Ticks(1.5e-4, 7e-3), 1.5e-4, 7e-3, true, "compactLogTicks")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		// A log axis: lo anywhere in 10^[-8, 6], hi a factor 1.001 to 10^8 above it.
		lo := math.Pow(10, -8+14*rng.Float64())
		hi := lo * math.Pow(10, math.Pow(10, -3+rng.Float64()*4)/1.25)
		checkTicks(t, sparseLogTicks{}.Ticks(lo, hi), lo, hi, true, "sparseLogTicks")
		checkTicks(t, compactLogTicks{}.Ticks(lo, hi), lo, hi, true, "compactLogTicks")

		// A linear axis, possibly negative, of width 1e-6 to 1e6 relative to its magnitude.
		c := (rng.Float64()*2 - 1) * math.Pow(10, -6+12*rng.Float64())
		w := math.Pow(10, -6+12*rng.Float64())
		checkTicks(t, readableTicks{}.Ticks(c-w, c+w), c-w, c+w, false, "readableTicks")
	}
}

// TestIntegerTicks: an axis of counts is marked at integers only, labelled without decimals
// (0, 25, 50, not 0.00, 25.00, 50.00), short axes at every integer.
func TestIntegerTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		want     []string // the labels, if given
	}{
		{0, 50, []string{"0", "25", "50"}},
		{0, 30, nil},
		{0, 2, []string{"0", "1", "2"}},
		{0, 3, nil},
		{1, 7, nil},
		{0, 1000, nil},
		{0, 123456, nil},
	} {
		ts := integerTicks{}.Ticks(c.min, c.max)
		checkTicks(t, ts, c.min, c.max, false, "integerTicks")
		var labels []string
		for _, tk := range ts {
			assert.Equal(t, math.Round(tk.Value), tk.Value, "[%g, %g]: a tick between integers", c.min, c.max)
			if tk.Label != "" {
				assert.NotContains(t, tk.Label, ".", "[%g, %g]", c.min, c.max)
				assert.NotContains(t, tk.Label, "e", "[%g, %g]", c.min, c.max)
				labels = append(labels, tk.Label)
			}
		}
		if c.want != nil {
			assert.Equal(t, c.want, labels, "[%g, %g]", c.min, c.max)
		}
	}
}

// TestTickLabel: the shortest decimal of the value; exponents for the very small and large,
// compact ones for the corner plot's small panels.
func TestTickLabel(t *testing.T) {
	for _, c := range []struct {
		v, tol  float64
		compact bool
		want    string
	}{
		{-262500, 1e-3, false, "-262500"}, // gonum's own labels gave -262500.00
		{25, 1e-6, false, "25"},
		{0.25, 1e-6, false, "0.25"},
		{1e-12, 1e-6, false, "0"},
		{math.Copysign(0, -1), 1e-6, false, "0"},
		{0.1 + 0.2, 1e-6, false, "0.3"},
		{2.5e-4, 1e-12, false, "2.5e-4"},
		{1e-5, 1e-12, false, "1e-5"},
		{3e6, 1e-3, false, "3e6"},
		{0.001, 1e-12, false, "0.001"},
		{0.001, 1e-12, true, "1e-3"},
		{0.00115, 1e-11, true, "1.15e-3"},
		{2e4, 1e-3, true, "2e4"},
		{150, 1e-3, true, "150"},
	} {
		assert.Equal(t, c.want, tickLabel(c.v, c.tol, c.compact), "%g", c.v)
	}
}

// TestFigureAxesReadable: every axis of a corner plot, a trace plot and a predictive check
// of a well-determined posterior (draws within 2 % of each other) labels at least two ticks
// across its range, and the predictive check's time steps are integers.
func TestFigureAxesReadable(t *testing.T) {
	scales := []models.ParamScale{models.Log10Scale, models.Log10Scale, models.LinearScale}
	names := []string{"a", "b", "c"}
	rng := rand.New(rand.NewPCG(5, 6))
	draws := make([][]float64, 400)
	for i := range draws {
		draws[i] = []float64{1.2e-3 * (1 + 0.005*rng.NormFloat64()), 0.1 * (1 + 0.005*rng.NormFloat64()), 3 + 0.01*rng.NormFloat64()}
	}
	axisOK := func(a plot.Axis, what string) {
		t.Helper()
		_, log := a.Scale.(plot.LogScale)
		checkTicks(t, a.Tick.Marker.Ticks(a.Min, a.Max), a.Min, a.Max, log, what)
	}
	for _, truth := range [][]float64{nil, {1e-3, math.NaN(), 3}} {
		grid, err := cornerPlots(names, scales, draws, truth)
		require.NoError(t, err)
		for i, row := range grid {
			for j, p := range row {
				if p == nil {
					continue
				}
				axisOK(p.X, "corner x "+names[j])
				if i != j {
					axisOK(p.Y, "corner y "+names[i])
				}
			}
		}
		panels, err := tracePlots(names, scales, [][][]float64{draws[:200], draws[200:]}, truth)
		require.NoError(t, err)
		for k, p := range panels {
			axisOK(p.X, "trace x")
			axisOK(p.Y, "trace y "+names[k])
		}
	}

	traj := make([][]float64, 51)
	for i := range traj {
		traj[i] = []float64{math.Sin(float64(i) / 10), 0.001 * float64(i)}
	}
	for _, ov := range StateOverlays([]string{"x", "v"}, [][][]float64{traj}, [][][]float64{traj}) {
		p, err := overlayPlot(ov)
		require.NoError(t, err)
		axisOK(p.Y, "ppc y "+ov.YLabel)
		axisOK(p.X, "ppc time")
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if tk.Label != "" {
				assert.False(t, strings.ContainsAny(tk.Label, ".e"), "time step %q", tk.Label)
			}
		}
	}
}
