package study

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Names of the files of an evaluation directory.
const (
	ConfigFile    = "config.json"
	TruthFile     = "truth.csv"
	DataFile      = "data.csv"
	TimesFile     = "times.json"
	EstimatesFile = "estimates.csv"
	SummaryFile   = "summary.json"
)

// Config is an evaluation's settings, DIR/config.json of an evaluation directory: what it
// simulates and how it fits.
type Config struct {
	Task      string             `json:"task"`
	TaskFile  string             `json:"task_file,omitempty"` // absolute path, for --task-file
	Observe   string             `json:"observe"`
	Sets      int                `json:"sets"`
	Trials    int                `json:"trials"`
	Steps     int                `json:"steps"`
	Seed      uint64             `json:"seed"`
	Truth     map[string]float64 `json:"truth,omitempty"` // fixed true values; others drawn
	Restarts  int                `json:"restarts"`
	Methods   []string           `json:"methods"`
	Linearize string             `json:"linearize_ours"`
	// Excluded are the sets whose simulated agent diverged (states became infinite): they
	// have no data and are not fitted.
	Excluded []string `json:"excluded_sets,omitempty"`
	// TaskDigest identifies the task's definition (models.Digest) and Version the nioc-gpu
	// that simulated the data; absent in directories of earlier versions.
	TaskDigest string `json:"task_digest,omitempty"`
	Version    string `json:"version,omitempty"`
}

