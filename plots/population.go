package plots

// Figures of a population fit (nioc-gpu population): each fitted parameter's population
// normal by group with the subjects' estimates under it (PopulationDensities), and each
// subject's independent estimate against its estimate under the population (Shrinkage).
// Values come in the parameters' fitting scale (log10 for parameters of scale
// models.Log10Scale), as a population fit reports them, and are drawn so: a log-scaled
// parameter's axis is linear in log10, its ticks labelled in natural units (log10Ticks), where
// its normal keeps its shape.

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/models"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// DensityGroup is one group of subjects in a DensityPanel.
type DensityGroup struct {
	Name      string    // the group's entry in the key (e.g. "group a"); "" for a population of one group
	Mean, SD  float64   // the group's population normal of the parameter, fitting scale; SD > 0
	Estimates []float64 // the subjects' estimates under the population (shrunk), fitting scale
	Truths    []float64 // the subjects' true values, Estimates' order; nil: none, NaN: unknown
	TrueMean  *float64  // the group's true population mean, fitting scale; nil: unknown
}

// DensityPanel is the panel of one parameter in PopulationDensities. Every panel of a figure
// has the same groups in the same order (a group's colour is its place).
type DensityPanel struct {
	Param  string
	Scale  models.ParamScale
	Groups []DensityGroup
}

// ShrinkageGroup is one group of subjects in a ShrinkagePanel.
type ShrinkageGroup struct {
	Name string  // as DensityGroup.Name
	Mean float64 // the group's population mean, fitting scale: what its estimates shrink towards
	// Independent and Shrunk are each subject's estimate fitted alone and under the
	// population, fitting scale, in the same order.
	Independent, Shrunk []float64
	// IndependentSE and ShrunkSE are their standard errors, drawn as 95 % interval bars; nil:
	// no bars; NaN or ≤ 0: none for that subject.
	IndependentSE, ShrunkSE []float64
	Truths                  []float64 // the subjects' true values; nil: none, NaN: unknown
}

// ShrinkagePanel is the panel of one parameter in Shrinkage, with the same groups in every
// panel of a figure.
type ShrinkagePanel struct {
	Param  string
	Scale  models.ParamScale
	Groups []ShrinkageGroup
}

// Layout of the population figures.
const (
	densityCols   = 3 // panels a row
	shrinkageCols = 4
	popPanel      = 2.8 * vg.Inch // panel width (and the shrinkage panels' height)
	densityHeight = 2.4 * vg.Inch
	z95           = 1.959963984540054
)

// keyGray draws the key's samples of marks that the panels draw in their group's colour.
var keyGray = color.Gray{Y: 90}

// identityStyle is the style of the shrinkage figure's identity lines.
var identityStyle = draw.LineStyle{Color: color.Gray{Y: 128}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}

// PopulationDensities writes the population densities of a population fit to path (PNG): a
// panel per parameter with the population normal of each group (the model's mean for the
// group and the population's SD, in fitting scale), the subjects' estimates under the
// population as dots in a strip below it, a row for each group in its colour, their true
// values as crosses in a row under the group's when given, and the groups' true population
// means as dashed lines when given. title heads the figure, above the key.
func PopulationDensities(path, title string, panels []DensityPanel) error {
	hd, grid, err := densityFigure(title, panels)
	if err != nil {
		return fmt.Errorf("population densities %s: %w", path, err)
	}
	return saveTitled(path, hd, grid, popPanel, densityHeight)
}

// densityFigure returns the header and the grid of panels of PopulationDensities.
func densityFigure(title string, panels []DensityPanel) (header, [][]*plot.Plot, error) {
	if err := checkDensities(panels); err != nil {
		return header{}, nil, err
	}
	cols := min(len(panels), densityCols)
	grid := make([][]*plot.Plot, (len(panels)+cols-1)/cols)
	for i, dp := range panels {
		p, err := densityPlot(dp)
		if err != nil {
			return header{}, nil, fmt.Errorf("%s: %w", dp.Param, err)
		}
		grid[i/cols] = append(grid[i/cols], p)
	}
	return header{title: title, key: densityKey(panels)}, grid, nil
}

