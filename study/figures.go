package study

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
)

// Names of the figures of an evaluation directory.
const (
	TrueVsEstimatedFigure = "true_vs_estimated.png"
	ErrorsFigure          = "errors.png"
	TrajectoriesFigure    = "trajectories.png"   // reaching only
	LightDarkFigure       = "lightdark_maps.png" // lightdark only
)

// Figures draws the figures of the evaluation: the true against the estimated parameters of
// every method, the distributions of their errors and, for the tasks reaching and lightdark,
// the paper's figures of the first set (Fig. 2A/C and Fig. 4: simulated with m on b at the
// truth and at each method's estimate). A failure to draw the errors, which a single set
// cannot show, is passed to warn and the others drawn; other failures are returned.
func (ev *Evaluation) Figures(m models.Model, b backends.Backend, warn func(error)) error {
	spec, cfg := ev.Spec, ev.Config
	title := fmt.Sprintf("%s (%s)", spec.Name, cfg.Observe)
	if err := plots.TrueVsEstimated(filepath.Join(ev.Dir, TrueVsEstimatedFigure), title, ev.cells); err != nil {
		return err
	}
	if err := plots.ErrorSummary(filepath.Join(ev.Dir, ErrorsFigure), spec.Name+": absolute relative errors", ev.groups, ev.Methods); err != nil {
		warn(err)
	}
	first := ev.Order[0]
	switch spec.Name {
	case "reaching":
		return ev.reachingFigure(m, b, first)
	case "lightdark":
		return ev.lightDarkFigure(m, b, first)
	}
	return nil
}

// estimatesOf returns the true parameters of set and each method's estimate of them where it
// has one (natural units), with the panels' names: "truth" and the methods.
func (ev *Evaluation) estimatesOf(set string) (thetas [][]float64, names []string) {
	thetas, names = [][]float64{ev.Truth[set]}, []string{"truth"}
	for _, method := range ev.Methods {
		if r, ok := ev.Results[method][set]; ok && r.Params != nil {
			thetas = append(thetas, paramsOf(ev.Spec, r))
			names = append(names, method)
		}
	}
	return thetas, names
}

// paramsOf returns the natural parameter vector of a results record, in spec's order: its
// estimates and fixed values.
func paramsOf(spec models.Spec, r fit.Record) []float64 {
	out := make([]float64, len(spec.Params))
	values := r.Values()
	for i, p := range spec.Params {
		out[i] = values[p.Name]
	}
	return out
}

// reachingFigure draws hand paths simulated at the truth and at each method's estimate of
// set (paper Fig. 2A/C).
func (ev *Evaluation) reachingFigure(m models.Model, b backends.Backend, set string) error {
	thetas, titles := ev.estimatesOf(set)
	xs, err := ev.Config.SimulateAt(m, b, thetas, 20, ev.Config.Seed+99)
	if err != nil {
		return err
	}
	hand := models.Reaching{}
	var panels [][]plots.Path
	var marks [][]plots.Mark
	for i := range xs {
		var ps []plots.Path
		for _, tr := range xs[i] {
			var px, py []float64
			for _, x := range tr {
				hx, hy := hand.HandPosition(x)
				px, py = append(px, hx), append(py, hy)
			}
			ps = append(ps, plots.Path{X: px, Y: py, Color: plots.SeriesColor(i)})
		}
		panels = append(panels, ps)
		marks = append(marks, []plots.Mark{plots.Cross(0.05, 0.5, "target")})
		titles[i] = fmt.Sprintf("%s (%s)", titles[i], set)
	}
	return plots.Paths(filepath.Join(ev.Dir, TrajectoriesFigure), titles, panels, marks, "hand x [m]", "hand y [m]", true)
}

