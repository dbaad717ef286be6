package plots

import (
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// testParam is a parameter of the test population: its scale, and each group's mean in
// fitting scale (group b differs in action_cost only).
type testParam struct {
	name  string
	scale models.ParamScale
	means [2]float64
}

var testParams = []testParam{
	{"action_cost", models.Log10Scale, [2]float64{-1, -0.4}},
	{"target_x", models.LinearScale, [2]float64{0.2, 0.2}},
	{"motor_noise", models.Log10Scale, [2]float64{-1.3, -1.3}},
}

// testPopulation returns the panels of a population of two groups of n subjects: true
// values drawn around each group's mean (SD 0.2), independent estimates around them (SE
// 0.15), population estimates pulled halfway to the mean. With truth false no truths.
func testPopulation(n int, truth bool) ([]DensityPanel, []ShrinkagePanel) {
	rng := rand.New(rand.NewPCG(4, 5))
	var dens []DensityPanel
	var shr []ShrinkagePanel
	for _, tp := range testParams {
		dp := DensityPanel{Param: tp.name, Scale: tp.scale}
		sp := ShrinkagePanel{Param: tp.name, Scale: tp.scale}
		for g, name := range []string{"group a", "group b"} {
			m := tp.means[g]
			dg := DensityGroup{Name: name, Mean: m + 0.02, SD: 0.18}
			sg := ShrinkageGroup{Name: name, Mean: m + 0.02}
			for range n {
				tr := m + 0.2*rng.NormFloat64()
				ind := tr + 0.15*rng.NormFloat64()
				pop := (ind + m) / 2
				dg.Estimates = append(dg.Estimates, pop)
				sg.Independent, sg.Shrunk = append(sg.Independent, ind), append(sg.Shrunk, pop)
				sg.IndependentSE, sg.ShrunkSE = append(sg.IndependentSE, 0.15), append(sg.ShrunkSE, 0.1)
				if truth {
					dg.Truths, sg.Truths = append(dg.Truths, tr), append(sg.Truths, tr)
				}
			}
			if truth {
				dg.TrueMean = &tp.means[g]
			}
			dp.Groups, sp.Groups = append(dp.Groups, dg), append(sp.Groups, sg)
		}
		dens, shr = append(dens, dp), append(shr, sp)
	}
	return dens, shr
}

// assertPNG asserts that path is a PNG of the size of a figure of hd over rows × cols panels
// of w × h.
func assertPNG(t *testing.T, path string, hd header, rows, cols int, w, h vg.Length) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, path)
	size := layoutFigure(hd, rows, cols, w, h).size
	assert.InDelta(t, size.X.Dots(dpi), img.Bounds().Dx(), 1, "%s: width", path)
	assert.InDelta(t, size.Y.Dots(dpi), img.Bounds().Dy(), 1, "%s: height", path)
}

// TestPopulationDensities: a panel per parameter, three a row, log axes for log-scaled
// parameters, a curve per group, the strips of points below 0 and the density's ticks not;
// the key names the groups and, with truths, the crosses and the true means; a PNG of the
// figure's size.
func TestPopulationDensities(t *testing.T) {
	dens, _ := testPopulation(12, true)
	dens = append(dens, DensityPanel{Param: "obs_noise", Scale: models.Log10Scale, Groups: dens[2].Groups})
	hd, grid, err := densityFigure("population", dens)
	require.NoError(t, err)
	require.Len(t, grid, 2)
	assert.Len(t, grid[0], 3)
	assert.Len(t, grid[1], 1)
	labels := func(hd header) []string {
		var out []string
		for _, e := range hd.key {
			out = append(out, e.label)
		}
		return out
	}
	assert.Equal(t, []string{"group a", "group b", "subject's estimate under the population", "subject's true value", "true population mean"}, labels(hd))
	c := draw.New(vgimg.New(4*vg.Inch, 4*vg.Inch))
	for k, p := range []*plot.Plot{grid[0][0], grid[0][1], grid[0][2]} {
		tp := testParams[k]
		_, logX := p.X.Tick.Marker.(log10Ticks)
		assert.Equal(t, tp.scale == models.Log10Scale, logX, tp.name)
		assert.Less(t, p.X.Min, tp.means[0]-0.54, "%s: the axis shows mean − 3 SD", tp.name)
		assert.Greater(t, p.X.Max, tp.means[1]+0.54, tp.name)
		assert.Negative(t, p.Y.Min, "strips below the curves")
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			assert.GreaterOrEqual(t, tk.Value, 0.0, "%s: no negative densities on the axis", tp.name)
		}
		assert.Zero(t, p.Legend.Rectangle(c).Size().X, "the key is the figure's, not the panel's")
	}
	assert.Equal(t, "density per log10 unit", grid[0][0].Y.Label.Text)
	assert.Equal(t, "density", grid[0][1].Y.Label.Text)

	path := filepath.Join(t.TempDir(), "population.png")
	require.NoError(t, PopulationDensities(path, "population", dens))
	assertPNG(t, path, hd, 2, 3, popPanel, densityHeight)

	plain, _ := testPopulation(5, false)
	plain = plain[:1]
	plain[0].Groups = plain[0].Groups[:1]
	plain[0].Groups[0].Name = ""
	hd, grid, err = densityFigure("", plain)
	require.NoError(t, err)
	assert.Equal(t, []string{"population normal", "subject's estimate under the population"}, labels(hd))
	path = filepath.Join(t.TempDir(), "one.png")
	require.NoError(t, PopulationDensities(path, "", plain))
	assertPNG(t, path, hd, 1, 1, popPanel, densityHeight)
}