// SameData reports whether the evaluation of c simulated the data that o would: the same
// task, definition, sets, trials and truths (the restarts and methods may differ; so may the
// version, and a directory of an earlier version has no task digest to compare).
func (c Config) SameData(o Config) bool {
	a, b := c, o
	a.Restarts, b.Restarts, a.Methods, b.Methods, a.Excluded, b.Excluded = 0, 0, nil, nil, nil, nil
	a.Version, b.Version = "", ""
	if a.TaskDigest == "" || b.TaskDigest == "" {
		a.TaskDigest, b.TaskDigest = "", ""
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// ReadConfig returns the settings of the evaluation directory dir (config.json) and the
// file's bytes. It returns os.ReadFile's error and nil bytes when the file cannot be read
// (fs.ErrNotExist: dir is no evaluation directory), and json.Unmarshal's error with the
// bytes when they are not a Config.
func ReadConfig(dir string) (Config, []byte, error) {
	var c Config
	raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return c, nil, err
	}
	return c, raw, json.Unmarshal(raw, &c)
}

// SetID returns the subject ID of the i-th set (counted from 0): set001, set002, ….
func SetID(i int) string { return fmt.Sprintf("set%03d", i+1) }

// Draw returns the true parameters of each of c.Sets sets, in natural units and spec's
// order: uniform in each parameter's fitting scale within its bounds, from c.Seed, unless
// c.Truth fixes the parameter's value.
func (c Config) Draw(spec models.Spec) [][]float64 {
	rng := rand.New(rand.NewPCG(c.Seed, 0x5e75))
	out := make([][]float64, c.Sets)
	for s := range out {
		out[s] = make([]float64, len(spec.Params))
		for i, p := range spec.Params {
			lo, hi := p.ToScale(p.Lo), p.ToScale(p.Hi)
			out[s][i] = p.FromScale(lo + rng.Float64()*(hi-lo))
			if v, ok := c.Truth[p.Name]; ok {
				out[s][i] = v
			}
		}
	}
	return out
}

// Simulate draws the sets' true parameters (Draw) and simulates their data with m on b
// (SimulateSets). It returns the data and the true parameters of every set, excluded ones
// too, and sets c.Excluded.
func (c *Config) Simulate(m models.Model, b backends.Backend) (*data.Set, [][]float64, error) {
	thetas := c.Draw(m.Spec())
	set, excluded, err := c.SimulateSets(m, b, thetas)
	if err != nil {
		return nil, nil, err
	}
	c.Excluded = excluded
	return set, thetas, nil
}

// Write writes what Simulate returned into the evaluation directory dir, which must exist:
// the true parameters thetas of the task of spec (truth.csv, WriteTruth), the data set
// (data.csv) and c (config.json).
func (c Config) Write(dir string, spec models.Spec, thetas [][]float64, set *data.Set) error {
	if err := WriteTruth(filepath.Join(dir, TruthFile), spec, thetas); err != nil {
		return err
	}
	if err := data.Write(filepath.Join(dir, DataFile), set); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(c, "", "  ")
	return os.WriteFile(filepath.Join(dir, ConfigFile), raw, 0o644)
}

// SimulateSets solves the agent for every set at once, at the true parameters thetas
// (natural units, spec's order), and simulates c.Trials trials of c.Steps steps of each, the
// set i becoming the subject SetID(i). A set whose agent diverges in simulation (some trial's
// states become infinite, or leave the task's plausible range, models.Spec.MaxState, which
// reading the data would refuse) is left out of the data and returned in excluded.
func (c Config) SimulateSets(m models.Model, b backends.Backend, thetas [][]float64) (set *data.Set, excluded []string, err error) {
	spec := m.Spec()
	xs, err := c.SimulateAt(m, b, thetas, c.Trials, c.Seed)
	var div *control.DivergedError
	if errors.As(err, &div) {
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	set = &data.Set{StateNames: spec.States, Steps: c.Steps}
	for s, trials := range xs {
		if div != nil && slices.Contains(div.Problems, s) || beyond(trials, spec.MaxState()) {
			excluded = append(excluded, SetID(s))
			continue
		}
		subj := data.Subject{ID: SetID(s)}
		for r, tr := range trials {
			subj.Trials = append(subj.Trials, data.Trial{ID: r, States: tr})
		}
		set.Subjects = append(set.Subjects, subj)
	}
	return set, excluded, nil
}

// SimulateAt solves the task's agent for every parameter vector of thetas (natural units) at
// once, over c.Steps steps with the task's planner, and simulates trials of each with c's
// observability, the task's policy noise and seed: [theta][trial][t][state]. A diverging
// simulation is a *control.DivergedError.
func (c Config) SimulateAt(m models.Model, b backends.Backend, thetas [][]float64, trials int, seed uint64) ([][][][]float64, error) {
	spec := m.Spec()
	sv, err := control.NewSolver(m, c.Steps, b, control.SolverOptions{Planner: spec.Planner})
	if err != nil {
		return nil, err
	}
	pol, err := sv.Solve(thetas, nil)
	if err != nil {
		return nil, err
	}
	return control.Simulate(m, pol, thetas, b, control.SimOptions{Observe: control.Observe(c.Observe), Trials: trials, Seed: seed, Temperature: spec.Temperature})
}

// beyond reports whether a state value of trials exceeds bound in magnitude.
func beyond(trials [][][]float64, bound float64) bool {
	for _, tr := range trials {
		for _, x := range tr {
			for _, v := range x {
				if math.Abs(v) > bound {
					return true
				}
			}
		}
	}
	return false
}

// WriteTruth writes the true parameters thetas of the sets (natural units, spec's order) to a
// new CSV file at path: a header "set" and spec's parameter names, then one row per set.
func WriteTruth(path string, spec models.Spec, thetas [][]float64) error {
	rows := [][]string{append([]string{"set"}, spec.ParamNames()...)}
	for s, th := range thetas {
		row := []string{SetID(s)}
		for _, v := range th {
			row = append(row, fmtFloat(v))
		}
		rows = append(rows, row)
	}
	return writeCSV(path, rows)
}

// ReadTruth reads a truth.csv that WriteTruth wrote for the task of spec, or the truth file of
// a population's subjects (Draws.WriteTruth: a first column "subject" and a column "group"
// before the parameters). It returns the true parameters by set or subject (natural units,
// spec's order) and the sets in file order. A header that is not the task's parameters and a
// value that is not a number are errors naming the file.
func ReadTruth(path string, spec models.Spec) (map[string][]float64, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	skip := 1 // the set's or subject's ID; a population's subjects' group
	if len(rows) > 0 && len(rows[0]) > 1 && rows[0][0] == SubjectHeader && rows[0][1] == GroupHeader {
		skip = 2
	}
	if len(rows) < 1 || !slices.Equal(rows[0][skip:], spec.ParamNames()) {
		return nil, nil, fmt.Errorf("%s: header does not match task %s", path, spec.Name)
	}
	out := map[string][]float64{}
	var order []string
	for i, r := range rows[1:] {
		var th []float64
		for j, c := range r[skip:] {
			v, err := strconv.ParseFloat(c, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s line %d, column %q: %v", path, i+2, rows[0][j+skip], err)
			}
			th = append(th, v)
		}
		out[r[0]] = th
		order = append(order, r[0])
	}
	return out, order, nil
}

// AddWallTime adds seconds of wall time spent fitting with method to DIR/times.json, the
// seconds by method, created if absent (a file that is not JSON starts over).
func AddWallTime(dir, method string, seconds float64) error {
	path := filepath.Join(dir, TimesFile)
	times := map[string]float64{}
	if raw, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(raw, &times)
	}
	times[method] += seconds
	raw, _ := json.MarshalIndent(times, "", "  ")
	return os.WriteFile(path, raw, 0o644)
}

// FitPath returns the results file of method in the evaluation directory dir:
// fit-METHOD.jsonl, or fit-METHOD.shard-K-of-N.jsonl for shard k of n > 1.
func FitPath(dir, method string, k, n int) string {
	if n > 1 {
		return filepath.Join(dir, fmt.Sprintf("fit-%s.shard-%d-of-%d.jsonl", method, k, n))
	}
	return filepath.Join(dir, "fit-"+method+".jsonl")
}

// StartPath returns the results file beside FitPath's path fit whose estimates start the
// fits with the iLQG linearization: its name with "start-" in place of "fit-".
func StartPath(fit string) string {
	return filepath.Join(filepath.Dir(fit), strings.Replace(filepath.Base(fit), "fit-", "start-", 1))
}

// EstimateError is the error of an estimate est of a parameter p whose true value is truth:
// relative, |est − truth| / |truth|, for positive parameters; absolute, |est − truth|, for
// signed ones (a relative error of a position near 0 means nothing) and for a true value
// of 0.
func EstimateError(p models.Param, truth, est float64) float64 {
	if p.Signed || truth == 0 {
		return math.Abs(est - truth)
	}
	return math.Abs(est-truth) / math.Abs(truth)
}

// fmtFloat formats v as the shortest decimal that reads back as v.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// writeCSV writes rows to a new CSV file at path.
func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
