package plots

import (
	"image/color"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// overlaps reports whether two rectangles share more than an edge.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// inside reports whether a lies within b.
func inside(a, b vg.Rectangle) bool {
	const eps = 1e-9
	return a.Min.X >= b.Min.X-eps && a.Max.X <= b.Max.X+eps && a.Min.Y >= b.Min.Y-eps && a.Max.Y <= b.Max.Y+eps
}

// TestKeyOutsideThePanels: a figure's key lies between its title and its panels, inside the
// image and apart from the panels, its entries apart from each other; a key wider than the
// figure wraps onto rows, and one entry wider than the panels widens the figure.
func TestKeyOutsideThePanels(t *testing.T) {
	short := []keyEntry{lineKey("simulated at posterior draws", color.Black, 1), lineKey("data", color.Black, 1)}
	var long []keyEntry
	for i := range 12 {
		long = append(long, lineKey("chains "+strings.Repeat("9", i+1), SeriesColor(i), 1))
	}
	wide := []keyEntry{glyphKey(strings.Repeat("a very long description of a mark ", 6), color.Black, draw.CircleGlyph{}, 3)}
	for _, c := range []struct {
		name       string
		hd         header
		rows, cols int
		w, h       vg.Length
		keyRows    int // 0: several, -1: none
	}{
		{"predictive check", header{title: "subject 1: 5 trials\nover its 10 trials", key: short}, 1, 2, 3.4 * vg.Inch, 2.6 * vg.Inch, 1},
		{"many chains, narrow", header{title: "subject 1", key: long}, 5, 1, 3 * vg.Inch, 1.7 * vg.Inch, 0},
		{"entry wider than the panels", header{key: wide}, 1, 1, 2 * vg.Inch, 2 * vg.Inch, 1},
		{"no key", header{title: "t"}, 2, 2, 2 * vg.Inch, 2 * vg.Inch, -1},
		{"nothing", header{}, 1, 1, 2 * vg.Inch, 2 * vg.Inch, -1},
	} {
		lay := layoutFigure(c.hd, c.rows, c.cols, c.w, c.h)
		image := vg.Rectangle{Max: lay.size}
		assert.InDelta(t, float64(c.h)*float64(c.rows), float64(lay.panels.Size().Y), 1e-9, "%s: the panels keep their height", c.name)
		assert.InDelta(t, float64(c.w)*float64(c.cols), float64(lay.panels.Size().X), 1e-9, "%s: the panels keep their width", c.name)
		assert.True(t, inside(lay.panels, image), c.name)
		require.Len(t, lay.keys, len(c.hd.key), c.name)
		rowTops := map[vg.Length]bool{}
		for i, b := range lay.keys {
			assert.True(t, inside(b.box, image), "%s: entry %d inside the image", c.name, i)
			assert.True(t, inside(b.thumb, b.box), "%s: sample inside its entry", c.name)
			assert.False(t, overlaps(b.box, lay.panels), "%s: entry %d %v over the panels %v", c.name, i, b.box, lay.panels)
			assert.GreaterOrEqual(t, float64(b.box.Min.Y), float64(lay.panels.Max.Y), "%s: entry %d above the panels", c.name, i)
			for j := range i {
				assert.False(t, overlaps(b.box, lay.keys[j].box), "%s: entries %d and %d overlap", c.name, j, i)
			}
			rowTops[b.box.Max.Y] = true
		}
		switch c.keyRows {
		case 0:
			assert.Greater(t, len(rowTops), 1, "%s: the key wraps", c.name)
		case -1:
			assert.Empty(t, rowTops, c.name)
		default:
			assert.Len(t, rowTops, c.keyRows, "%s: rows of the key", c.name)
		}
		if c.hd.title == "" && len(c.hd.key) == 0 {
			assert.Zero(t, lay.header, c.name)
		}
	}
}

// TestNoLegendInsidePanels: the panels of the figures whose keys used to sit over their data
// (the predictive check's, the heat map's marks, reaching's target) carry no legend of their
// own; the figure's key says it all.
func TestNoLegendInsidePanels(t *testing.T) {
	c := draw.New(vgimg.New(4*vg.Inch, 4*vg.Inch))
	empty := func(p *plot.Plot, what string) {
		t.Helper()
		r := p.Legend.Rectangle(c)
		assert.Zero(t, r.Size().X, "%s has a legend inside the panel", what)
	}
	traj := [][]float64{{0, 0}, {1, 1}, {2, 0.5}}
	for _, ov := range append(StateOverlays([]string{"x", "v"}, [][][]float64{traj}, [][][]float64{traj}),
		HandOverlay(func(x []float64) (float64, float64) { return x[0], x[1] }, [][][]float64{traj}, [][][]float64{traj})) {
		p, err := overlayPlot(ov)
		require.NoError(t, err)
		empty(p, "predictive check "+ov.Title)
	}
	p := plot.New()
	require.NoError(t, addMarks(p, []Mark{Point(0, 0, "truth"), Cross(1, 1, "maximum")}))
	empty(p, "heat map with marks")
	keys := markKeys([]Mark{Point(0, 0, "truth"), Cross(1, 1, "maximum"), {X: 2, Y: 2}})
	require.Len(t, keys, 2, "labelled marks have key entries")
	assert.Equal(t, "truth", keys[0].label)
	assert.Equal(t, 2, len(uniqueKeys(append(keys, keys...))))
	assert.Len(t, traceKey(4, []float64{1, math.NaN()}), 5, "four chains and the truth")
	assert.Len(t, traceKey(4, nil), 4)
	k := traceKey(12, nil)
	require.Len(t, k, 5, "colours repeat after five chains")
	assert.Equal(t, "chains 1, 6, 11", k[0].label)
	assert.Equal(t, "chains 5, 10", k[4].label)
}
