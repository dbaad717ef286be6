package plots

import (
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
)

// TestThinIndices: evenly spaced, first and last kept, all when few.
func TestThinIndices(t *testing.T) {
	for _, c := range []struct {
		n, most int
		want    []int
	}{
		{0, 5, []int{}},
		{3, 5, []int{0, 1, 2}},
		{5, 5, []int{0, 1, 2, 3, 4}},
		{9, 3, []int{0, 4, 8}},
		{10, 4, []int{0, 3, 6, 9}},
		{4, 1, []int{0, 1, 2, 3}},
	} {
		assert.Equal(t, c.want, thinIndices(c.n, c.most), "n %d, most %d", c.n, c.most)
	}
}

func TestCompactLabel(t *testing.T) {
	for v, want := range map[float64]string{1e-4: "1e-4", 2e-4: "2e-4", 5e-9: "5e-9", 0.01: "0.01", 0.5: "0.5",
		1: "1", 200: "200", 1e4: "1e4", 2e5: "2e5", 1.5e-3: "1.5e-3"} {
		assert.Equal(t, want, compactLabel(v), "%g", v)
	}
}

// TestAxisRange: padded by 5 % (in log10 on log axes), the truth included, undrawable values
// left out.
func TestAxisRange(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name   string
		vals   []float64
		truth  float64
		log    bool
		lo, hi float64
	}{
		{"linear", []float64{1, 3, 2}, nan, false, 0.9, 3.1},
		{"log", []float64{0.01, 1}, nan, true, math.Pow(10, -2.1), math.Pow(10, 0.1)},
		{"truth widens", []float64{1, 2}, 3, false, 0.9, 3.1},
		{"truth inside", []float64{1, 3}, 2, false, 0.9, 3.1},
		{"log leaves out 0 and negative truth", []float64{0, 0.1, 10}, -1, true, math.Pow(10, -1.1), math.Pow(10, 1.1)},
		{"single value", []float64{2, 2}, nan, false, 1.9, 2.1},
		{"single value 0", []float64{0}, nan, false, -0.05, 0.05},
		{"nothing drawable", []float64{nan, math.Inf(1)}, nan, false, 0, 1},
		{"nothing drawable, log", []float64{-1}, nan, true, 1, 10},
	} {
		lo, hi := axisRange(c.vals, c.truth, c.log)
		assert.InDelta(t, c.lo, lo, 1e-12, c.name)
		assert.InDelta(t, c.hi, hi, 1e-12, c.name)
	}
}

// TestHistBins: edges even in log10 on log axes, in natural units; fractions summing to 1.
func TestHistBins(t *testing.T) {
	bins := histBins([]float64{0.001, 0.002, 0.05, 0.5, 0.9, 5}, 0.001, 1, true, 3)
	require.Len(t, bins, 3)
	for i, want := range [][2]float64{{0.001, 0.01}, {0.01, 0.1}, {0.1, 1}} {
		assert.InDelta(t, want[0], bins[i].Min, 1e-12)
		assert.InDelta(t, want[1], bins[i].Max, 1e-12)
	}
	assert.InDeltaSlice(t, []float64{0.4, 0.2, 0.4}, []float64{bins[0].Weight, bins[1].Weight, bins[2].Weight}, 1e-12,
		"5 outside the range is left out; the upper edge belongs to the last bin")

	bins = histBins([]float64{0, 1, 2, 3, 4}, 0, 4, false, 2)
	assert.Equal(t, [2]float64{0, 2}, [2]float64{bins[0].Min, bins[0].Max})
	assert.Equal(t, [2]float64{2, 4}, [2]float64{bins[1].Min, bins[1].Max})
	assert.InDeltaSlice(t, []float64{0.4, 0.6}, []float64{bins[0].Weight, bins[1].Weight}, 1e-12)
	assert.Equal(t, 10, histBinCount(30))
	assert.Equal(t, 20, histBinCount(400))
	assert.Equal(t, 40, histBinCount(4000))
}