// TestDensityCurve: the normal's density, its peak kept however narrow it is.
func TestDensityCurve(t *testing.T) {
	xy := densityCurve(0.3, 1e-3, -2, 2)
	peak := 0.0
	for _, p := range xy {
		peak = math.Max(peak, p.Y)
	}
	assert.InDelta(t, 1/(1e-3*math.Sqrt(2*math.Pi)), peak, 1e-9)
	xy = densityCurve(-1, 0.5, -3, 1)
	assert.Equal(t, -3.0, xy[0].X)
	assert.Equal(t, 1.0, xy[len(xy)-1].X)
	for i := 1; i < len(xy); i++ {
		assert.Greater(t, xy[i].X, xy[i-1].X)
	}
}

// TestLog10Ticks: an axis in log10 marked where compactLogTicks mark the axis of the values,
// labelled in natural units.
func TestLog10Ticks(t *testing.T) {
	var labels []string
	for _, tk := range (log10Ticks{}).Ticks(-3.2, 0.1) {
		assert.True(t, tk.Value >= -3.2 && tk.Value <= 0.1, "tick %g in range", tk.Value)
		if tk.Label != "" {
			labels = append(labels, tk.Label)
			assert.InDelta(t, math.Log10(parseLabel(t, tk.Label)), tk.Value, 1e-12)
		}
	}
	assert.Equal(t, []string{"1e-3", "0.01", "0.1", "1"}, labels)
}

