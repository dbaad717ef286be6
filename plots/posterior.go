package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/models"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Limits of the posterior figures, which are drawn for every subject and must stay quick.
const (
	// CornerPoints is the most draws a scatter panel of Corner shows (evenly spaced among
	// all); the histograms use every draw.
	CornerPoints = 1000
	// TracePoints is the most draws per chain a panel of Trace shows (evenly spaced).
	TracePoints = 1000
)

// truthColor marks true values on the posterior figures.
var truthColor = color.RGBA{R: 214, G: 39, B: 40, A: 255}

// Corner writes a corner plot of posterior draws to path (PNG): for d parameters a d×d grid
// with each parameter's marginal histogram on the diagonal and the pairwise scatter plots of
// the draws below it. names and scales describe the parameters, draws holds the draws in
// natural units ([draw][parameter]); a parameter of scale models.Log10Scale is drawn on log
// axes (its histogram binned evenly in log10). truth, if not nil, holds true values to mark
// (lines on every panel of the parameter, a point where two meet); NaN leaves a parameter
// unmarked. title heads the figure.
func Corner(path, title string, names []string, scales []models.ParamScale, draws [][]float64, truth []float64) error {
	grid, err := cornerPlots(names, scales, draws, truth)
	if err != nil {
		return fmt.Errorf("corner plot %s: %w", path, err)
	}
	side := vg.Length(math.Max(1.8, math.Min(2.6, 9/float64(len(names))))) * vg.Inch
	hd := header{title: title}
	for k := range names {
		if inAxis(truthAt(truth, k), scales[k] == models.Log10Scale) {
			hd.key = []keyEntry{lineKey("truth", truthColor, vg.Points(1))}
			break
		}
	}
	return saveTitled(path, hd, grid, side, side)
}

// cornerAxis is the axis of one parameter in a corner plot.
type cornerAxis struct {
	lo, hi float64
	log    bool
}

// cornerCell is the content of one panel of a corner plot, row i and column j ≤ i: on the
// diagonal the histogram of parameter i, below it the points (parameter j, parameter i).
// Truth lines are at vline (x) and hline (y); NaN means none.
type cornerCell struct {
	i, j         int
	bins         []plotter.HistogramBin
	points       plotter.XYs
	vline, hline float64
}

// cornerLayout returns the axes (one per parameter) and the cells of Corner, row by row.
func cornerLayout(names []string, scales []models.ParamScale, draws [][]float64, truth []float64) ([]cornerAxis, []cornerCell, error) {
	d := len(names)
	switch {
	case d == 0:
		return nil, nil, fmt.Errorf("no parameters")
	case len(scales) != d:
		return nil, nil, fmt.Errorf("%d scales for %d parameters", len(scales), d)
	case truth != nil && len(truth) != d:
		return nil, nil, fmt.Errorf("%d true values for %d parameters", len(truth), d)
	case len(draws) == 0:
		return nil, nil, fmt.Errorf("no draws")
	}
	cols := make([][]float64, d)
	for _, x := range draws {
		if len(x) != d {
			return nil, nil, fmt.Errorf("a draw of %d values for %d parameters", len(x), d)
		}
		for k, v := range x {
			cols[k] = append(cols[k], v)
		}
	}
	axes := make([]cornerAxis, d)
	tr := make([]float64, d) // the drawable true values, NaN for the others
	for k := range d {
		a := &axes[k]
		a.log = scales[k] == models.Log10Scale
		tr[k] = truthAt(truth, k)
		if !inAxis(tr[k], a.log) {
			tr[k] = math.NaN()
		}
		a.lo, a.hi = axisRange(cols[k], tr[k], a.log)
	}
	thin := thinIndices(len(draws), CornerPoints)
	var cells []cornerCell
	for i := range d {
		for j := 0; j <= i; j++ {
			c := cornerCell{i: i, j: j, vline: tr[j], hline: math.NaN()}
			if i == j {
				c.bins = histBins(cols[i], axes[i].lo, axes[i].hi, axes[i].log, histBinCount(len(draws)))
			} else {
				c.hline = tr[i]
				for _, r := range thin {
					if x, y := draws[r][j], draws[r][i]; inAxis(x, axes[j].log) && inAxis(y, axes[i].log) {
						c.points = append(c.points, plotter.XY{X: x, Y: y})
					}
				}
			}
			cells = append(cells, c)
		}
	}
	return axes, cells, nil
}