// lightDarkFigure draws the final-cost, running-cost and perceptual-uncertainty maps at the
// truth and at each method's estimate of set, with mean trajectories (paper Fig. 4).
func (ev *Evaluation) lightDarkFigure(m models.Model, b backends.Backend, set string) error {
	spec := ev.Spec
	s, err := models.Derive(m)
	if err != nil {
		return err
	}
	thetas, names := ev.estimatesOf(set)
	xs, err := ev.Config.SimulateAt(m, b, thetas, 50, ev.Config.Seed+99)
	if err != nil {
		return err
	}
	var rows [][]plots.MapPanel
	for i, th := range thetas {
		mean := meanPath(xs[i])
		marks := []plots.Mark{plots.Point(spec.X0[0], spec.X0[1], "start"), plots.Cross(th[0], 0, "target")}
		var label []string
		for j, p := range spec.Params {
			label = append(label, fmt.Sprintf("%s=%.2g", p.Name, th[j]))
		}
		final := lightDarkMap(s, th, func(e *sym.Evaluator[float64]) float64 { return e.Eval(s.Final) })
		running := lightDarkMap(s, th, func(e *sym.Evaluator[float64]) float64 { return e.Eval(s.Cost) })
		std := lightDarkMap(s, th, func(e *sym.Evaluator[float64]) float64 {
			W := e.EvalMat(s.Wn)
			v := 0.0
			for _, row := range W {
				for _, e := range row {
					v += e * e
				}
			}
			return math.Sqrt(v / float64(len(W)))
		})
		rows = append(rows, []plots.MapPanel{
			{Title: names[i] + ": final cost", Map: final, Paths: []plots.Path{mean}, Marks: marks},
			{Title: strings.Join(label, " ") + "\nrunning cost", Map: running, Paths: []plots.Path{mean}, Marks: marks},
			{Title: "perceptual uncertainty (obs. std)", Map: std, Paths: []plots.Path{mean}, Marks: marks},
		})
	}
	return plots.Maps(filepath.Join(ev.Dir, LightDarkFigure), rows, "x", "y")
}

// meanPath returns the mean over trials of the first two states at each step.
func meanPath(trials [][][]float64) plots.Path {
	mean := plots.Path{Color: plots.SeriesColor(1)}
	for t := range len(trials[0]) {
		mx, my := 0.0, 0.0
		for _, tr := range trials {
			mx += tr[t][0] / float64(len(trials))
			my += tr[t][1] / float64(len(trials))
		}
		mean.X, mean.Y = append(mean.X, mx), append(mean.Y, my)
	}
	return mean
}

// lightDarkMap evaluates f at the light-dark task's states (x, y) of a 60 × 45 grid over
// [-1, 7] × [-2, 4], with zero controls and parameters theta (natural units).
func lightDarkMap(s *models.Symbolic, theta []float64, f func(e *sym.Evaluator[float64]) float64) plots.Grid {
	const nx, ny = 60, 45
	g := plots.Grid{Xs: make([]float64, nx), Ys: make([]float64, ny), Values: make([][]float64, ny)}
	for i := range g.Xs {
		g.Xs[i] = -1 + 8*float64(i)/(nx-1)
	}
	for i := range g.Ys {
		g.Ys[i] = -2 + 6*float64(i)/(ny-1)
	}
	for i, y := range g.Ys {
		g.Values[i] = make([]float64, nx)
		for j, x := range g.Xs {
			bind := sym.Bind(nil, s.X, []float64{x, y})
			sym.Bind(bind, s.U, make([]float64, len(s.U)))
			sym.Bind(bind, s.Theta, theta)
			g.Values[i][j] = f(sym.NewEvaluator[float64](sym.Float{}, bind))
		}
	}
	return g
}

// AggregateErrors reads the errors of the estimates of several evaluation directories
// (estimates.csv) for a figure across tasks (paper Fig. 3): one group per directory and
// method, named TASK/OBSERVE, and the methods in the order the directories list them (ours
// first), so that colours match their other figures. A directory without estimates.csv or
// config.json is an error.
func AggregateErrors(dirs []string) ([]plots.ErrorGroup, []string, error) {
	var groups []plots.ErrorGroup
	var methods []string
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, EstimatesFile))
		if err != nil {
			return nil, nil, err
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			return nil, nil, err
		}
		raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
		if err != nil {
			return nil, nil, err
		}
		var cfg Config
		_ = json.Unmarshal(raw, &cfg)
		by := map[string][]float64{}
		for _, r := range rows[1:] {
			v, _ := strconv.ParseFloat(r[5], 64)
			by[r[1]] = append(by[r[1]], v)
		}
		for _, k := range cfg.Methods {
			if by[k] == nil {
				continue
			}
			if !slices.Contains(methods, k) {
				methods = append(methods, k)
			}
			groups = append(groups, plots.ErrorGroup{Task: cfg.Task + "/" + cfg.Observe, Method: k, Errors: by[k]})
		}
	}
	return groups, methods, nil
}
