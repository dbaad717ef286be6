package population

// The files of a population fit: the EM steps as they finish (JSON Lines, what a resumed run
// continues from), and the report: the population as JSON and CSV, the subjects' estimates
// as CSV.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/models"
)

// Settings is what a population fit's steps depend on: a run resumed with other settings is
// refused.
type Settings struct {
	Task        string            `json:"task"`
	TaskDigest  string            `json:"task_digest"`
	Observe     string            `json:"observe"`
	Likelihood  string            `json:"likelihood,omitempty"`
	Formula     string            `json:"formula"`
	Columns     []string          `json:"columns"`
	Fitted      []string          `json:"fitted"`
	Subjects    []string          `json:"subjects"`
	DataDigests map[string]string `json:"data_digests"`
	Restarts    int               `json:"restarts"`
	Seed        uint64            `json:"seed"`
	MaxIter     int               `json:"max_iter"`
	Tol         float64           `json:"tol"`
}

// Differences lists how o differs from s, one line a field, in words.
func (s Settings) Differences(o Settings) []string {
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(o)
	if bytes.Equal(a, b) {
		return nil
	}
	var ma, mb map[string]any
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		ja, _ := json.Marshal(ma[k])
		jb, _ := json.Marshal(mb[k])
		if !bytes.Equal(ja, jb) {
			if len(ja) > 80 || len(jb) > 80 {
				out = append(out, k+": differs")
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s in the run, %s now", k, ja, jb))
		}
	}
	return out
}

// stepsLine is a line of the steps file: the settings first, then one step a line.
type stepsLine struct {
	Settings *Settings `json:"settings,omitempty"`
	Step     *Step     `json:"step,omitempty"`
}

// ReadSteps reads the steps file at path: its settings and the steps it holds, in order. A
// missing file is fs.ErrNotExist; a last line cut short (a run killed while writing it) is
// ignored.
func ReadSteps(path string) (Settings, []Step, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, nil, err
	}
	var set *Settings
	var steps []Step
	lines := bytes.Split(raw, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var sl stepsLine
		if err := json.Unmarshal(l, &sl); err != nil {
			if i == len(lines)-1 {
				break // cut short
			}
			return Settings{}, nil, fmt.Errorf("%s line %d: %v", path, i+1, err)
		}
		switch {
		case sl.Settings != nil && set == nil:
			set = sl.Settings
		case sl.Step != nil && set != nil:
			steps = append(steps, *sl.Step)
		default:
			return Settings{}, nil, fmt.Errorf("%s line %d: expected %s", path, i+1, map[bool]string{true: "a step", false: "the settings"}[set != nil])
		}
	}
	if set == nil {
		return Settings{}, nil, fmt.Errorf("%s: no settings line", path)
	}
	return *set, steps, nil
}

// StepsWriter appends steps to a steps file.
type StepsWriter struct{ path string }

// CreateSteps starts the steps file at path with the settings s, or, when it exists with the
// same settings, continues it (Differences lists why not otherwise). It returns the steps the
// file holds.
func CreateSteps(path string, s Settings) (*StepsWriter, []Step, error) {
	old, steps, err := ReadSteps(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		line, _ := json.Marshal(stepsLine{Settings: &s})
		if err := os.WriteFile(path, append(line, '\n'), 0o644); err != nil {
			return nil, nil, err
		}
		return &StepsWriter{path}, nil, nil
	case err != nil:
		return nil, nil, err
	}
	if d := old.Differences(s); len(d) > 0 {
		return nil, nil, &SettingsError{Path: path, Lines: d}
	}
	return &StepsWriter{path}, steps, nil
}

// SettingsError says that a steps file holds a run with other settings.
type SettingsError struct {
	Path  string
	Lines []string
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("%s holds a population fit with other settings or data: %v", e.Path, e.Lines)
}