// cornerPlots returns the panels of Corner: grid[i][j] is nil above the diagonal.
func cornerPlots(names []string, scales []models.ParamScale, draws [][]float64, truth []float64) ([][]*plot.Plot, error) {
	axes, cells, err := cornerLayout(names, scales, draws, truth)
	if err != nil {
		return nil, err
	}
	d := len(names)
	grid := make([][]*plot.Plot, d)
	for i := range grid {
		grid[i] = make([]*plot.Plot, d)
	}
	for _, c := range cells {
		p := plot.New()
		ax, ay := axes[c.j], axes[c.i]
		setAxis(&p.X, ax.lo, ax.hi, ax.log)
		if c.i == d-1 {
			p.X.Label.Text = names[c.j]
		}
		if c.i == c.j {
			h := &plotter.Histogram{Bins: c.bins, FillColor: color.NRGBA{R: 31, G: 119, B: 180, A: 110}}
			h.LineStyle.Color, h.LineStyle.Width = SeriesColor(0), vg.Points(0.5)
			p.Add(h)
			p.Y.Min = 0
			p.HideY()
		} else {
			setAxis(&p.Y, ay.lo, ay.hi, ay.log)
			if c.j == 0 {
				p.Y.Label.Text = names[c.i]
			}
			if len(c.points) > 0 {
				s, err := plotter.NewScatter(c.points)
				if err != nil {
					return nil, err
				}
				s.GlyphStyle.Color = color.NRGBA{R: 31, G: 119, B: 180, A: 70}
				s.GlyphStyle.Radius = vg.Points(1)
				s.GlyphStyle.Shape = draw.CircleGlyph{}
				p.Add(s)
			}
		}
		if !math.IsNaN(c.vline) {
			p.Add(vLine(c.vline, truthColor))
		}
		if !math.IsNaN(c.hline) {
			p.Add(hLine(c.hline, truthColor))
		}
		if !math.IsNaN(c.vline) && !math.IsNaN(c.hline) {
			if err := addMarks(p, []Mark{{X: c.vline, Y: c.hline, Color: truthColor, Shape: draw.CircleGlyph{}}}); err != nil {
				return nil, err
			}
		}
		grid[c.i][c.j] = p
	}
	return grid, nil
}

