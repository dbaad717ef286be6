package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph/sym"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
)

// evalSummary is DIR/summary.json.
type evalSummary struct {
	Task     string                    `json:"task"`
	Observe  string                    `json:"observe"`
	Sets     int                       `json:"sets"`
	Trials   int                       `json:"trials"`
	Restarts int                       `json:"restarts"`
	Methods  map[string]*methodSummary `json:"methods"`
	Excluded []string                  `json:"excluded_sets,omitempty"` // the simulated agent diverged: no data
	Note     string                    `json:"note"`
}

type methodSummary struct {
	Fitted       int                `json:"fitted_sets"`
	Failed       int                `json:"failed_sets"`
	Median       float64            `json:"median_abs_rel_error"`
	PerParam     map[string]float64 `json:"median_abs_rel_error_per_param"`
	NotFitted    []string           `json:"not_fitted,omitempty"`
	WallSeconds  float64            `json:"wall_seconds"`
	FitSeconds   float64            `json:"median_seconds_per_set"`
	RestartsBest float64            `json:"median_restarts_at_best"`
}

// summarize writes estimates.csv, summary.json and the figures of an eval directory, and
// prints the summary table.
func summarize(dir string, m models.Model, b backends.Backend, stdout, stderr io.Writer) error {
	spec := m.Spec()
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return err
	}
	var cfg evalConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	truth, order, err := readTruth(filepath.Join(dir, "truth.csv"), spec)
	if err != nil {
		return err
	}
	times := map[string]float64{}
	if raw, err := os.ReadFile(filepath.Join(dir, "times.json")); err == nil {
		_ = json.Unmarshal(raw, &times)
	}
	results := map[string]map[string]fit.Record{} // method → set → record
	for _, method := range cfg.Methods {
		files, _ := filepath.Glob(filepath.Join(dir, "fit-"+method+"*.jsonl"))
		if len(files) == 0 {
			continue
		}
		recs, err := fit.Merge(files)
		if err != nil {
			return err
		}
		results[method] = map[string]fit.Record{}
		for _, r := range recs {
			results[method][r.Subject] = r
		}
	}
	sum := evalSummary{Task: spec.Name, Observe: cfg.Observe, Sets: cfg.Sets, Trials: cfg.Trials, Restarts: cfg.Restarts,
		Methods: map[string]*methodSummary{}, Excluded: cfg.Excluded,
		Note: "errors are |estimate − truth| / |truth| for positive parameters and |estimate − truth| for signed ones " +
			"(and for a true value of 0); parameters a method does not fit (not identifiable by it) are excluded from its errors"}

	// estimates.csv
	estimates := [][]string{{"set", "method", "parameter", "true", "estimate", "abs_rel_error"}}
	var methods []string
	for _, mm := range cfg.Methods {
		if results[mm] != nil {
			methods = append(methods, mm)
		}
	}
	cells := make([][]*plots.Estimates, len(methods))
	var groups []plots.ErrorGroup
	for mi, method := range methods {
		ms := &methodSummary{PerParam: map[string]float64{}, WallSeconds: math.Round(times[method]*10) / 10}
		sum.Methods[method] = ms
		var all, secs, best []float64
		perParam := map[string][]float64{}
		cells[mi] = make([]*plots.Estimates, len(spec.Params))
		for pi, p := range spec.Params {
			cells[mi][pi] = &plots.Estimates{Method: method, Param: p.Name, Log: p.Scale == models.Log10Scale, Lo: p.Lo, Hi: p.Hi}
		}
		fittedAny := map[string]bool{}
		for _, id := range order {
			r, ok := results[method][id]
			if !ok {
				continue
			}
			if r.Error != "" && r.Params == nil {
				ms.Failed++
				continue
			}
			ms.Fitted++
			secs = append(secs, r.Seconds)
			best = append(best, float64(r.RestartsAtBest))
			for pi, p := range spec.Params {
				if !slices.Contains(r.Fitted, p.Name) {
					continue
				}
				fittedAny[p.Name] = true
				tv, ev := truth[id][pi], r.Params[p.Name]
				e := estimateError(p, tv, ev)
				all = append(all, e)
				perParam[p.Name] = append(perParam[p.Name], e)
				cells[mi][pi].True = append(cells[mi][pi].True, tv)
				cells[mi][pi].Est = append(cells[mi][pi].Est, ev)
				estimates = append(estimates, []string{id, method, p.Name, fmtFloat(tv), fmtFloat(ev), fmtFloat(e)})
			}
		}
		for pi, p := range spec.Params {
			if !fittedAny[p.Name] {
				ms.NotFitted = append(ms.NotFitted, p.Name)
				cells[mi][pi] = nil
				continue
			}
			ms.PerParam[p.Name] = round4(fit.Median(perParam[p.Name]))
		}
		ms.Median = round4(fit.Median(all))
		ms.FitSeconds = round4(fit.Median(secs))
		ms.RestartsBest = fit.Median(best)
		groups = append(groups, plots.ErrorGroup{Task: spec.Name, Method: method, Errors: all})
	}
	if err := writeCSV(filepath.Join(dir, "estimates.csv"), estimates); err != nil {
		return err
	}
	raw, _ = json.MarshalIndent(sum, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), raw, 0o644); err != nil {
		return err
	}
	if len(methods) == 0 {
		return fmt.Errorf("%s has no fits yet", dir)
	}
	// Figures.
	title := fmt.Sprintf("%s (%s)", spec.Name, cfg.Observe)
	if err := plots.TrueVsEstimated(filepath.Join(dir, "true_vs_estimated.png"), title, cells); err != nil {
		return err
	}
	if err := plots.ErrorSummary(filepath.Join(dir, "errors.png"), spec.Name+": absolute relative errors", groups, methods); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	first := order[0]
	switch spec.Name {
	case "reaching":
		if err := reachingFigure(dir, m, b, cfg, truth[first], results, methods, first); err != nil {
			return err
		}
	case "lightdark":
		if err := lightDarkFigure(dir, m, b, cfg, truth[first], results, methods, first); err != nil {
			return err
		}
	}
	// Table.
	fmt.Fprintf(stdout, "%s, %s observability: %d sets × %d trials, %d restarts\n", spec.Name, cfg.Observe, cfg.Sets, cfg.Trials, cfg.Restarts)
	if len(cfg.Excluded) > 0 {
		fmt.Fprintf(stdout, "excluded (the simulated agent diverged): %s\n", strings.Join(cfg.Excluded, ", "))
	}
	fmt.Fprintf(stdout, "%-10s %8s %8s", "method", "sets", "median")
	for _, p := range spec.Params {
		fmt.Fprintf(stdout, " %14s", p.Name)
	}
	fmt.Fprintf(stdout, " %10s\n", "wall (s)")
	for _, method := range methods {
		ms := sum.Methods[method]
		fmt.Fprintf(stdout, "%-10s %8d %8.3f", method, ms.Fitted, ms.Median)
		for _, p := range spec.Params {
			if v, ok := ms.PerParam[p.Name]; ok {
				fmt.Fprintf(stdout, " %14.3f", v)
			} else {
				fmt.Fprintf(stdout, " %14s", "—")
			}
		}
		fmt.Fprintf(stdout, " %10.1f\n", ms.WallSeconds)
	}
	fmt.Fprintf(stderr, "wrote %s/{estimates.csv,summary.json,true_vs_estimated.png,errors.png}\n", dir)
	return nil
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// paramsOf returns the natural parameter vector of a results record: its estimates and fixed
// values.
func paramsOf(spec models.Spec, r fit.Record) []float64 {
	out := make([]float64, len(spec.Params))
	values := r.Values()
	for i, p := range spec.Params {
		out[i] = values[p.Name]
	}
	return out
}

