package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ModelBars is one model of a random-effects model comparison (package bms): its name, its
// posterior expected frequency in the population with the posterior standard deviation, its
// exceedance and protected exceedance probabilities; all fractions in [0, 1].
type ModelBars struct {
	Name                            string
	Frequency, FrequencySD          float64
	Exceedance, ProtectedExceedance float64
}

// ModelComparison draws a model comparison across subjects into a PNG: for each model three
// bars side by side, its expected frequency (with ± one posterior standard deviation), its
// exceedance and its protected exceedance probability, each with its value above it, and a
// dashed line at 1/K, where every probability lies when the data favour no model. It returns
// an error for fewer than one model or a value outside [0, 1].
func ModelComparison(path, title string, models []ModelBars) error {
	p, _, key, err := modelComparisonPlot(models)
	if err != nil {
		return err
	}
	w := vg.Length(math.Max(4.5, 1.5*float64(len(models)))) * vg.Inch
	return saveTitled(path, header{title: title, key: key}, [][]*plot.Plot{{p}}, w, 3.6*vg.Inch)
}

// modelComparisonPlot returns ModelComparison's panel, its bars (frequency, exceedance,
// protected exceedance) and key.
func modelComparisonPlot(models []ModelBars) (*plot.Plot, []*plotter.BarChart, []keyEntry, error) {
	if len(models) == 0 {
		return nil, nil, nil, fmt.Errorf("model comparison figure: no models")
	}
	names := make([]string, len(models))
	series := [3]plotter.Values{}
	sd := make([]float64, len(models))
	for i, m := range models {
		for _, v := range []float64{m.Frequency, m.FrequencySD, m.Exceedance, m.ProtectedExceedance} {
			if !(v >= 0 && v <= 1) {
				return nil, nil, nil, fmt.Errorf("model comparison figure: model %s: %v is not a fraction in [0, 1]", m.Name, v)
			}
		}
		names[i] = m.Name
		series[0] = append(series[0], m.Frequency)
		series[1] = append(series[1], m.Exceedance)
		series[2] = append(series[2], m.ProtectedExceedance)
		sd[i] = m.FrequencySD
	}
	p := plot.New()
	p.Y.Label.Text = "probability / frequency"
	p.Y.Min, p.Y.Max = 0, 1.1
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"},
		{Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}})
	p.X.Min, p.X.Max = -0.6, float64(len(models))-0.4
	p.NominalX(names...)

	const barWidth = vg.Length(16)
	labels := []string{"expected frequency (± posterior SD)", "exceedance probability", "protected exceedance probability"}
	colors := []color.Color{SeriesColor(0), color.RGBA{R: 160, G: 190, B: 220, A: 255}, SeriesColor(1)}
	var key []keyEntry
	var charts []*plotter.BarChart
	chance := hLine(1/float64(len(models)), color.Gray{Y: 110})
	chance.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(chance)
	for s, vals := range series {
		offset := barWidth * vg.Length(s-1)
		b, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return nil, nil, nil, err
		}
		charts = append(charts, b)
		b.Color, b.Offset = colors[s], offset
		b.LineStyle.Width = 0
		p.Add(b)
		key = append(key, keyEntry{label: labels[s], thumbs: []plot.Thumbnailer{b}})
		var xys plotter.XYs
		var text []string
		for i, v := range vals {
			y := v
			if s == 0 {
				y = math.Min(1, v+sd[i])
			}
			xys = append(xys, plotter.XY{X: float64(i), Y: y})
			text = append(text, fmt.Sprintf("%.2f", v))
		}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: text})
		if err != nil {
			return nil, nil, nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].Font.Size = vg.Points(7)
		}
		l.Offset = vg.Point{X: offset, Y: vg.Points(2)}
		p.Add(l)
	}
	p.Add(&offsetErrorBars{x: seq(len(models)), y: series[0], sd: sd, offset: -barWidth})
	key = append(key, keyEntry{label: fmt.Sprintf("1/%d: no model favoured", len(models)), thumbs: []plot.Thumbnailer{chance}})
	return p, charts, key, nil
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// offsetErrorBars draws vertical bars y ± sd (clipped to [0, 1]) at x shifted by offset on
// the canvas, over the bars of a plotter.BarChart with that Offset.
type offsetErrorBars struct {
	x, y, sd []float64
	offset   vg.Length
}

// Plot implements plot.Plotter.
func (e *offsetErrorBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	style := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	cap := vg.Points(3)
	for i := range e.x {
		x := trX(e.x[i]) + e.offset
		lo, hi := trY(math.Max(0, e.y[i]-e.sd[i])), trY(math.Min(1, e.y[i]+e.sd[i]))
		c.StrokeLine2(style, x, lo, x, hi)
		c.StrokeLine2(style, x-cap, lo, x+cap, lo)
		c.StrokeLine2(style, x-cap, hi, x+cap, hi)
	}
}