// checkDensities returns an error if the panels cannot be drawn: none, a panel without
// groups or with groups other than the first panel's, a normal that is not one, truths not
// one per subject.
func checkDensities(panels []DensityPanel) error {
	if len(panels) == 0 {
		return errors.New("no panels")
	}
	names := func(dp DensityPanel) []string {
		out := make([]string, len(dp.Groups))
		for g, gr := range dp.Groups {
			out[g] = gr.Name
		}
		return out
	}
	for _, dp := range panels {
		if err := sameGroups(dp.Param, names(dp), names(panels[0])); err != nil {
			return err
		}
		for _, gr := range dp.Groups {
			switch {
			case !finite(gr.Mean) || !finite(gr.SD) || gr.SD <= 0:
				return fmt.Errorf("%s, %s: the population normal needs a finite mean and an SD > 0, got %g and %g", dp.Param, groupName(gr.Name), gr.Mean, gr.SD)
			case gr.Truths != nil && len(gr.Truths) != len(gr.Estimates):
				return fmt.Errorf("%s, %s: %d true values for %d subjects", dp.Param, groupName(gr.Name), len(gr.Truths), len(gr.Estimates))
			}
		}
	}
	return nil
}

// sameGroups returns an error if the panel of param has no groups or other groups than want,
// the first panel's.
func sameGroups(param string, got, want []string) error {
	switch {
	case len(got) == 0:
		return fmt.Errorf("%s: no groups", param)
	case !slices.Equal(got, want):
		return fmt.Errorf("%s: groups %q, the first panel's are %q: every panel has the same groups in the same order", param, got, want)
	}
	for g, name := range got {
		if slices.Index(got, name) < g {
			return fmt.Errorf("%s: group %q twice", param, name)
		}
	}
	return nil
}

// groupName names a group in errors.
func groupName(name string) string {
	if name == "" {
		return "the population"
	}
	return strconv.Quote(name)
}

// densityPlot draws the panel of one parameter of PopulationDensities.
func densityPlot(dp DensityPanel) (*plot.Plot, error) {
	log := dp.Scale == models.Log10Scale
	lo, hi := densityRange(dp)
	peak := 0.0
	for _, gr := range dp.Groups {
		peak = math.Max(peak, 1/(gr.SD*math.Sqrt(2*math.Pi)))
	}
	step := 0.08 * peak // between the strips of points below the curves
	p := plot.New()
	row := 0
	for g, gr := range dp.Groups {
		c := SeriesColor(g)
		l, err := plotter.NewLine(densityCurve(gr.Mean, gr.SD, lo, hi))
		if err != nil {
			return nil, err
		}
		// The first groups' curves wider, so that curves that coincide show every colour.
		l.Color, l.Width = c, vg.Points(1.5+float64(len(dp.Groups)-1-g))
		p.Add(l)
		if gr.TrueMean != nil && finite(*gr.TrueMean) {
			v := vLine(*gr.TrueMean, c)
			v.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(v)
		}
		row++
		if err := addStrip(p, gr.Estimates, -step*float64(row), draw.CircleGlyph{}, translucent(c, 170)); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(gr.Truths, finite) {
			row++
			if err := addStrip(p, gr.Truths, -step*float64(row), draw.CrossGlyph{}, c); err != nil {
				return nil, err
			}
		}
	}
	scaleAxis(&p.X, lo, hi, log)
	p.Y.Min, p.Y.Max = -step*(float64(row)+0.7), 1.08*peak
	p.Y.Tick.Marker = nonNegativeTicks{}
	p.X.Label.Text = dp.Param
	p.Y.Label.Text = "density"
	if log {
		p.Y.Label.Text = "density per log10 unit"
	}
	return p, nil
}

// densityRange returns the range of a density panel's axis in fitting scale: the estimates,
// truths, true means and each group's mean ± 3 SD, padded by 5 %.
func densityRange(dp DensityPanel) (lo, hi float64) {
	var vals []float64
	for _, gr := range dp.Groups {
		vals = append(append(append(vals, gr.Estimates...), gr.Truths...), gr.Mean-3*gr.SD, gr.Mean+3*gr.SD)
		if gr.TrueMean != nil {
			vals = append(vals, *gr.TrueMean)
		}
	}
	return axisRange(vals, math.NaN(), false)
}

// densityCurve returns the normal density of mean and sd over [lo, hi] (fitting scale) as
// points: evenly spaced, and close together near the mean, so that a narrow normal keeps its
// peak.
func densityCurve(mean, sd, lo, hi float64) plotter.XYs {
	const n = 200
	us := make([]float64, 0, n+1+33)
	for i := range n + 1 {
		us = append(us, lo+(hi-lo)*float64(i)/n)
	}
	for k := -16; k <= 16; k++ {
		if u := mean + sd*float64(k)/4; u > lo && u < hi {
			us = append(us, u)
		}
	}
	slices.Sort(us)
	us = slices.Compact(us)
	xy := make(plotter.XYs, len(us))
	for i, u := range us {
		z := (u - mean) / sd
		xy[i] = plotter.XY{X: u, Y: math.Exp(-z*z/2) / (sd * math.Sqrt(2*math.Pi))}
	}
	return xy
}

