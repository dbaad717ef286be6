package fit

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/models"
)

// Run is what produced a record: the task, the likelihood and the fit's settings. Planner,
// Linearize, Seed and MaxIter were added later: in a record written by an earlier version they
// are absent (zero, Seed nil) and unknown.
type Run struct {
	Task      string `json:"task"`
	Method    string `json:"method"`
	Observe   string `json:"observe"`
	Planner   string `json:"planner,omitempty"`
	Linearize string `json:"linearize,omitempty"`
	// Likelihood lists the likelihood's options that differ from its defaults, as the flags
	// that set them ("first-order-noise", "ignore-gaps", "nominal-filter", "belief-prior=1"); empty for none.
	Likelihood string  `json:"likelihood,omitempty"`
	Seed       *uint64 `json:"seed,omitempty"`
	MaxIter    int     `json:"max_iter,omitempty"`
	// StdErrs is the Options.Uncertainty asked for when it is not the default (robust); for
	// the bootstrap with its data sets and restarts ("bootstrap 20x5").
	StdErrs string `json:"stderrs,omitempty"`
	// CheckDraws is Options.CheckDraws (absent in records of earlier versions).
	CheckDraws *int `json:"check_draws,omitempty"`
	// Start names the results file whose estimates began each subject's first restart
	// (Options.StartsFrom); empty for random starts only.
	Start string `json:"start,omitempty"`
	// TaskDigest identifies the task's definition (models.Digest: "builtin:NAME", or the
	// digest of a task file's content) and Version the nioc-gpu that wrote the record;
	// both absent in records of earlier versions.
	TaskDigest string `json:"task_digest,omitempty"`
	Version    string `json:"version,omitempty"`
}