// Trace writes trace plots of posterior chains to path (PNG): one panel per parameter, one
// line per chain (in the colours SeriesColor(chain)), the draw on the horizontal axis, log
// axes for parameters of scale models.Log10Scale. chains holds each chain's draws in natural
// units ([chain][draw][parameter]); truth as for Corner (a dashed line). At most TracePoints
// draws a chain are drawn, evenly spaced. title heads the figure.
func Trace(path, title string, names []string, scales []models.ParamScale, chains [][][]float64, truth []float64) error {
	panels, err := tracePlots(names, scales, chains, truth)
	if err != nil {
		return fmt.Errorf("trace plot %s: %w", path, err)
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	return saveTitled(path, header{title: title, key: traceKey(len(chains), truth)}, grid, 8*vg.Inch, 1.7*vg.Inch)
}

// traceKey is the key of Trace: the colour of each chain (the first five: the colours repeat
// after them) and the truth's line.
func traceKey(chains int, truth []float64) []keyEntry {
	var key []keyEntry
	for c := range min(chains, len(seriesColors)) {
		var ids []string // the chains of this colour
		for i := c; i < chains; i += len(seriesColors) {
			ids = append(ids, strconv.Itoa(i+1))
		}
		label := "chain " + ids[0]
		if len(ids) > 1 {
			label = "chains " + strings.Join(ids, ", ")
		}
		key = append(key, lineKey(label, SeriesColor(c), vg.Points(1.5)))
	}
	for k := range truth {
		if !math.IsNaN(truth[k]) {
			key = append(key, lineKey("truth", truthColor, vg.Points(1), vg.Points(4), vg.Points(3)))
			break
		}
	}
	return key
}

// tracePlots returns the panels of Trace, one per parameter.
func tracePlots(names []string, scales []models.ParamScale, chains [][][]float64, truth []float64) ([]*plot.Plot, error) {
	d := len(names)
	switch {
	case d == 0:
		return nil, fmt.Errorf("no parameters")
	case len(scales) != d:
		return nil, fmt.Errorf("%d scales for %d parameters", len(scales), d)
	case truth != nil && len(truth) != d:
		return nil, fmt.Errorf("%d true values for %d parameters", len(truth), d)
	case len(chains) == 0:
		return nil, fmt.Errorf("no chains")
	}
	panels := make([]*plot.Plot, d)
	most := 0
	for _, ch := range chains {
		most = max(most, len(ch))
	}
	for k := range d {
		log := scales[k] == models.Log10Scale
		var all []float64
		for _, ch := range chains {
			for _, x := range ch {
				if len(x) != d {
					return nil, fmt.Errorf("a draw of %d values for %d parameters", len(x), d)
				}
				all = append(all, x[k])
			}
		}
		lo, hi := axisRange(all, truthAt(truth, k), log)
		p := plot.New()
		setAxis(&p.Y, lo, hi, log)
		p.Y.Label.Text = names[k]
		p.X.Min, p.X.Max = 0, float64(max(most, 2))
		p.X.Tick.Marker = integerTicks{}
		if k == d-1 {
			p.X.Label.Text = "draw (after warm-up)"
		}
		for c, ch := range chains {
			var xy plotter.XYs
			for _, r := range thinIndices(len(ch), TracePoints) {
				if v := ch[r][k]; inAxis(v, log) {
					xy = append(xy, plotter.XY{X: float64(r + 1), Y: v})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = SeriesColor(c), vg.Points(0.5)
			p.Add(l)
		}
		if t := truthAt(truth, k); inAxis(t, log) {
			l := hLine(t, truthColor)
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
		panels[k] = p
	}
	return panels, nil
}

// truthAt returns truth[k], NaN when truth is nil.
func truthAt(truth []float64, k int) float64 {
	if truth == nil {
		return math.NaN()
	}
	return truth[k]
}

// inAxis reports whether v can be drawn on an axis: finite, and positive on a log axis.
func inAxis(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && !(log && v <= 0)
}

// axisRange returns the range of an axis showing vals and, if drawable, truth: their range
// padded by 5 % on each side, in log10 for a log axis; a single value gets a range around it.
// Values that cannot be drawn are left out; without any it returns [1, 10] for a log axis and
// [0, 1] otherwise.
func axisRange(vals []float64, truth float64, log bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range append([]float64{truth}, vals...) {
		if !inAxis(v, log) {
			continue
		}
		if log {
			v = math.Log10(v)
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	switch {
	case math.IsInf(lo, 1):
		lo, hi = 0, 1
	case hi == lo:
		w := math.Max(math.Abs(lo)*0.05, 0.05)
		lo, hi = lo-w, hi+w
	default:
		pad := 0.05 * (hi - lo)
		lo, hi = lo-pad, hi+pad
	}
	if log {
		return math.Pow(10, lo), math.Pow(10, hi)
	}
	return lo, hi
}

// setAxis sets an axis to [lo, hi], on a log scale with the figures' log ticks if log, with
// readableTicks if not.
func setAxis(a *plot.Axis, lo, hi float64, log bool) {
	a.Min, a.Max = lo, hi
	a.Tick.Marker = readableTicks{}
	if log {
		a.Scale = plot.LogScale{}
		a.Tick.Marker = compactLogTicks{}
	}
}

// histBinCount is the number of histogram bins for n draws: √n, within [10, 40].
func histBinCount(n int) int {
	return min(40, max(10, int(math.Round(math.Sqrt(float64(n))))))
}

// histBins counts vals in n bins spanning [lo, hi], of equal width in log10 if log (bin edges
// in natural units), normalized to the fraction of the values in each bin. Values outside
// [lo, hi] or not drawable are left out.
func histBins(vals []float64, lo, hi float64, log bool, n int) []plotter.HistogramBin {
	tr := func(v float64) float64 { return v }
	inv := tr
	if log {
		tr, inv = math.Log10, func(v float64) float64 { return math.Pow(10, v) }
	}
	a, b := tr(lo), tr(hi)
	w := (b - a) / float64(n)
	bins := make([]plotter.HistogramBin, n)
	for i := range bins {
		bins[i].Min, bins[i].Max = inv(a+float64(i)*w), inv(a+float64(i+1)*w)
	}
	bins[n-1].Max = hi
	counted := 0
	for _, v := range vals {
		if !inAxis(v, log) || v < lo || v > hi {
			continue
		}
		i := min(n-1, int((tr(v)-a)/w))
		bins[max(i, 0)].Weight++
		counted++
	}
	if counted > 0 {
		for i := range bins {
			bins[i].Weight /= float64(counted)
		}
	}
	return bins
}

// thinIndices returns most (≥ 2) indices of 0..n−1, evenly spaced, the first and last
// included; all of them when n ≤ most.
func thinIndices(n, most int) []int {
	if n <= most || most < 2 {
		out := make([]int, max(n, 0))
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, most)
	for i := range out {
		out[i] = int(math.Round(float64(i) * float64(n-1) / float64(most-1)))
	}
	return out
}

// vLine returns a vertical line at x across the plot.
func vLine(x float64, c color.Color) *refLine {
	return &refLine{at: x, vertical: true, LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1)}}
}

// hLine returns a horizontal line at y across the plot.
func hLine(y float64, c color.Color) *refLine {
	return &refLine{at: y, LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1)}}
}

// refLine is a vertical or horizontal line across a plot at a value; it implements
// plot.Plotter, plot.DataRanger (the value only, along its axis) and plot.Thumbnailer.
type refLine struct {
	at       float64
	vertical bool
	draw.LineStyle
}

// Plot implements plot.Plotter.
func (l *refLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var pts []vg.Point
	if l.vertical {
		x := trX(l.at)
		pts = []vg.Point{{X: x, Y: c.Min.Y}, {X: x, Y: c.Max.Y}}
	} else {
		y := trY(l.at)
		pts = []vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}}
	}
	c.StrokeLines(l.LineStyle, c.ClipLinesXY(pts)...)
}

// DataRange implements plot.DataRanger: the line's value along its axis, nothing along the
// other.
func (l *refLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	if l.vertical {
		return l.at, l.at, math.Inf(1), math.Inf(-1)
	}
	return math.Inf(1), math.Inf(-1), l.at, l.at
}

// Thumbnail implements plot.Thumbnailer.
func (l *refLine) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(l.LineStyle, c.Min.X, y, c.Max.X, y)
}