// simulateAt solves the task's agent for every parameter vector at once and simulates trials
// of each, with the evaluation's observability and the task's policy noise.
func simulateAt(m models.Model, b backends.Backend, cfg evalConfig, thetas [][]float64, trials int, seed uint64) ([][][][]float64, error) {
	spec := m.Spec()
	sv, err := control.NewSolver(m, cfg.Steps, b, control.SolverOptions{Planner: spec.Planner})
	if err != nil {
		return nil, err
	}
	pol, err := sv.Solve(thetas, nil)
	if err != nil {
		return nil, err
	}
	return control.Simulate(m, pol, thetas, b, control.SimOptions{Observe: control.Observe(cfg.Observe), Trials: trials, Seed: seed, Temperature: spec.Temperature})
}

// reachingFigure draws hand paths simulated at the truth and at each method's estimate of the
// first set (paper Fig. 2A/C).
func reachingFigure(dir string, m models.Model, b backends.Backend, cfg evalConfig, truth []float64, results map[string]map[string]fit.Record, methods []string, set string) error {
	spec := m.Spec()
	thetas, titles := [][]float64{truth}, []string{"truth"}
	for _, method := range methods {
		if r, ok := results[method][set]; ok && r.Params != nil {
			thetas = append(thetas, paramsOf(spec, r))
			titles = append(titles, method)
		}
	}
	xs, err := simulateAt(m, b, cfg, thetas, 20, cfg.Seed+99)
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
	return plots.Paths(filepath.Join(dir, "trajectories.png"), titles, panels, marks, "hand x [m]", "hand y [m]", true)
}