// Record is one line of a results file (JSON Lines): a subject's fit, with what produced it.
//
// Params holds the estimates of the fitted parameters (those named in Fitted) in natural
// units, and Fixed the values in natural units at which the other parameters were held (given
// with --fix, or the task's defaults): not estimates. The likelihood was maximized over Params
// with Fixed held; Values returns both together. StdErr and CI95 are in each fitted
// parameter's fitting scale, which Scale names ("log10" or "linear"); CI95Natural holds the
// same intervals with their ends mapped to natural units.
//
// Records written by earlier versions are read as well (UnmarshalJSON): their "stderr" and
// "ci95" as StdErr and CI95, the parameters of their "params" that are not in "fitted" as
// Fixed, and CI95Natural from CI95 and Scale.
type Record struct {
	Subject string `json:"subject"`
	// DataDigest identifies the subject's data the fit saw (data.Digest of its trials);
	// absent in records of earlier versions.
	DataDigest    string                `json:"data_digest,omitempty"`
	Run                                 // its fields are the record's own in JSON
	Params        map[string]float64    `json:"params,omitempty"`
	Fixed         map[string]float64    `json:"fixed,omitempty"`
	Fitted        []string              `json:"fitted,omitempty"`
	Scale         map[string]string     `json:"scale,omitempty"`
	LogLik        *float64              `json:"loglik,omitempty"`
	StdErr        map[string]float64    `json:"stderr_scaled,omitempty"`
	CI95          map[string][2]float64 `json:"ci95_scaled,omitempty"`
	CI95Natural   map[string][2]float64 `json:"ci95_natural,omitempty"`
	HessianPD     bool                  `json:"hessian_pd"`
	Uncertainty   string                `json:"uncertainty,omitempty"` // what StdErr is: "robust" or "hessian" (Result.Uncertainty)
	StdErrHessian map[string]float64    `json:"stderr_hessian_scaled,omitempty"`
	AtBound       []string              `json:"at_bound,omitempty"`
	AIC           *float64              `json:"aic,omitempty"`
	BIC           *float64              `json:"bic,omitempty"`
	// LogEvidence is the Laplace approximation of the log model evidence (Result.LogEvidence),
	// absent where the Hessian is not positive definite and in records of earlier versions.
	LogEvidence    *float64   `json:"log_evidence,omitempty"`
	RestartsAtBest int        `json:"restarts_at_best"`
	Restarts       int        `json:"restarts"`
	Evaluations    int        `json:"evaluations"`
	Converged      bool       `json:"converged"`
	Status         string     `json:"status,omitempty"`
	Trials         int        `json:"trials"`
	Seconds        float64    `json:"seconds"`
	Error          string     `json:"error,omitempty"`
	Check          *Check     `json:"check,omitempty"`           // goodness of fit (Result.Check)
	CheckError     string     `json:"check_error,omitempty"`     // why a check asked for did not run
	Bootstrap      *Bootstrap `json:"bootstrap,omitempty"`       // the parametric bootstrap (Result.Bootstrap)
	Optima         []Optimum  `json:"optima,omitempty"`          // other optima the restarts found (otherOptima)
	BootstrapError string     `json:"bootstrap_error,omitempty"` // why a bootstrap asked for did not run
	RobustError    string     `json:"robust_error,omitempty"`    // why the robust intervals asked for fell back to the Hessian's (Result.RobustErr)
	// Profiles: the one-sided profile intervals of the parameters on a bound (Result.Profiles).
	Profiles map[string]Profile `json:"profile,omitempty"`
	// Identified says whether the data determine the estimate (Result.Identified), and
	// Warnings why not, in words a user acts on; Identified is absent in records of earlier
	// versions.
	Identified *bool    `json:"identified,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// NewRecord returns the record of a result of run; scale names each parameter's fitting scale.
// The parameters of r that were not fitted become the record's Fixed.
func NewRecord(r Result, run Run, scale map[string]string) Record {
	rec := Record{Subject: r.Subject, Run: run,
		Fitted: r.Fitted, StdErr: r.StdErr, CI95: r.CI95, CI95Natural: r.CI95Natural, HessianPD: r.HessianPD, AtBound: r.AtBound,
		Uncertainty: r.Uncertainty, StdErrHessian: r.StdErrHessian,
		RestartsAtBest: r.RestartsAtBest, Restarts: r.Restarts, Evaluations: r.Evaluations,
		Converged: r.Converged, Status: r.Status, Trials: r.Trials, Seconds: math.Round(r.Seconds*1000) / 1000,
		Error: r.Err, Check: r.Check, CheckError: r.CheckErr, Bootstrap: r.Bootstrap, BootstrapError: r.BootstrapErr, RobustError: r.RobustErr,
		DataDigest: r.DataDigest, Warnings: r.Warnings, LogEvidence: r.LogEvidence, Profiles: r.Profiles}
	if r.Err == "" {
		rec.Identified = &r.Identified
		rec.Optima = otherOptima(r)
	}
	if r.Err == "" || r.Params != nil {
		rec.LogLik, rec.AIC, rec.BIC = ptr(r.LogLik), ptr(r.AIC), ptr(r.BIC)
	}
	if r.Params != nil {
		rec.Params, rec.Fixed = splitFixed(r.Params, r.Fitted)
		rec.Scale = map[string]string{}
		for _, name := range r.Fitted {
			rec.Scale[name] = scale[name]
		}
	}
	return rec
}

// splitFixed returns the values of the fitted parameters and those of the others (nil if
// there are none).
func splitFixed(values map[string]float64, fitted []string) (est, fixed map[string]float64) {
	est = map[string]float64{}
	for name, v := range values {
		if slices.Contains(fitted, name) {
			est[name] = v
			continue
		}
		if fixed == nil {
			fixed = map[string]float64{}
		}
		fixed[name] = v
	}
	return est, fixed
}

// Values returns the value in natural units of every parameter of the record, the estimates
// and the fixed values together; nil if it has neither.
func (r Record) Values() map[string]float64 {
	if r.Params == nil && r.Fixed == nil {
		return nil
	}
	out := make(map[string]float64, len(r.Params)+len(r.Fixed))
	maps.Copy(out, r.Fixed)
	maps.Copy(out, r.Params)
	return out
}

// Scaled returns Values in the fitting scales of spec's parameters (log10 or linear), for the
// parameters of spec that the record holds; nil for a record without values.
func (r Record) Scaled(spec models.Spec) map[string]float64 {
	values := r.Values()
	if values == nil {
		return nil
	}
	out := map[string]float64{}
	for _, p := range spec.Params {
		if v, ok := values[p.Name]; ok {
			out[p.Name] = p.ToScale(v)
		}
	}
	return out
}

// UnmarshalJSON reads a record, also one written by an earlier version (see Record).
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record // without this method
	var v struct {
		plain
		OldStdErr map[string]float64    `json:"stderr"`
		OldCI95   map[string][2]float64 `json:"ci95"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Record(v.plain)
	if r.StdErr == nil {
		r.StdErr = v.OldStdErr
	}
	if r.CI95 == nil {
		r.CI95 = v.OldCI95
	}
	if r.Fixed == nil && len(r.Fitted) > 0 && len(r.Params) > len(r.Fitted) {
		r.Params, r.Fixed = splitFixed(r.Params, r.Fitted)
	}
	if r.CI95Natural == nil && r.CI95 != nil {
		r.CI95Natural = map[string][2]float64{}
		for name, ci := range r.CI95 {
			switch r.Scale[name] {
			case models.Log10Scale.String():
				if hi := math.Pow(10, ci[1]); !math.IsInf(hi, 0) { // as Fitter writes it
					r.CI95Natural[name] = [2]float64{math.Pow(10, ci[0]), hi}
				}
			case models.LinearScale.String():
				r.CI95Natural[name] = ci
			}
		}
	}
	return nil
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
	diff("likelihood options", orNone(rec.Likelihood), orNone(run.Likelihood))
	diff("restarts", strconv.Itoa(rec.Restarts), strconv.Itoa(restarts))
	if rec.Seed != nil && run.Seed != nil {
		diff("seed", strconv.FormatUint(*rec.Seed, 10), strconv.FormatUint(*run.Seed, 10))
	}
	if rec.MaxIter != 0 {
		diff("max-iter", strconv.Itoa(rec.MaxIter), strconv.Itoa(run.MaxIter))
	}
	diff("start", cmp.Or(rec.Start, "random points only"), cmp.Or(run.Start, "random points only"))
	if rec.Uncertainty != "" || rec.StdErrs != "" { // records before robust errors had Hessian ones
		diff("uncertainty", cmp.Or(rec.StdErrs, UncertaintyRobust), cmp.Or(run.StdErrs, UncertaintyRobust))
	}
	if rec.CheckDraws != nil && run.CheckDraws != nil {
		diff("check-draws", strconv.Itoa(*rec.CheckDraws), strconv.Itoa(*run.CheckDraws))
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ",")
	}
	diff("fitted parameters", list(rec.Fitted), list(fitted))
	known("task definition", rec.TaskDigest, run.TaskDigest)
	if versioned(rec.Version) && versioned(run.Version) {
		diff("nioc-gpu version", rec.Version, run.Version)
	}
	return out
}

