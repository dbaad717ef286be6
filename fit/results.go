package fit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Run is what produced a record: the task, the likelihood and the fit's settings. Planner,
// Linearize, Seed and MaxIter were added later: in a record written by an earlier version they
// are absent (zero, Seed nil) and unknown.
type Run struct {
	Task      string  `json:"task"`
	Method    string  `json:"method"`
	Observe   string  `json:"observe"`
	Planner   string  `json:"planner,omitempty"`
	Linearize string  `json:"linearize,omitempty"`
	Seed      *uint64 `json:"seed,omitempty"`
	MaxIter   int     `json:"max_iter,omitempty"`
}

// Record is one line of a results file (JSON Lines): a subject's fit, with what produced it.
type Record struct {
	Subject        string                `json:"subject"`
	Run                                  // its fields are the record's own in JSON
	Params         map[string]float64    `json:"params,omitempty"`
	Fitted         []string              `json:"fitted,omitempty"`
	Scale          map[string]string     `json:"scale,omitempty"`
	LogLik         *float64              `json:"loglik,omitempty"`
	StdErr         map[string]float64    `json:"stderr,omitempty"`
	CI95           map[string][2]float64 `json:"ci95,omitempty"`
	HessianPD      bool                  `json:"hessian_pd"`
	AtBound        []string              `json:"at_bound,omitempty"`
	AIC            *float64              `json:"aic,omitempty"`
	BIC            *float64              `json:"bic,omitempty"`
	RestartsAtBest int                   `json:"restarts_at_best"`
	Restarts       int                   `json:"restarts"`
	Evaluations    int                   `json:"evaluations"`
	Converged      bool                  `json:"converged"`
	Status         string                `json:"status,omitempty"`
	Trials         int                   `json:"trials"`
	Seconds        float64               `json:"seconds"`
	Error          string                `json:"error,omitempty"`
}

// NewRecord returns the record of a result of run.
func NewRecord(r Result, run Run, scale map[string]string) Record {
	rec := Record{Subject: r.Subject, Run: run, Params: r.Params,
		Fitted: r.Fitted, StdErr: r.StdErr, CI95: r.CI95, HessianPD: r.HessianPD, AtBound: r.AtBound,
		RestartsAtBest: r.RestartsAtBest, Restarts: r.Restarts, Evaluations: r.Evaluations,
		Converged: r.Converged, Status: r.Status, Trials: r.Trials, Seconds: math.Round(r.Seconds*1000) / 1000,
		Error: r.Err}
	if r.Err == "" || r.Params != nil {
		rec.LogLik, rec.AIC, rec.BIC = ptr(r.LogLik), ptr(r.AIC), ptr(r.BIC)
	}
	if r.Params != nil {
		rec.Scale = map[string]string{}
		for _, name := range r.Fitted {
			rec.Scale[name] = scale[name]
		}
	}
	return rec
}

// RunDifferences lists how the run that wrote rec differs from run, which fits the parameters
// fitted with restarts restarts each: one "setting: value in the file, value now" per
// difference, nil if there is none. Settings rec does not hold (a record of an earlier
// version) are not compared.
func RunDifferences(rec Record, run Run, restarts int, fitted []string) []string {
	var out []string
	diff := func(name, was, now string) {
		if was != now {
			out = append(out, fmt.Sprintf("%s: %s in the file, %s now", name, was, now))
		}
	}
	known := func(name, was, now string) { // absent in records of earlier versions
		if was != "" {
			diff(name, was, now)
		}
	}
	diff("task", rec.Task, run.Task)
	diff("method", rec.Method, run.Method)
	diff("observe", rec.Observe, run.Observe)
	known("planner", rec.Planner, run.Planner)
	known("linearize", rec.Linearize, run.Linearize)
	diff("restarts", strconv.Itoa(rec.Restarts), strconv.Itoa(restarts))
	if rec.Seed != nil && run.Seed != nil {
		diff("seed", strconv.FormatUint(*rec.Seed, 10), strconv.FormatUint(*run.Seed, 10))
	}
	if rec.MaxIter != 0 {
		diff("max-iter", strconv.Itoa(rec.MaxIter), strconv.Itoa(run.MaxIter))
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ",")
	}
	diff("fitted parameters", list(rec.Fitted), list(fitted))
	return out
}

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// ReadRecords reads a results file. A last line without its newline (an interrupted write)
// is ignored and its offset returned as valid, so that the caller may truncate it; any other
// malformed line is an error naming the file and line.
func ReadRecords(path string) (recs []Record, valid int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	line := 0
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			return recs, int64(off), nil // truncated last line
		}
		line++
		text := bytes.TrimSpace(b[off : off+end])
		if len(text) > 0 {
			var r Record
			if err := json.Unmarshal(text, &r); err != nil || r.Subject == "" {
				if err == nil {
					err = fmt.Errorf("no subject")
				}
				return nil, 0, fmt.Errorf("%s line %d: not a results record: %v", path, line, err)
			}
			recs = append(recs, r)
		}
		off += end + 1
	}
	return recs, int64(len(b)), nil
}