// assertSame asserts got == want, NaN equal to NaN.
func assertSame(t *testing.T, want, got float64, msg ...any) {
	t.Helper()
	if math.IsNaN(want) {
		assert.True(t, math.IsNaN(got), msg...)
		return
	}
	assert.Equal(t, want, got, msg...)
}

// testDraws returns n draws of d parameters, log-normal for the log ones.
func testDraws(n int, scales []models.ParamScale) [][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, len(scales))
		for k, s := range scales {
			v := float64(k) + 0.3*rng.NormFloat64()
			if s == models.Log10Scale {
				v = math.Pow(10, v-3)
			}
			out[i][k] = v
		}
	}
	return out
}

// TestCornerLayout: d(d+1)/2 cells, histograms on the diagonal, scatter points below (thinned),
// truth lines where true values are given and drawable.
func TestCornerLayout(t *testing.T) {
	scales := []models.ParamScale{models.Log10Scale, models.LinearScale, models.Log10Scale}
	names := []string{"a", "b", "c"}
	draws := testDraws(3000, scales)
	truth := []float64{0.002, math.NaN(), 1e3} // c's truth lies far above its draws
	axes, cells, err := cornerLayout(names, scales, draws, truth)
	require.NoError(t, err)
	require.Len(t, axes, 3)
	assert.Equal(t, []bool{true, false, true}, []bool{axes[0].log, axes[1].log, axes[2].log})
	assert.Greater(t, axes[2].hi, 1e3, "the axis reaches the truth")
	require.Len(t, cells, 6)
	for _, c := range cells {
		assert.LessOrEqual(t, c.j, c.i)
		if c.i == c.j {
			total := 0.0
			for _, b := range c.bins {
				total += b.Weight
			}
			assert.InDelta(t, 1, total, 1e-9)
			assert.Empty(t, c.points)
			assert.True(t, math.IsNaN(c.hline))
		} else {
			assert.Len(t, c.points, CornerPoints)
			assert.Empty(t, c.bins)
			assertSame(t, truth[c.i], c.hline, "row %d col %d", c.i, c.j)
		}
		if c.j == 1 {
			assert.True(t, math.IsNaN(c.vline), "no truth for b")
		} else {
			assertSame(t, truth[c.j], c.vline)
		}
	}
	// Without truth no lines; a true value that a log axis cannot show is left out.
	_, cells, err = cornerLayout(names, scales, draws, nil)
	require.NoError(t, err)
	for _, c := range cells {
		assert.True(t, math.IsNaN(c.vline) && math.IsNaN(c.hline))
	}
	_, cells, err = cornerLayout(names, scales, draws, []float64{-1, 0, 0})
	require.NoError(t, err)
	assert.True(t, math.IsNaN(cells[0].vline))
	assert.Equal(t, 0.0, cells[2].vline, "b is linear: 0 is drawn")

	for _, bad := range []struct {
		names  []string
		scales []models.ParamScale
		draws  [][]float64
		truth  []float64
	}{
		{nil, nil, draws, nil},
		{names, scales[:2], draws, nil},
		{names, scales, nil, nil},
		{names, scales, draws, []float64{1}},
		{names, scales, [][]float64{{1, 2}}, nil},
	} {
		_, _, err := cornerLayout(bad.names, bad.scales, bad.draws, bad.truth)
		assert.Error(t, err)
	}
}

