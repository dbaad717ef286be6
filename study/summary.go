package study

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
)

// Summary is DIR/summary.json of an evaluation directory: how well each method recovered
// the sets' true parameters.
type Summary struct {
	Task     string                    `json:"task"`
	Observe  string                    `json:"observe"`
	Sets     int                       `json:"sets"`
	Trials   int                       `json:"trials"`
	Restarts int                       `json:"restarts"`
	Methods  map[string]*MethodSummary `json:"methods"`
	Excluded []string                  `json:"excluded_sets,omitempty"` // the simulated agent diverged: no data
	Note     string                    `json:"note"`
}

// MethodSummary is one method's part of a Summary. The errors are EstimateError's, their
// medians over the sets and the parameters the method fits, rounded to 4 decimals.
type MethodSummary struct {
	Fitted       int                `json:"fitted_sets"`
	Failed       int                `json:"failed_sets"`
	Median       float64            `json:"median_abs_rel_error"`
	PerParam     map[string]float64 `json:"median_abs_rel_error_per_param"`
	NotFitted    []string           `json:"not_fitted,omitempty"`
	WallSeconds  float64            `json:"wall_seconds"`
	FitSeconds   float64            `json:"median_seconds_per_set"`
	RestartsBest float64            `json:"median_restarts_at_best"`
}

// summaryNote is Summary.Note.
const summaryNote = "errors are |estimate − truth| / |truth| for positive parameters and |estimate − truth| for signed ones " +
	"(and for a true value of 0); parameters a method does not fit (not identifiable by it) are excluded from its errors"

// Evaluation is an evaluation directory read back and summarized (Summarize).
type Evaluation struct {
	Dir     string
	Spec    models.Spec
	Config  Config
	Truth   map[string][]float64             // the sets' true parameters, natural units, Spec's order
	Order   []string                         // the sets in truth.csv's order
	Results map[string]map[string]fit.Record // method → set → its fit
	Methods []string                         // the methods with fits, in Config.Methods' order
	Summary Summary

	estimates [][]string           // estimates.csv
	cells     [][]*plots.Estimates // [method][parameter], nil where the method fits none
	groups    []plots.ErrorGroup   // the errors by method
}

// Summarize reads the evaluation directory dir of the task of spec (config.json, truth.csv,
// times.json and every method's results files, shards merged), summarizes the errors of
// its estimates and writes estimates.csv (one row per set, method and fitted parameter) and
// summary.json. It returns what it read and computed; a directory without fits is an error
// once both files are written.
func Summarize(dir string, spec models.Spec) (*Evaluation, error) {
	ev := &Evaluation{Dir: dir, Spec: spec}
	var err error
	if ev.Config, _, err = ReadConfig(dir); err != nil {
		return nil, err
	}
	if ev.Truth, ev.Order, err = ReadTruth(filepath.Join(dir, TruthFile), spec); err != nil {
		return nil, err
	}
	times := map[string]float64{}
	if raw, err := os.ReadFile(filepath.Join(dir, TimesFile)); err == nil {
		_ = json.Unmarshal(raw, &times)
	}
	if ev.Results, err = readFits(dir, ev.Config.Methods); err != nil {
		return nil, err
	}
	cfg := ev.Config
	ev.Summary = Summary{Task: spec.Name, Observe: cfg.Observe, Sets: cfg.Sets, Trials: cfg.Trials, Restarts: cfg.Restarts,
		Methods: map[string]*MethodSummary{}, Excluded: cfg.Excluded, Note: summaryNote}
	ev.estimates = [][]string{{"set", "method", "parameter", "true", "estimate", "abs_rel_error"}}
	for _, m := range cfg.Methods {
		if ev.Results[m] != nil {
			ev.Methods = append(ev.Methods, m)
		}
	}
	for _, method := range ev.Methods {
		ev.summarize(method, times[method])
	}
	if err := writeCSV(filepath.Join(dir, EstimatesFile), ev.estimates); err != nil {
		return nil, err
	}
	raw, _ := json.MarshalIndent(ev.Summary, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), raw, 0o644); err != nil {
		return nil, err
	}
	if len(ev.Methods) == 0 {
		return nil, fmt.Errorf("%s has no fits yet", dir)
	}
	return ev, nil
}

// readFits returns the records of each method's results files in dir (fit-METHOD*.jsonl,
// merged), by method and subject; a method without files has none.
func readFits(dir string, methods []string) (map[string]map[string]fit.Record, error) {
	results := map[string]map[string]fit.Record{}
	for _, method := range methods {
		files, _ := filepath.Glob(filepath.Join(dir, "fit-"+method+"*.jsonl"))
		if len(files) == 0 {
			continue
		}
		recs, err := fit.Merge(files)
		if err != nil {
			return nil, err
		}
		results[method] = map[string]fit.Record{}
		for _, r := range recs {
			results[method][r.Subject] = r
		}
	}
	return results, nil
}

// summarize adds method's summary, its rows of estimates.csv, its cells of the
// true-against-estimated figure and its errors; wall is the seconds spent fitting with it.
func (ev *Evaluation) summarize(method string, wall float64) {
	spec := ev.Spec
	ms := &MethodSummary{PerParam: map[string]float64{}, WallSeconds: math.Round(wall*10) / 10}
	ev.Summary.Methods[method] = ms
	var all, secs, best []float64
	perParam := map[string][]float64{}
	cells := make([]*plots.Estimates, len(spec.Params))
	for pi, p := range spec.Params {
		cells[pi] = &plots.Estimates{Method: method, Param: p.Name, Log: p.Scale == models.Log10Scale, Lo: p.Lo, Hi: p.Hi}
	}
	for _, id := range ev.Order {
		r, ok := ev.Results[method][id]
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
			tv, est := ev.Truth[id][pi], r.Params[p.Name]
			e := EstimateError(p, tv, est)
			all = append(all, e)
			perParam[p.Name] = append(perParam[p.Name], e)
			cells[pi].True = append(cells[pi].True, tv)
			cells[pi].Est = append(cells[pi].Est, est)
			ev.estimates = append(ev.estimates, []string{id, method, p.Name, fmtFloat(tv), fmtFloat(est), fmtFloat(e)})
		}
	}
	for pi, p := range spec.Params {
		if perParam[p.Name] == nil {
			ms.NotFitted = append(ms.NotFitted, p.Name)
			cells[pi] = nil
			continue
		}
		ms.PerParam[p.Name] = round4(fit.Median(perParam[p.Name]))
	}
	ms.Median = round4(fit.Median(all))
	ms.FitSeconds = round4(fit.Median(secs))
	ms.RestartsBest = fit.Median(best)
	ev.cells = append(ev.cells, cells)
	ev.groups = append(ev.groups, plots.ErrorGroup{Task: spec.Name, Method: method, Errors: all})
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