// versioned reports whether v names a version of nioc-gpu that can be compared: not absent
// (records of earlier versions) and not "devel" (a build without version information, such
// as a test binary).
func versioned(v string) bool { return v != "" && v != "devel" }

func orNone(s string) string {
	if s == "" {
		return "defaults"
	}
	return s
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

// WriteCSV writes records as a table: subject, task, method, observe, loglik, aic, bic,
// restarts_at_best, restarts, evaluations, converged, hessian_pd, uncertainty, seconds, trials, error, then
// for each parameter p of params:
//
//   - p: its estimate in natural units, empty if it was not fitted;
//   - p_fixed: the value it was held at in natural units if it was not fitted, else empty;
//   - p_scale: the fitting scale of an estimate (log10 or linear);
//   - p_stderr_scaled, p_ci95_scaled_lo, p_ci95_scaled_hi: its standard error and 95 %
//     interval in that scale;
//   - p_ci95_natural_lo, p_ci95_natural_hi: the interval in natural units.
func WriteCSV(path string, recs []Record, params []string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{"subject", "task", "method", "observe", "loglik", "aic", "bic", "log_evidence", "restarts_at_best", "restarts",
		"evaluations", "converged", "hessian_pd", "uncertainty", "seconds", "trials", "error"}
	for _, p := range params {
		header = append(header, p, p+"_fixed", p+"_scale", p+"_stderr_scaled", p+"_ci95_scaled_lo", p+"_ci95_scaled_hi",
			p+"_ci95_natural_lo", p+"_ci95_natural_hi")
	}
	_ = w.Write(header)
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	}
	for _, r := range recs {
		row := []string{r.Subject, r.Task, r.Method, r.Observe, num(r.LogLik), num(r.AIC), num(r.BIC), num(r.LogEvidence),
			strconv.Itoa(r.RestartsAtBest), strconv.Itoa(r.Restarts), strconv.Itoa(r.Evaluations),
			strconv.FormatBool(r.Converged), strconv.FormatBool(r.HessianPD), r.Uncertainty,
			strconv.FormatFloat(r.Seconds, 'g', -1, 64), strconv.Itoa(r.Trials), r.Error}
		cell := func(x float64, ok bool) string {
			if !ok {
				return ""
			}
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		for _, p := range params {
			v, ok := r.Params[p]
			fixed, isFixed := r.Fixed[p]
			se, hasSE := r.StdErr[p]
			ci, hasCI := r.CI95[p]
			nat, hasNat := r.CI95Natural[p]
			row = append(row, cell(v, ok), cell(fixed, isFixed), r.Scale[p], cell(se, hasSE), cell(ci[0], hasCI), cell(ci[1], hasCI),
				cell(nat[0], hasNat), cell(nat[1], hasNat))
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

// ParamNames returns order followed by the other parameter names, estimated or fixed, that
// appear in records, sorted.
func ParamNames(recs []Record, order []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, n := range order {
		seen[n] = true
		names = append(names, n)
	}
	var extra []string
	for _, r := range recs {
		for n := range r.Values() {
			if !seen[n] {
				seen[n] = true
				extra = append(extra, n)
			}
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

// Merge reads the results files at paths (shards of one run) and returns their records in
// order, a subject that is in several files once. It refuses files whose records come from
// different runs (another task or task definition, method, settings, fitted parameters or
// version: RunDifferences against the first record) and a subject whose records differ in
// more than their timing, naming the files and the differences.
func Merge(paths []string) ([]Record, error) {
	var out []Record
	var first Record
	firstFile := ""
	where := map[string]string{}
	bySubject := map[string]Record{}
	for _, p := range paths {
		recs, _, err := ReadRecords(p)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if firstFile == "" {
				first, firstFile = r, p
			} else if diff := RunDifferences(r, first.Run, first.Restarts, first.Fitted); len(diff) > 0 {
				return nil, fmt.Errorf("%s (subject %s) and %s (subject %s) hold results of different runs; merge the shards of one run only:\n  %s",
					firstFile, first.Subject, p, r.Subject, strings.Join(swapSides(diff), "\n  "))
			}
			if prev, ok := bySubject[r.Subject]; ok {
				// Re-runs of a subject with the same settings differ only in their timing.
				p2, r2 := prev, r
				p2.Seconds, r2.Seconds = 0, 0
				a, _ := json.Marshal(p2)
				b, _ := json.Marshal(r2)
				if !bytes.Equal(a, b) {
					return nil, fmt.Errorf("subject %s (%s, %s) is in both %s and %s with different results", r.Subject, r.Task, r.Method, where[r.Subject], p)
				}
				continue
			}
			bySubject[r.Subject], where[r.Subject] = r, p
			out = append(out, r)
		}
	}
	return out, nil
}

// swapSides rewrites RunDifferences' lines, which compare a record ("in the file") with a
// run ("now"), for two files: the second file's value, then the first's.
func swapSides(diff []string) []string {
	out := make([]string, len(diff))
	for i, d := range diff {
		d = strings.Replace(d, " in the file, ", " in the second file, ", 1)
		out[i] = strings.TrimSuffix(d, " now") + " in the first"
	}
	return out
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

// EstimatesOf reads a results file of Fit (JSON Lines, see Record) and returns, for each of
// the given subjects, its first successful record. The error names the file and says what is
// wrong: it cannot be read, holds no results, holds results of a task other than task, or has
// no successful fit of some subjects (all named).
func EstimatesOf(path, task string, subjects []string) (map[string]Record, error) {
	recs, _, err := ReadRecords(path)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s holds no fit results", path)
	}
	byID := map[string]Record{}
	for _, r := range recs {
		if r.Task != task {
			return nil, fmt.Errorf("%s holds fits of task %s (subject %s), not of task %s", path, r.Task, r.Subject, task)
		}
		if old, ok := byID[r.Subject]; !ok || old.Params == nil {
			byID[r.Subject] = r
		}
	}
	out := map[string]Record{}
	var missing []string
	for _, id := range subjects {
		r, ok := byID[id]
		if !ok || r.Params == nil {
			missing = append(missing, id)
			continue
		}
		out[id] = r
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s has no successful fit of subject(s) %s", path, strings.Join(missing, ", "))
	}
	return out, nil
}