// TestCornerAndTraceWritePNGs: the files are written, with one panel per parameter (trace) and
// d×d cells (corner), log axes on log-scale parameters, quickly.
func TestCornerAndTraceWritePNGs(t *testing.T) {
	scales := []models.ParamScale{models.Log10Scale, models.LinearScale, models.Log10Scale, models.Log10Scale}
	names := []string{"a", "b", "c", "d"}
	chains := [][][]float64{testDraws(1000, scales), testDraws(1000, scales), testDraws(1000, scales), testDraws(1000, scales)}
	var pooled [][]float64
	for _, c := range chains {
		pooled = append(pooled, c...)
	}
	truth := []float64{0.001, 1, math.NaN(), 1}
	dir := t.TempDir()
	start := time.Now()
	corner, trace := filepath.Join(dir, "corner.png"), filepath.Join(dir, "trace.png")
	require.NoError(t, Corner(corner, "subject 1", names, scales, pooled, truth))
	require.NoError(t, Trace(trace, "subject 1", names, scales, chains, truth))
	t.Logf("corner and trace of 4 parameters × 4000 draws: %v", time.Since(start))
	for _, path := range []string{corner, trace} {
		f, err := os.Open(path)
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, path)
		assert.Greater(t, img.Bounds().Dx(), 800, path)
	}

	grid, err := cornerPlots(names, scales, pooled, truth)
	require.NoError(t, err)
	require.Len(t, grid, 4)
	panels := 0
	for i, row := range grid {
		require.Len(t, row, 4)
		for j, p := range row {
			if j > i {
				assert.Nil(t, p)
				continue
			}
			panels++
			_, logX := p.X.Scale.(plot.LogScale)
			assert.Equal(t, scales[j] == models.Log10Scale, logX, "cell %d,%d", i, j)
			if j < i {
				_, logY := p.Y.Scale.(plot.LogScale)
				assert.Equal(t, scales[i] == models.Log10Scale, logY, "cell %d,%d", i, j)
			}
		}
	}
	assert.Equal(t, 10, panels)

	ps, err := tracePlots(names, scales, chains, nil)
	require.NoError(t, err)
	require.Len(t, ps, 4)
	for k, p := range ps {
		_, logY := p.Y.Scale.(plot.LogScale)
		assert.Equal(t, scales[k] == models.Log10Scale, logY)
		assert.Equal(t, 1000.0, p.X.Max)
	}
	_, err = tracePlots(names, scales, nil, nil)
	assert.Error(t, err)
	assert.Error(t, Corner(filepath.Join(dir, "x.png"), "", names, scales, nil, nil))
}

// TestPredictiveCheck: panels per state component over time, or hand paths; a PNG.
func TestPredictiveCheck(t *testing.T) {
	traj := func(off float64) [][]float64 {
		return [][]float64{{off, 0}, {off + 1, 0.5}, {off + 2, 1}}
	}
	sims := [][][]float64{traj(0), traj(0.1), traj(0.2)}
	data := [][][]float64{traj(0.05)}
	panels := StateOverlays([]string{"x", "v"}, sims, data)
	require.Len(t, panels, 2)
	assert.Equal(t, "v", panels[1].Title)
	require.Len(t, panels[1].Simulated, 3)
	require.Len(t, panels[1].Data, 1)
	assert.Equal(t, []float64{0, 1, 2}, panels[1].Data[0].X, "time steps")
	assert.Equal(t, []float64{0, 0.5, 1}, panels[1].Data[0].Y, "the component")
	assert.Equal(t, []float64{0.2, 1.2, 2.2}, panels[0].Simulated[2].Y)

	hand := HandOverlay(func(x []float64) (float64, float64) { return x[0] + x[1], x[0] - x[1] }, sims, data)
	assert.True(t, hand.Equal)
	assert.InDeltaSlice(t, []float64{0.05, 1.55, 3.05}, hand.Data[0].X, 1e-12)
	assert.InDeltaSlice(t, []float64{0.05, 0.55, 1.05}, hand.Data[0].Y, 1e-12)

	dir := t.TempDir()
	for name, ps := range map[string][]Overlay{"states.png": panels, "hand.png": {hand}} {
		path := filepath.Join(dir, name)
		require.NoError(t, PredictiveCheck(path, "subject 1", ps, 2))
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Positive(t, info.Size())
	}
	assert.Error(t, PredictiveCheck(filepath.Join(dir, "none.png"), "", nil, 1))
}