// Append writes step as the file's next line and syncs it to disk.
func (w *StepsWriter) Append(step Step) error {
	f, err := os.OpenFile(w.path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	line, err := json.Marshal(stepsLine{Step: &step})
	if err != nil {
		f.Close()
		return err
	}
	bw := bufio.NewWriter(f)
	bw.Write(append(line, '\n'))
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SubjectEstimate is one subject in the report: its independent estimate and the population
// fit's (shrunk) one, each in fitting scale with its standard error.
type SubjectEstimate struct {
	Subject       string             `json:"subject"`
	Independent   map[string]float64 `json:"independent"`
	IndependentSE map[string]float64 `json:"independent_se,omitempty"`
	Shrunk        map[string]float64 `json:"shrunk"`
	ShrunkSE      map[string]float64 `json:"shrunk_se"`
}

// Report is the result of a population fit.
type Report struct {
	Settings    Settings          `json:"settings"`
	Converged   bool              `json:"converged"`
	Steps       int               `json:"em_steps"`
	LogMarginal float64           `json:"log_marginal"`
	Effects     []Effect          `json:"effects"`
	Spreads     []Spread          `json:"spreads"`
	Excluded    map[string]string `json:"excluded,omitempty"` // subjects left out, and why
	Subjects    []SubjectEstimate `json:"subjects"`
	Evaluations int               `json:"evaluations"`
	Seconds     float64           `json:"seconds"`
}

// WriteJSON writes the report to path (mode 0644).
func (r *Report) WriteJSON(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// WriteEffectsCSV writes the effects and the spreads as a table to path: kind (effect or
// sd), param, term, estimate, se, ci95_lo, ci95_hi, p, df.
func (r *Report) WriteEffectsCSV(path string) error {
	rows := [][]string{{"kind", "param", "term", "estimate", "se", "ci95_lo", "ci95_hi", "p", "df"}}
	for _, e := range r.Effects {
		rows = append(rows, []string{"effect", e.Param, e.Term, num(e.Estimate), num(e.SE), num(e.CI95[0]), num(e.CI95[1]), pnum(e.P), strconv.Itoa(e.DF)})
	}
	for _, s := range r.Spreads {
		rows = append(rows, []string{"sd", s.Param, "", num(s.SD), num(s.SE), num(s.CI95[0]), num(s.CI95[1]), "", ""})
	}
	return writeCSV(path, rows)
}

// WriteSubjectsCSV writes every subject's independent and shrunk estimates to path, each
// parameter in its fitting scale with its standard error and 95 % interval in natural units.
func (r *Report) WriteSubjectsCSV(path string, spec models.Spec) error {
	header := []string{"subject"}
	for _, name := range r.Settings.Fitted {
		for _, w := range []string{"independent", "shrunk"} {
			header = append(header, name+"_"+w+"_scaled", name+"_"+w+"_se", name+"_"+w+"_ci95_lo", name+"_"+w+"_ci95_hi")
		}
	}
	rows := [][]string{header}
	for _, s := range r.Subjects {
		row := []string{s.Subject}
		for _, name := range r.Settings.Fitted {
			p, _ := spec.Param(name)
			for _, est := range [][2]map[string]float64{{s.Independent, s.IndependentSE}, {s.Shrunk, s.ShrunkSE}} {
				v, se := est[0][name], est[1][name]
				lo, hi := "", ""
				if se > 0 {
					lo, hi = num(p.FromScale(v-1.959963984540054*se)), num(p.FromScale(v+1.959963984540054*se))
				}
				row = append(row, num(v), numOr(se, se > 0), lo, hi)
			}
		}
		rows = append(rows, row)
	}
	return writeCSV(path, rows)
}

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func pnum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

func numOr(v float64, ok bool) string {
	if !ok {
		return ""
	}
	return num(v)
}

func writeCSV(path string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// ReadReport reads the report a population fit wrote to path (population.json).
func ReadReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &r, nil
}

// WriteDraws writes the hierarchical draws [chain][draw][β…, σ…, θ…] to path as CSV: chain,
// draw, then every effect (param:term), spread (param:sd) and subject's parameter
// (subject:param), in fitting scale.
func WriteDraws(path string, draws [][][]float64, names, columns, subjects []string) error {
	header := []string{"chain", "draw"}
	for _, n := range names {
		for _, c := range columns {
			header = append(header, n+":"+c)
		}
	}
	for _, n := range names {
		header = append(header, n+":sd")
	}
	for _, s := range subjects {
		for _, n := range names {
			header = append(header, s+":"+n)
		}
	}
	rows := [][]string{header}
	for c, ch := range draws {
		for d, row := range ch {
			r := []string{strconv.Itoa(c + 1), strconv.Itoa(d + 1)}
			for _, v := range row {
				r = append(r, strconv.FormatFloat(v, 'g', 8, 64))
			}
			rows = append(rows, r)
		}
	}
	return writeCSV(path, rows)
}