// Writer appends records to a results file, one JSON line each, flushed to disk as soon as
// written, so that an interrupted run loses nothing that was reported as done.
type Writer struct {
	f *os.File
}

// OpenWriter opens path for appending, first truncating it to size valid (see ReadRecords);
// it creates the file if needed.
func OpenWriter(path string, valid int64) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(valid); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(valid, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends one record as a single write and syncs it.
func (w *Writer) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return w.f.Sync()
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// WriteCSV writes records as a table: subject, loglik, aic, bic, restarts_at_best,
// evaluations, converged, seconds, trials, error, then for each parameter its value (natural
// units), stderr and ci95_lo/ci95_hi (fitting scale).
func WriteCSV(path string, recs []Record, params []string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{"subject", "task", "method", "observe", "loglik", "aic", "bic", "restarts_at_best", "restarts",
		"evaluations", "converged", "hessian_pd", "seconds", "trials", "error"}
	for _, p := range params {
		header = append(header, p, p+"_scale", p+"_stderr", p+"_ci95_lo", p+"_ci95_hi")
	}
	_ = w.Write(header)
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	}
	for _, r := range recs {
		row := []string{r.Subject, r.Task, r.Method, r.Observe, num(r.LogLik), num(r.AIC), num(r.BIC),
			strconv.Itoa(r.RestartsAtBest), strconv.Itoa(r.Restarts), strconv.Itoa(r.Evaluations),
			strconv.FormatBool(r.Converged), strconv.FormatBool(r.HessianPD),
			strconv.FormatFloat(r.Seconds, 'g', -1, 64), strconv.Itoa(r.Trials), r.Error}
		for _, p := range params {
			v, ok := r.Params[p]
			cell := func(x float64, ok bool) string {
				if !ok {
					return ""
				}
				return strconv.FormatFloat(x, 'g', -1, 64)
			}
			se, hasSE := r.StdErr[p]
			ci, hasCI := r.CI95[p]
			row = append(row, cell(v, ok), r.Scale[p], cell(se, hasSE), cell(ci[0], hasCI), cell(ci[1], hasCI))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// CSVPath returns the CSV file that accompanies a results file: the same name with .csv.
func CSVPath(jsonl string) string {
	return strings.TrimSuffix(strings.TrimSuffix(jsonl, ".jsonl"), ".json") + ".csv"
}

// ParamNames returns the parameter names appearing in records, in the order of the first
// record that has them and then alphabetically.
func ParamNames(recs []Record, order []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, n := range order {
		seen[n] = true
		names = append(names, n)
	}
	var extra []string
	for _, r := range recs {
		for n := range r.Params {
			if !seen[n] {
				seen[n] = true
				extra = append(extra, n)
			}
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

// Merge combines the records of several results files. A subject that appears in more than
// one file with different fits is an error; duplicates that differ only in their run time
// are kept once.
func Merge(paths []string) ([]Record, error) {
	var out []Record
	where := map[string]string{}
	byID := map[string]Record{}
	for _, p := range paths {
		recs, _, err := ReadRecords(p)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			key := r.Task + "\x00" + r.Method + "\x00" + r.Observe + "\x00" + r.Subject
			if prev, ok := byID[key]; ok {
				// Re-runs of a subject with the same settings differ only in their timing.
				p2, r2 := prev, r
				p2.Seconds, r2.Seconds = 0, 0
				a, _ := json.Marshal(p2)
				b, _ := json.Marshal(r2)
				if !bytes.Equal(a, b) {
					return nil, fmt.Errorf("subject %s (%s, %s) is in both %s and %s with different results", r.Subject, r.Task, r.Method, where[key], p)
				}
				continue
			}
			byID[key], where[key] = r, p
			out = append(out, r)
		}
	}
	return out, nil
}

// Median returns the median of the values that are not NaN (NaN if there are none).
func Median(v []float64) float64 {
	s := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return 0.5 * (s[len(s)/2-1] + s[len(s)/2])
}
