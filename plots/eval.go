package plots

import (
	"fmt"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette for methods and series.
var seriesColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255},
}

// SeriesColor returns the i-th series colour.
func SeriesColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

// Estimates are true and estimated values of one parameter under one method.
type Estimates struct {
	Method, Param string
	Log           bool // log10 axes
	True, Est     []float64
	Lo, Hi        float64 // the search box, drawn as the axis range
}

// TrueVsEstimated draws a grid of scatter plots, one row per method and one column per
// parameter, with the identity line (paper Fig. 2D, S4–S10). cells[row][col]; a nil cell is
// left empty.
func TrueVsEstimated(path, title string, cells [][]*Estimates) error {
	grid := make([][]*plot.Plot, len(cells))
	for i, row := range cells {
		grid[i] = make([]*plot.Plot, len(row))
		for j, c := range row {
			if c == nil {
				continue
			}
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s: %s", c.Method, c.Param)
			p.X.Label.Text = "true"
			p.Y.Label.Text = "estimated"
			p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
			lo, hi := c.Lo, c.Hi
			for _, v := range append(append([]float64{}, c.True...), c.Est...) {
				if !math.IsNaN(v) && !(c.Log && v <= 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			if c.Log {
				p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
				p.X.Tick.Marker, p.Y.Tick.Marker = sparseLogTicks{}, sparseLogTicks{}
				lo, hi = lo/1.5, hi*1.5
			} else {
				pad := 0.05 * (hi - lo)
				lo, hi = lo-pad, hi+pad
			}
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
			id, _ := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
			id.Color = color.Gray{Y: 128}
			id.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(id)
			var pts plotter.XYs
			for k := range c.True {
				if math.IsNaN(c.Est[k]) || (c.Log && (c.Est[k] <= 0 || c.True[k] <= 0)) {
					continue
				}
				pts = append(pts, plotter.XY{X: c.True[k], Y: c.Est[k]})
			}
			if len(pts) > 0 {
				s, err := plotter.NewScatter(pts)
				if err != nil {
					return err
				}
				s.GlyphStyle.Color = SeriesColor(i)
				s.GlyphStyle.Radius = vg.Points(2)
				s.GlyphStyle.Shape = draw.CircleGlyph{}
				p.Add(s)
			}
			grid[i][j] = p
		}
	}
	return saveTitled(path, header{title: title, key: []keyEntry{identityKey}}, grid, 2.4*vg.Inch, 2.4*vg.Inch)
}

// identityKey is the key's entry for TrueVsEstimated's identity line.
var identityKey = lineKey("estimate = truth", color.Gray{Y: 128}, vg.Points(1), vg.Points(3), vg.Points(3))

// ErrorGroup is one box of the error summary: a task and method with its absolute relative
// errors (all parameters and sets pooled).
type ErrorGroup struct {
	Task, Method string
	Errors       []float64
}

// ErrorSummary draws absolute relative errors on a log scale, one column of points per
// (task, method) with its median marked (paper Fig. 3).
func ErrorSummary(path, title string, groups []ErrorGroup, methods []string) error {
	p := plot.New()
	p.Y.Label.Text = "absolute relative error"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = sparseLogTicks{}
	var names []string
	minV, maxV := math.Inf(1), math.Inf(-1)
	for gi, g := range groups {
		mi := 0
		for k, m := range methods {
			if m == g.Method {
				mi = k
			}
		}
		var pts plotter.XYs
		for k, e := range g.Errors {
			if e <= 0 || math.IsNaN(e) || math.IsInf(e, 0) {
				e = 1e-6 // exact estimates still show, at the bottom
			}
			jitter := 0.25 * (float64(k%7)/6 - 0.5)
			pts = append(pts, plotter.XY{X: float64(gi) + jitter, Y: e})
			minV, maxV = math.Min(minV, e), math.Max(maxV, e)
		}
		if len(pts) > 0 {
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			s.GlyphStyle.Color = SeriesColor(mi)
			s.GlyphStyle.Radius = vg.Points(1.5)
			p.Add(s)
			med := fit.Median(g.Errors)
			if med > 0 {
				l, _ := plotter.NewLine(plotter.XYs{{X: float64(gi) - 0.3, Y: med}, {X: float64(gi) + 0.3, Y: med}})
				l.Color, l.Width = color.Black, vg.Points(2)
				p.Add(l)
			}
		}
		names = append(names, strings.ReplaceAll(g.Task, "/", "\n")+"\n"+g.Method)
	}
	if math.IsInf(minV, 1) {
		return fmt.Errorf("error summary %s: no errors to draw", path)
	}
	p.Y.Min, p.Y.Max = minV/2, maxV*2
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.NominalX(names...)
	w := vg.Length(math.Max(4, 1.7*float64(len(groups)))) * vg.Inch
	hd := header{title: title, key: []keyEntry{lineKey("median", color.Black, vg.Points(2))}}
	for k, m := range methods {
		hd.key = append(hd.key, glyphKey(m, SeriesColor(k), draw.RingGlyph{}, vg.Points(2.5)))
	}
	return saveTitled(path, hd, [][]*plot.Plot{{p}}, w, 4*vg.Inch)
}

// Path is a 2-D trajectory to draw.
type Path struct {
	X, Y  []float64
	Color color.Color
	Label string
}

// Paths draws trajectories in panels side by side, each with its own paths and marks (paper
// Fig. 2A/C: hand paths at the truth and at the estimates).
func Paths(path string, titles []string, panels [][]Path, marks [][]Mark, xlabel, ylabel string, equal bool) error {
	row := make([]*plot.Plot, len(panels))
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for _, ps := range panels {
		for _, pa := range ps {
			for k := range pa.X {
				lo[0], hi[0] = math.Min(lo[0], pa.X[k]), math.Max(hi[0], pa.X[k])
				lo[1], hi[1] = math.Min(lo[1], pa.Y[k]), math.Max(hi[1], pa.Y[k])
			}
		}
	}
	var key []keyEntry
	for i, ps := range panels {
		p := plot.New()
		p.Title.Text = titles[i]
		p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
		p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
		for _, pa := range ps {
			if _, err := addPath(p, pa, vg.Points(0.6)); err != nil {
				return err
			}
			if pa.Label != "" {
				key = append(key, lineKey(pa.Label, pa.Color, vg.Points(1.5)))
			}
		}
		if i < len(marks) {
			if err := addMarks(p, marks[i]); err != nil {
				return err
			}
			key = append(key, markKeys(marks[i])...)
		}
		pad := 0.05 * math.Max(hi[0]-lo[0], hi[1]-lo[1])
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo[0]-pad, hi[0]+pad, lo[1]-pad, hi[1]+pad
		if equal {
			span := math.Max(p.X.Max-p.X.Min, p.Y.Max-p.Y.Min)
			cx, cy := (p.X.Max+p.X.Min)/2, (p.Y.Max+p.Y.Min)/2
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = cx-span/2, cx+span/2, cy-span/2, cy+span/2
		}
		row[i] = p
	}
	return saveTitled(path, header{key: uniqueKeys(key)}, [][]*plot.Plot{row}, 3.2*vg.Inch, 3.2*vg.Inch)
}

// addPath draws a path on p as a line of the given width.
func addPath(p *plot.Plot, pa Path, width vg.Length) (*plotter.Line, error) {
	xy := make(plotter.XYs, len(pa.X))
	for k := range pa.X {
		xy[k] = plotter.XY{X: pa.X[k], Y: pa.Y[k]}
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = pa.Color, width
	p.Add(l)
	return l, nil
}

// MapPanel is a map (cost or uncertainty over the plane) with paths on it.
type MapPanel struct {
	Title string
	Map   Grid
	Paths []Path
	Marks []Mark
}

// Maps draws rows of map panels, each map with its own colour scale (paper Fig. 4:
// final cost, running cost and perceptual uncertainty at the truth and at each method's
// estimates, with mean trajectories).
func Maps(path string, rows [][]MapPanel, xlabel, ylabel string) error {
	grid := make([][]*plot.Plot, len(rows))
	var key []keyEntry
	for i, row := range rows {
		grid[i] = make([]*plot.Plot, len(row))
		for j, mp := range row {
			p := plot.New()
			p.Title.Text = mp.Title
			p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
			p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, r := range mp.Map.Values {
				for _, v := range r {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			if lo == hi {
				hi = lo + 1
			}
			hm := plotter.NewHeatMap(gridXYZ{mp.Map}, colorMap(lo, hi).Palette(255))
			hm.Min, hm.Max = lo, hi
			p.Add(hm)
			for _, pa := range mp.Paths {
				if _, err := addPath(p, pa, vg.Points(1.5)); err != nil {
					return err
				}
				if pa.Label != "" {
					key = append(key, lineKey(pa.Label, pa.Color, vg.Points(1.5)))
				}
			}
			if err := addMarks(p, mp.Marks); err != nil {
				return err
			}
			key = append(key, markKeys(mp.Marks)...)
			grid[i][j] = p
		}
	}
	hd := header{title: "each map in colours of its own scale, from its lowest (blue) to its highest (red) value", key: uniqueKeys(key)}
	return saveTitled(path, hd, grid, 2.8*vg.Inch, 2.6*vg.Inch)
}

// uniqueKeys returns the entries of key with labels not seen before in it.
func uniqueKeys(key []keyEntry) []keyEntry {
	seen := map[string]bool{}
	var out []keyEntry
	for _, e := range key {
		if !seen[e.label] {
			seen[e.label] = true
			out = append(out, e)
		}
	}
	return out
}