// parseLabel parses a tick label.
func parseLabel(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

// TestShrinkage: independent against population estimates on the same axes, log axes for
// log-scaled parameters; with truths an error row below, its RMSEs in the title; four
// parameters a row; a PNG of the figure's size.
func TestShrinkage(t *testing.T) {
	_, shr := testPopulation(12, true)
	hd, grid, err := shrinkageFigure("shrinkage", shr)
	require.NoError(t, err)
	require.Len(t, grid, 2, "shrinkage and errors")
	require.Len(t, grid[1], 3)
	for k, p := range grid[0] {
		_, logX := p.X.Tick.Marker.(log10Ticks)
		_, logY := p.Y.Tick.Marker.(log10Ticks)
		assert.Equal(t, testParams[k].scale == models.Log10Scale, logX)
		assert.Equal(t, logX, logY)
		assert.Equal(t, [2]float64{p.X.Min, p.X.Max}, [2]float64{p.Y.Min, p.Y.Max}, "the same range on both axes")
		assert.Contains(t, grid[1][k].Title.Text, "RMSE: alone ")
		assert.IsType(t, readableTicks{}, grid[1][k].X.Tick.Marker, "errors in fitting scale")
	}
	assert.Equal(t, "|alone − truth| (log10)", grid[1][0].X.Label.Text)
	assert.Equal(t, "|population − truth|", grid[1][1].Y.Label.Text)
	var labels []string
	for _, e := range hd.key {
		labels = append(labels, e.label)
	}
	assert.Equal(t, []string{"group a", "group b", "population mean", "95 % interval", "identity: no shrinkage (top), equal errors (below)"}, labels)
	path := filepath.Join(t.TempDir(), "shrinkage.png")
	require.NoError(t, Shrinkage(path, "shrinkage", shr))
	assertPNG(t, path, hd, 2, 3, popPanel, popPanel)

	// Five parameters without truths: four, then one; no bars without standard errors.
	_, shr = testPopulation(6, false)
	shr = append(shr, shr[0], shr[1])
	for i := range shr[4].Groups {
		shr[4].Groups[i].IndependentSE, shr[4].Groups[i].ShrunkSE = nil, nil
	}
	hd, grid, err = shrinkageFigure("", shr)
	require.NoError(t, err)
	require.Len(t, grid, 2)
	assert.Len(t, grid[0], 4)
	assert.Len(t, grid[1], 1)
	assert.Equal(t, "identity: no shrinkage", hd.key[len(hd.key)-1].label)
	assert.Empty(t, intervalBars(shr[4].Groups[0], -5, 5, keyGray).ends)
	assert.Len(t, intervalBars(shr[0].Groups[0], -5, 5, keyGray).ends, 12, "two bars a subject")
}

// TestShrinkageErrors: the error panel's RMSEs and points; interval bars cut to the axis.
func TestShrinkageErrors(t *testing.T) {
	sp := ShrinkagePanel{Param: "a", Scale: models.LinearScale, Groups: []ShrinkageGroup{{
		Mean: 0, Independent: []float64{1, -2, 5}, Shrunk: []float64{0.5, -1, 3}, Truths: []float64{0, 0, math.NaN()},
		IndependentSE: []float64{100, math.NaN(), 0}, ShrunkSE: []float64{0.1, 0.1, 0.1}}}}
	p, err := errorPlot(sp)
	require.NoError(t, err)
	assert.Equal(t, "RMSE: alone 1.58, population 0.791", p.Title.Text, "√((1+4)/2), √((0.25+1)/2); the subject without truth left out")
	assert.InDelta(t, 2.1, p.X.Max, 1e-12)
	bars := intervalBars(sp.Groups[0], -3, 6, keyGray)
	require.Len(t, bars.ends, 4, "no bar for a NaN or zero standard error")
	assert.Equal(t, -3.0, bars.ends[0][0].X, "a wide interval is cut to the axis")
	assert.Equal(t, 6.0, bars.ends[0][1].X)
	sp.Groups[0].Truths = nil
	p, err = errorPlot(sp)
	require.NoError(t, err)
	assert.Nil(t, p, "no errors without truths")
}

// TestPopulationFigureErrors: figures that cannot be drawn are errors naming the file and
// what is wrong.
func TestPopulationFigureErrors(t *testing.T) {
	dir := t.TempDir()
	dens := func(edit func([]DensityPanel)) []DensityPanel {
		d, _ := testPopulation(4, true)
		edit(d)
		return d
	}
	for _, c := range []struct {
		panels []DensityPanel
		msg    string
	}{
		{nil, "no panels"},
		{dens(func(d []DensityPanel) { d[1].Groups = nil }), "target_x: no groups"},
		{dens(func(d []DensityPanel) { d[1].Groups[1].Name = "group c" }), "the first panel's are"},
		{dens(func(d []DensityPanel) {
			d[0].Groups[1].Name = "group a"
			d[1].Groups[1].Name = "group a"
			d[2].Groups[1].Name = "group a"
		}), `group "group a" twice`},
		{dens(func(d []DensityPanel) { d[2].Groups[0].SD = 0 }), "SD > 0"},
		{dens(func(d []DensityPanel) { d[0].Groups[0].Mean = math.NaN() }), "finite mean"},
		{dens(func(d []DensityPanel) { d[0].Groups[1].Truths = d[0].Groups[1].Truths[1:] }), `action_cost, "group b": 3 true values for 4 subjects`},
	} {
		path := filepath.Join(dir, "d.png")
		err := PopulationDensities(path, "", c.panels)
		require.Error(t, err, c.msg)
		assert.Contains(t, err.Error(), path)
		assert.Contains(t, err.Error(), c.msg)
		assert.NoFileExists(t, path)
	}
	shr := func(edit func([]ShrinkagePanel)) []ShrinkagePanel {
		_, s := testPopulation(4, true)
		edit(s)
		return s
	}
	for _, c := range []struct {
		panels []ShrinkagePanel
		msg    string
	}{
		{nil, "no panels"},
		{shr(func(s []ShrinkagePanel) { s[0].Groups = s[0].Groups[:1] }), `target_x: groups ["group a" "group b"], the first panel's are ["group a"]`},
		{shr(func(s []ShrinkagePanel) { s[1].Groups[0].Shrunk = nil }), `target_x, "group a": 0 population estimates for 4 independent estimates`},
		{shr(func(s []ShrinkagePanel) { s[1].Groups[0].ShrunkSE = s[1].Groups[0].ShrunkSE[:2] }), "2 population standard errors"},
		{shr(func(s []ShrinkagePanel) { s[1].Groups[1].IndependentSE = []float64{1} }), "1 independent standard errors"},
		{shr(func(s []ShrinkagePanel) { s[2].Groups[1].Truths = []float64{1} }), "1 true values"},
		{shr(func(s []ShrinkagePanel) { s[2].Groups[1].Mean = math.Inf(1) }), "population mean +Inf"},
	} {
		path := filepath.Join(dir, "s.png")
		err := Shrinkage(path, "", c.panels)
		require.Error(t, err, c.msg)
		assert.Contains(t, err.Error(), path)
		assert.Contains(t, err.Error(), c.msg)
		assert.NoFileExists(t, path)
	}
	assert.True(t, strings.HasPrefix(groupName(""), "the population"))
}