// addStrip draws the drawable values (fitting scale) as glyphs in a row at height y.
func addStrip(p *plot.Plot, vals []float64, y float64, g draw.GlyphDrawer, c color.Color) error {
	var xy plotter.XYs
	for _, v := range vals {
		if finite(v) {
			xy = append(xy, plotter.XY{X: v, Y: y})
		}
	}
	if len(xy) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Shape: g, Radius: vg.Points(2.5)}
	p.Add(s)
	return nil
}

// densityKey is the key of PopulationDensities: the groups' colours, then what the marks
// are.
func densityKey(panels []DensityPanel) []keyEntry {
	var key []keyEntry
	truths, means := false, false
	for _, dp := range panels {
		for _, gr := range dp.Groups {
			truths = truths || slices.ContainsFunc(gr.Truths, finite)
			means = means || gr.TrueMean != nil && finite(*gr.TrueMean)
		}
	}
	for g, gr := range panels[0].Groups {
		label := gr.Name
		if label == "" {
			label = "population normal"
		}
		key = append(key, lineKey(label, SeriesColor(g), vg.Points(1.5)))
	}
	key = append(key, glyphKey("subject's estimate under the population", keyGray, draw.CircleGlyph{}, vg.Points(2.5)))
	if truths {
		key = append(key, glyphKey("subject's true value", keyGray, draw.CrossGlyph{}, vg.Points(2.5)))
	}
	if means {
		key = append(key, lineKey("true population mean", keyGray, vg.Points(1), vg.Points(4), vg.Points(3)))
	}
	return key
}

// Shrinkage writes the shrinkage plot of a population fit to path (PNG): a panel per
// parameter with each subject's independent estimate (x) against its estimate under the
// population (y), dots in its group's colour with 95 % interval bars when standard errors are
// given, the identity line (no shrinkage) and each group's population mean as a horizontal
// line (what its subjects shrink towards). With true values, a second row of panels shows
// each subject's error fitted alone (x) against its error under the population (y),
// |estimate − truth| in fitting scale, headed by both root-mean-square errors: points below
// the identity line came closer to the truth. Panels wrap after four parameters.
func Shrinkage(path, title string, panels []ShrinkagePanel) error {
	hd, grid, err := shrinkageFigure(title, panels)
	if err != nil {
		return fmt.Errorf("shrinkage plot %s: %w", path, err)
	}
	return saveTitled(path, hd, grid, popPanel, popPanel)
}

// shrinkageFigure returns the header and the grid of panels of Shrinkage: a row of
// shrinkage panels, and with true values a row of error panels below it (a nil cell where a
// parameter has none), for every four parameters.
func shrinkageFigure(title string, panels []ShrinkagePanel) (header, [][]*plot.Plot, error) {
	if err := checkShrinkage(panels); err != nil {
		return header{}, nil, err
	}
	truths := false
	for _, sp := range panels {
		for _, gr := range sp.Groups {
			truths = truths || slices.ContainsFunc(gr.Truths, finite)
		}
	}
	cols := min(len(panels), shrinkageCols)
	var grid [][]*plot.Plot
	for start := 0; start < len(panels); start += cols {
		var top, bottom []*plot.Plot
		for _, sp := range panels[start:min(start+cols, len(panels))] {
			p, err := shrinkagePlot(sp)
			if err != nil {
				return header{}, nil, fmt.Errorf("%s: %w", sp.Param, err)
			}
			e, err := errorPlot(sp)
			if err != nil {
				return header{}, nil, fmt.Errorf("%s: %w", sp.Param, err)
			}
			top, bottom = append(top, p), append(bottom, e)
		}
		grid = append(grid, top)
		if truths && slices.ContainsFunc(bottom, func(p *plot.Plot) bool { return p != nil }) {
			grid = append(grid, bottom)
		}
	}
	return header{title: title, key: shrinkageKey(panels, truths)}, grid, nil
}