// lightDarkFigure draws the final-cost, running-cost and perceptual-uncertainty maps at the
// truth and at each method's estimate of the first set, with mean trajectories (paper Fig. 4).
func lightDarkFigure(dir string, m models.Model, b backends.Backend, cfg evalConfig, truth []float64, results map[string]map[string]fit.Record, methods []string, set string) error {
	spec := m.Spec()
	s, err := models.Derive(m)
	if err != nil {
		return err
	}
	thetas, names := [][]float64{truth}, []string{"truth"}
	for _, method := range methods {
		if r, ok := results[method][set]; ok && r.Params != nil {
			thetas = append(thetas, paramsOf(spec, r))
			names = append(names, method)
		}
	}
	xs, err := simulateAt(m, b, cfg, thetas, 50, cfg.Seed+99)
	if err != nil {
		return err
	}
	const nx, ny = 60, 45
	gx, gy := make([]float64, nx), make([]float64, ny)
	for i := range gx {
		gx[i] = -1 + 8*float64(i)/(nx-1)
	}
	for i := range gy {
		gy[i] = -2 + 6*float64(i)/(ny-1)
	}
	mapOf := func(theta []float64, f func(ev *sym.Evaluator[float64]) float64) plots.Grid {
		g := plots.Grid{Xs: gx, Ys: gy, Values: make([][]float64, ny)}
		for i, y := range gy {
			g.Values[i] = make([]float64, nx)
			for j, x := range gx {
				bind := sym.Bind(nil, s.X, []float64{x, y})
				sym.Bind(bind, s.U, make([]float64, len(s.U)))
				sym.Bind(bind, s.Theta, theta)
				g.Values[i][j] = f(sym.NewEvaluator[float64](sym.Float{}, bind))
			}
		}
		return g
	}
	var rows [][]plots.MapPanel
	for i, th := range thetas {
		mean := plots.Path{Color: plots.SeriesColor(1)}
		T := len(xs[i][0])
		for t := range T {
			mx, my := 0.0, 0.0
			for _, tr := range xs[i] {
				mx += tr[t][0] / float64(len(xs[i]))
				my += tr[t][1] / float64(len(xs[i]))
			}
			mean.X, mean.Y = append(mean.X, mx), append(mean.Y, my)
		}
		marks := []plots.Mark{plots.Point(spec.X0[0], spec.X0[1], "start"), plots.Cross(th[0], 0, "target")}
		var label []string
		for j, p := range spec.Params {
			label = append(label, fmt.Sprintf("%s=%.2g", p.Name, th[j]))
		}
		final := mapOf(th, func(ev *sym.Evaluator[float64]) float64 { return ev.Eval(s.Final) })
		running := mapOf(th, func(ev *sym.Evaluator[float64]) float64 { return ev.Eval(s.Cost) })
		std := mapOf(th, func(ev *sym.Evaluator[float64]) float64 {
			W := ev.EvalMat(s.Wn)
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
	return plots.Maps(filepath.Join(dir, "lightdark_maps.png"), rows, "x", "y")
}

// aggregateErrors reads the estimates of several eval directories for the cross-task figure
// (paper Fig. 3).
func aggregateErrors(dirs []string) ([]plots.ErrorGroup, []string, error) {
	var groups []plots.ErrorGroup
	var methods []string
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, "estimates.csv"))
		if err != nil {
			return nil, nil, err
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			return nil, nil, err
		}
		raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			return nil, nil, err
		}
		var cfg evalConfig
		_ = json.Unmarshal(raw, &cfg)
		by := map[string][]float64{}
		for _, r := range rows[1:] {
			v, _ := strconv.ParseFloat(r[5], 64)
			by[r[1]] = append(by[r[1]], v)
		}
		// Methods in the eval's order (ours first), so that colours match its other figures.
		var keys []string
		for _, k := range cfg.Methods {
			if by[k] != nil {
				keys = append(keys, k)
				if !slices.Contains(methods, k) {
					methods = append(methods, k)
				}
			}
		}
		for _, k := range keys {
			groups = append(groups, plots.ErrorGroup{Task: cfg.Task + "/" + cfg.Observe, Method: k, Errors: by[k]})
		}
	}
	return groups, methods, nil
}
