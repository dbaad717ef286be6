package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Colours of a posterior predictive check: simulated trajectories light and translucent, the
// data's dark.
var (
	simulatedColor = color.NRGBA{R: 255, G: 127, B: 14, A: 90}
	dataColor      = color.NRGBA{R: 20, G: 40, B: 90, A: 230}
)

// Overlay is one panel of a posterior predictive check: trajectories simulated at posterior
// draws and the data's, as paths (their colours are the figure's own).
type Overlay struct {
	Title, XLabel, YLabel string
	Simulated, Data       []Path
	Equal                 bool // the same scale on both axes (hand paths in the plane)
	Steps                 bool // the horizontal axis counts time steps: integer ticks
}

// PredictiveCheck writes the panels of a posterior predictive check to path (PNG), up to cols
// a row: the simulated paths thin and light, the data's over them, thin and dark, so that
// data outside the simulations' spread stand out. title heads the figure.
func PredictiveCheck(path, title string, panels []Overlay, cols int) error {
	if len(panels) == 0 {
		return fmt.Errorf("predictive check %s: no panels", path)
	}
	cols = max(1, min(cols, len(panels)))
	grid := make([][]*plot.Plot, (len(panels)+cols-1)/cols)
	for i, ov := range panels {
		p, err := overlayPlot(ov)
		if err != nil {
			return fmt.Errorf("predictive check %s: %w", path, err)
		}
		grid[i/cols] = append(grid[i/cols], p)
	}
	w, h := 3.4*vg.Inch, 2.6*vg.Inch
	if panels[0].Equal {
		h = w
	}
	return saveTitled(path, header{title: title, key: predictiveKey}, grid, w, h)
}

// predictiveKey is the key of PredictiveCheck, its lines wider than the panels' to show their
// colours.
var predictiveKey = []keyEntry{
	lineKey("simulated at posterior draws", color.NRGBA{R: simulatedColor.R, G: simulatedColor.G, B: simulatedColor.B, A: 200}, vg.Points(1.5)),
	lineKey("data", dataColor, vg.Points(1.5)),
}

// overlayPlot draws one panel of PredictiveCheck.
func overlayPlot(ov Overlay) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = ov.Title
	p.X.Label.Text, p.Y.Label.Text = ov.XLabel, ov.YLabel
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	if ov.Steps {
		p.X.Tick.Marker = integerTicks{}
	}
	for k, set := range [][]Path{ov.Simulated, ov.Data} {
		color, width := simulatedColor, vg.Points(0.4)
		if k == 1 {
			color, width = dataColor, vg.Points(0.6)
		}
		for _, pa := range set {
			pa.Color = color
			if _, err := addPath(p, pa, width); err != nil {
				return nil, err
			}
			for t := range pa.X {
				lo[0], hi[0] = math.Min(lo[0], pa.X[t]), math.Max(hi[0], pa.X[t])
				lo[1], hi[1] = math.Min(lo[1], pa.Y[t]), math.Max(hi[1], pa.Y[t])
			}
		}
	}
	if ov.Equal && !math.IsInf(lo[0], 1) {
		span := math.Max(hi[0]-lo[0], hi[1]-lo[1]) * 1.1
		if span == 0 {
			span = 1
		}
		cx, cy := (hi[0]+lo[0])/2, (hi[1]+lo[1])/2
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = cx-span/2, cx+span/2, cy-span/2, cy+span/2
	}
	return p, nil
}

// StateOverlays returns the panels of a posterior predictive check of trajectories
// ([trial][t][state]) over time: one panel per state component, time steps on the horizontal
// axis. states names the components.
func StateOverlays(states []string, simulated, data [][][]float64) []Overlay {
	panels := make([]Overlay, len(states))
	for i, name := range states {
		panels[i] = Overlay{Title: name, XLabel: "time step", YLabel: name, Steps: true,
			Simulated: componentPaths(simulated, i), Data: componentPaths(data, i)}
	}
	return panels
}

// componentPaths returns state component i of each trajectory against its time steps.
func componentPaths(trajectories [][][]float64, i int) []Path {
	out := make([]Path, 0, len(trajectories))
	for _, tr := range trajectories {
		pa := Path{X: make([]float64, len(tr)), Y: make([]float64, len(tr))}
		for t, x := range tr {
			pa.X[t], pa.Y[t] = float64(t), x[i]
		}
		out = append(out, pa)
	}
	return out
}

// HandOverlay returns the panel of a posterior predictive check of a reaching task: the hand
// paths in the plane, hand mapping a state to the hand's position.
func HandOverlay(hand func([]float64) (float64, float64), simulated, data [][][]float64) Overlay {
	paths := func(trajectories [][][]float64) []Path {
		out := make([]Path, 0, len(trajectories))
		for _, tr := range trajectories {
			pa := Path{X: make([]float64, len(tr)), Y: make([]float64, len(tr))}
			for t, x := range tr {
				pa.X[t], pa.Y[t] = hand(x)
			}
			out = append(out, pa)
		}
		return out
	}
	return Overlay{Title: "hand paths", XLabel: "hand x [m]", YLabel: "hand y [m]", Equal: true,
		Simulated: paths(simulated), Data: paths(data)}
}