// checkShrinkage returns an error if the panels cannot be drawn: none, a panel without
// groups or with groups other than the first panel's, a mean that is not finite, standard
// errors or truths not one per subject.
func checkShrinkage(panels []ShrinkagePanel) error {
	if len(panels) == 0 {
		return errors.New("no panels")
	}
	names := func(sp ShrinkagePanel) []string {
		out := make([]string, len(sp.Groups))
		for g, gr := range sp.Groups {
			out[g] = gr.Name
		}
		return out
	}
	for _, sp := range panels {
		if err := sameGroups(sp.Param, names(sp), names(panels[0])); err != nil {
			return err
		}
		for _, gr := range sp.Groups {
			n := len(gr.Independent)
			for _, f := range []struct {
				what string
				vals []float64
				opt  bool // nil allowed
			}{{"population estimates", gr.Shrunk, false}, {"independent standard errors", gr.IndependentSE, true},
				{"population standard errors", gr.ShrunkSE, true}, {"true values", gr.Truths, true}} {
				if len(f.vals) != n && (f.vals != nil || !f.opt) {
					return fmt.Errorf("%s, %s: %d %s for %d independent estimates", sp.Param, groupName(gr.Name), len(f.vals), f.what, n)
				}
			}
			if !finite(gr.Mean) {
				return fmt.Errorf("%s, %s: population mean %g", sp.Param, groupName(gr.Name), gr.Mean)
			}
		}
	}
	return nil
}

// shrinkagePlot draws the panel of one parameter of Shrinkage: independent (x) against
// population (y) estimates, the same range on both axes.
func shrinkagePlot(sp ShrinkagePanel) (*plot.Plot, error) {
	log := sp.Scale == models.Log10Scale
	var vals []float64
	for _, gr := range sp.Groups {
		vals = append(append(append(vals, gr.Independent...), gr.Shrunk...), gr.Mean)
	}
	lo, hi := axisRange(vals, math.NaN(), false)
	p := plot.New()
	p.Add(&segments{ends: [][2]plotter.XY{{{X: lo, Y: lo}, {X: hi, Y: hi}}},
		LineStyle: identityStyle})
	for g, gr := range sp.Groups {
		c := SeriesColor(g)
		m := hLine(gr.Mean, c)
		m.Width = vg.Points(0.8 + 0.8*float64(len(sp.Groups)-1-g)) // as densityPlot's curves
		p.Add(m)
		p.Add(intervalBars(gr, lo, hi, translucent(c, 90)))
		var xy plotter.XYs
		for i, x := range gr.Independent {
			if y := gr.Shrunk[i]; finite(x) && finite(y) {
				xy = append(xy, plotter.XY{X: x, Y: y})
			}
		}
		if err := addPoints(p, xy, translucent(c, 200)); err != nil {
			return nil, err
		}
	}
	scaleAxis(&p.X, lo, hi, log)
	scaleAxis(&p.Y, lo, hi, log)
	p.X.Label.Text = sp.Param + ", fitted alone"
	p.Y.Label.Text = sp.Param + ", under the population"
	return p, nil
}

// intervalBars returns the 95 % interval bars of a group's subjects: horizontal through a
// point for its independent estimate, vertical for its population estimate, cut to [lo, hi].
func intervalBars(gr ShrinkageGroup, lo, hi float64, c color.Color) *segments {
	s := &segments{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(0.7)}}
	cut := func(v float64) float64 { return math.Min(math.Max(v, lo), hi) }
	for i, x := range gr.Independent {
		y := gr.Shrunk[i]
		if !finite(x) || !finite(y) {
			continue
		}
		if se := at0(gr.IndependentSE, i); se > 0 && !math.IsNaN(se) {
			s.ends = append(s.ends, [2]plotter.XY{{X: cut(x - z95*se), Y: y}, {X: cut(x + z95*se), Y: y}})
		}
		if se := at0(gr.ShrunkSE, i); se > 0 && !math.IsNaN(se) {
			s.ends = append(s.ends, [2]plotter.XY{{X: x, Y: cut(y - z95*se)}, {X: x, Y: cut(y + z95*se)}})
		}
	}
	return s
}

// at0 returns vals[i], NaN when vals is nil.
func at0(vals []float64, i int) float64 {
	if vals == nil {
		return math.NaN()
	}
	return vals[i]
}

