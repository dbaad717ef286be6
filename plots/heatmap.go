// Package plots draws the tool's figures as PNG files with gonum/plot: log-likelihood
// landscapes, true-versus-estimated scatter plots, error summaries and trajectories.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Grid is a function sampled on a rectangular grid: Values[i][j] at (Xs[j], Ys[i]).
type Grid struct {
	Xs, Ys []float64
	Values [][]float64
}

// gridXYZ adapts a Grid to plotter.GridXYZ.
type gridXYZ struct{ Grid }

func (g gridXYZ) Dims() (c, r int)   { return len(g.Xs), len(g.Ys) }
func (g gridXYZ) Z(c, r int) float64 { return g.Values[r][c] }
func (g gridXYZ) X(c int) float64    { return g.Xs[c] }
func (g gridXYZ) Y(r int) float64    { return g.Ys[r] }

// Mark is a labelled point drawn on a figure.
type Mark struct {
	X, Y  float64
	Label string
	Color color.Color
	Shape draw.GlyphDrawer
}

// Point returns a black dot mark.
func Point(x, y float64, label string) Mark {
	return Mark{X: x, Y: y, Label: label, Color: color.Black, Shape: draw.CircleGlyph{}}
}

// Cross returns a magenta cross mark.
func Cross(x, y float64, label string) Mark {
	return Mark{X: x, Y: y, Label: label, Color: color.RGBA{R: 220, B: 220, A: 255}, Shape: draw.CrossGlyph{}}
}

// HeatMap writes a heat map of g to path (PNG), with axis labels and marks. The colour scale
// spans the values from the given percentile (e.g. 80, as in paper Fig. 2B) to the maximum,
// so the region around the maximum is resolved; lower values get the lowest colour.
// Non-finite values are drawn transparent.
func HeatMap(path string, g Grid, title, xlabel, ylabel string, percentile float64, marks ...Mark) error {
	var finite []float64
	for _, row := range g.Values {
		for _, z := range row {
			if !math.IsNaN(z) && !math.IsInf(z, 0) {
				finite = append(finite, z)
			}
		}
	}
	if len(finite) == 0 {
		return fmt.Errorf("heat map %s: no finite values", path)
	}
	slices.Sort(finite)
	lo := finite[int(math.Floor(percentile/100*float64(len(finite)-1)))]
	hi := finite[len(finite)-1]
	if lo == hi {
		lo = hi - 1
	}
	clipped := Grid{Xs: g.Xs, Ys: g.Ys, Values: make([][]float64, len(g.Values))}
	for i, row := range g.Values {
		clipped.Values[i] = make([]float64, len(row))
		for j, z := range row {
			clipped.Values[i][j] = math.Max(z, lo)
		}
	}
	p := plot.New()
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	pal := moreland.SmoothBlueRed().Palette(255)
	hm := plotter.NewHeatMap(gridXYZ{clipped}, pal)
	hm.Min, hm.Max = lo, hi
	hm.NaN = color.Transparent
	p.Add(hm)
	if err := addMarks(p, marks); err != nil {
		return err
	}
	bar := &plotter.ColorBar{ColorMap: colorMap(lo, hi)}
	cb := plot.New()
	cb.Add(bar)
	cb.HideY()
	cb.X.Label.Text = fmt.Sprintf("log-likelihood (≥ %g%% quantile)", percentile)
	cb.X.Padding = 0
	cb.X.Tick.Marker = readableTicks{}
	hd := header{title: title, key: markKeys(marks)}
	return saveStacked(path, hd, []*plot.Plot{p, cb}, []vg.Length{5 * vg.Inch, 0.9 * vg.Inch}, 5*vg.Inch)
}

// addMarks draws marks on p; the figure's key (markKeys) says what they are.
func addMarks(p *plot.Plot, marks []Mark) error {
	for _, m := range marks {
		s, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			return err
		}
		s.GlyphStyle.Color, s.GlyphStyle.Shape, s.GlyphStyle.Radius = m.Color, m.Shape, vg.Points(4)
		p.Add(s)
	}
	return nil
}