// errorPlot draws the error panel of one parameter of Shrinkage: each subject's
// |independent − truth| (x) against |population − truth| (y), fitting scale, headed by the
// root-mean-square errors; nil when the parameter has no true values.
func errorPlot(sp ShrinkagePanel) (*plot.Plot, error) {
	p := plot.New()
	var ssInd, ssPop float64
	n, top := 0, 0.0
	for g, gr := range sp.Groups {
		var xy plotter.XYs
		for i, t := range gr.Truths {
			x, y := gr.Independent[i]-t, gr.Shrunk[i]-t
			if !finite(x) || !finite(y) {
				continue
			}
			xy = append(xy, plotter.XY{X: math.Abs(x), Y: math.Abs(y)})
			ssInd, ssPop, n = ssInd+x*x, ssPop+y*y, n+1
			top = math.Max(top, math.Max(math.Abs(x), math.Abs(y)))
		}
		if err := addPoints(p, xy, translucent(SeriesColor(g), 200)); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, nil
	}
	if top *= 1.05; top == 0 {
		top = 1
	}
	p.Add(&segments{ends: [][2]plotter.XY{{{X: 0, Y: 0}, {X: top, Y: top}}}, LineStyle: identityStyle})
	p.Title.Text = fmt.Sprintf("RMSE: alone %.3g, population %.3g", math.Sqrt(ssInd/float64(n)), math.Sqrt(ssPop/float64(n)))
	p.Title.TextStyle.Font.Size = p.X.Tick.Label.Font.Size
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, top, 0, top
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	unit := ""
	if sp.Scale == models.Log10Scale {
		unit = " (log10)"
	}
	p.X.Label.Text = "|alone − truth|" + unit
	p.Y.Label.Text = "|population − truth|" + unit
	return p, nil
}

// addPoints draws xy as dots of colour c.
func addPoints(p *plot.Plot, xy plotter.XYs, c color.Color) error {
	if len(xy) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Shape: draw.CircleGlyph{}, Radius: vg.Points(2.5)}
	p.Add(s)
	return nil
}

// shrinkageKey is the key of Shrinkage: the groups' colours, the lines and bars.
func shrinkageKey(panels []ShrinkagePanel, truths bool) []keyEntry {
	var key []keyEntry
	bars := false
	for g, gr := range panels[0].Groups {
		label := gr.Name
		if label == "" {
			label = "subjects"
		}
		key = append(key, glyphKey(label, SeriesColor(g), draw.CircleGlyph{}, vg.Points(2.5)))
	}
	for _, sp := range panels {
		for _, gr := range sp.Groups {
			bars = bars || gr.IndependentSE != nil || gr.ShrunkSE != nil
		}
	}
	key = append(key, lineKey("population mean", keyGray, vg.Points(0.8)))
	if bars {
		key = append(key, lineKey("95 % interval", translucent(keyGray, 140), vg.Points(0.7)))
	}
	label := "identity: no shrinkage"
	if truths {
		label = "identity: no shrinkage (top), equal errors (below)"
	}
	return append(key, lineKey(label, identityStyle.Color, identityStyle.Width, identityStyle.Dashes...))
}

// segments are line segments of one style, cut to the plot's area: a plot.Plotter without a
// data range of its own (the axes are set by their panel).
type segments struct {
	ends [][2]plotter.XY
	draw.LineStyle
}

// Plot implements plot.Plotter.
func (s *segments) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, e := range s.ends {
		pts := []vg.Point{{X: trX(e[0].X), Y: trY(e[0].Y)}, {X: trX(e[1].X), Y: trY(e[1].Y)}}
		c.StrokeLines(s.LineStyle, c.ClipLinesXY(pts)...)
	}
}

// nonNegativeTicks are readableTicks of [0, max]: a density axis whose negative part holds
// strips of points, not densities.
type nonNegativeTicks struct{}

// Ticks implements plot.Ticker.
func (nonNegativeTicks) Ticks(min, max float64) []plot.Tick {
	return readableTicks{}.Ticks(math.Max(min, 0), max)
}

// scaleAxis sets an axis of fitting scale to [lo, hi], with log10Ticks if log, readableTicks
// if not. (An axis linear in log10 rather than a plot.LogScale axis of natural units: gonum
// places a log axis' label as if it were linear, and pads the panel for it by as much as a
// third of its height.)
func scaleAxis(a *plot.Axis, lo, hi float64, log bool) {
	a.Min, a.Max = lo, hi
	a.Tick.Marker = readableTicks{}
	if log {
		a.Tick.Marker = log10Ticks{}
	}
}

// log10Ticks mark an axis in log10 of a parameter's values as compactLogTicks mark a log axis
// of its values: at powers of ten (or their multiples), labelled in natural units.
type log10Ticks struct{}

// Ticks implements plot.Ticker.
func (log10Ticks) Ticks(min, max float64) []plot.Tick {
	ts := logTicks(math.Pow(10, min), math.Pow(10, max), true)
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

// finite reports whether v is a number other than ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// translucent returns c with opacity a.
func translucent(c color.Color, a uint8) color.NRGBA {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = a
	return n
}
