package ioc

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/internal/atomicfile"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Names of the files of an output directory.
const (
	DrawsFile       = "draws.csv"
	SummaryFile     = "summary.csv"
	SummaryJSONFile = "summary.json"
)

// Files returns the paths of the output files in dir.
func Files(dir string) []string {
	return []string{filepath.Join(dir, DrawsFile), filepath.Join(dir, SummaryFile), filepath.Join(dir, SummaryJSONFile)}
}

// Run is what produced an output directory; a resumed run must have the same.
type Run struct {
	Task            string             `json:"task"`
	Method          string             `json:"method"`
	Observe         string             `json:"observe"`
	Planner         string             `json:"planner"`
	Linearize       string             `json:"linearize"`
	Temperature     string             `json:"temperature"` // "fit" (sampled) or the value held
	FirstOrderNoise bool               `json:"first_order_noise,omitempty"`
	IgnoreGaps      bool               `json:"ignore_gaps,omitempty"`
	NominalFilter   bool               `json:"nominal_filter,omitempty"`
	BeliefPrior     float64            `json:"belief_prior,omitempty"` // variance of the initial belief around x_0
	Jitter          float64            `json:"jitter,omitempty"`       // when not the task's
	Chains          int                `json:"chains"`
	Warmup          int                `json:"warmup"`
	Draws           int                `json:"draws"`
	Seed            uint64             `json:"seed"`
	MaxDepth        int                `json:"max_depth"`
	TargetAccept    float64            `json:"target_accept"`
	Metric          string             `json:"metric"`               // "dense" or "diag"
	CrossChain      bool               `json:"cross_chain"`          // the metric estimated from all of a subject's chains' draws (posterior.Options.CrossChain)
	MaxWarmup       int                `json:"max_warmup,omitempty"` // with cross_chain, the warm-up's limit while the chains disagree
	Sampled         []string           `json:"sampled"`
	Held            map[string]float64 `json:"held,omitempty"`   // the other parameters, natural units
	Priors          map[string]string  `json:"priors,omitempty"` // fitting scale; absent: uniform
	Init            string             `json:"init,omitempty"`   // where the chains started: optimize, dispersed or a fit's results file
	Adjust          string             `json:"adjust"`           // the likelihood's calibration: curvature, bootstrap, none, or auto where it is each subject's (Sampler.adjust)
	// TaskDigest identifies the task's definition (models.Digest) and Version the nioc-gpu
	// that wrote the summary; both absent in summaries of earlier versions, and then not
	// compared by Differences.
	TaskDigest string `json:"task_digest,omitempty"`
	Version    string `json:"version,omitempty"`
}

// adjust returns the adjustment that every subject of the sampler gets: Options.Adjust, or
// for AdjustAuto the one it makes when all estimates of Options.Init (none without it) are
// alike; AdjustAuto where some hold a bootstrap and others do not.
func (s *Sampler) adjust() string {
	if s.opts.Adjust != AdjustAuto {
		return s.opts.Adjust
	}
	with := 0
	for _, est := range s.opts.Init {
		if est.Bias != nil {
			with++
		}
	}
	switch with {
	case 0:
		return AdjustCurvature
	case len(s.opts.Init):
		return AdjustBootstrap
	}
	return AdjustAuto
}

// Run returns what the sampler's runs record, with init where the chains start (the Start or
// the file of Options.Init).
func (s *Sampler) Run(init string) Run {
	o := s.e.Options()
	r := Run{Task: s.sel.Spec().Name, Method: string(o.Method), Observe: string(o.Observe), Planner: string(o.Planner),
		Linearize: string(o.Linearize), FirstOrderNoise: o.FirstOrderNoise, Chains: s.opts.Chains, Warmup: s.opts.Warmup,
		Draws: s.opts.Draws, Seed: s.opts.Seed, MaxDepth: s.opts.MaxDepth, TargetAccept: s.opts.TargetAccept,
		Sampled: s.sel.Names(), Init: init, Metric: "diag", CrossChain: s.opts.CrossChain, MaxWarmup: s.opts.MaxWarmup, Adjust: s.adjust(), TaskDigest: s.e.TaskDigest()}
	if s.opts.DenseMetric {
		r.Metric = "dense"
	}
	r.IgnoreGaps, r.NominalFilter = o.IgnoreGaps, o.NominalFilter
	if o.Jitter != likelihood.TaskJitter(s.e.Spec()) {
		r.Jitter = o.Jitter
	}
	if o.Prior != nil {
		r.BeliefPrior = o.Prior[0][0]
	}
	r.Temperature = strconv.FormatFloat(o.Temperature, 'g', -1, 64)
	if o.FitTemperature {
		r.Temperature = "fit"
	}
	natural := s.sel.Natural()
	for i, p := range s.sel.Spec().Params {
		if !slices.Contains(r.Sampled, p.Name) {
			if r.Held == nil {
				r.Held = map[string]float64{}
			}
			r.Held[p.Name] = natural[i]
		}
	}
	for name, p := range s.opts.Priors {
		if p.SD > 0 {
			if r.Priors == nil {
				r.Priors = map[string]string{}
			}
			r.Priors[name] = FormatPrior(p)
		}
	}
	return r
}

// Differences lists how r differs from now, one "setting: value in the file, value now" each.
func (r Run) Differences(now Run) []string {
	var out []string
	a, b := map[string]any{}, map[string]any{}
	ja, _ := json.Marshal(r)
	jb, _ := json.Marshal(now)
	_ = json.Unmarshal(ja, &a)
	_ = json.Unmarshal(jb, &b)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	show := func(v any) string {
		if v == nil {
			return "none"
		}
		s, _ := json.Marshal(v)
		return string(s)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if (k == "task_digest" || k == "version") && (a[k] == nil || b[k] == nil || a[k] == "devel" || b[k] == "devel") {
			continue // a summary of an earlier version, or a build without version information
		}
		if x, y := show(a[k]), show(b[k]); x != y {
			out = append(out, fmt.Sprintf("%s: %s in the file, %s now", k, x, y))
		}
	}
	return out
}

// Float is a number in summary.json: NaN and ±Inf are written as the strings "NaN", "+Inf",
// "-Inf".
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := strconv.ParseFloat(s, 64)
		*f = Float(v)
		return err
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = Float(v)
	return err
}

// ParamJSON is the summary of one parameter in summary.json, in natural units.
type ParamJSON struct {
	Scale   string `json:"scale"` // the fitting scale: log10 or linear
	Mean    Float  `json:"mean"`
	SD      Float  `json:"sd"`
	Q5      Float  `json:"q5"`
	Q50     Float  `json:"q50"`
	Q95     Float  `json:"q95"`
	RHat    Float  `json:"rhat"`
	ESSBulk Float  `json:"ess_bulk"`
	ESSTail Float  `json:"ess_tail"`
}

// SubjectJSON is one subject in summary.json.
type SubjectJSON struct {
	Subject            string               `json:"subject"`
	DataDigest         string               `json:"data_digest,omitempty"` // the subject's data (data.Digest); absent in summaries of earlier versions
	Trials             int                  `json:"trials"`
	Parameters         map[string]ParamJSON `json:"parameters,omitempty"`
	Divergences        int                  `json:"divergences"`
	TreeDepthSaturated int                  `json:"tree_depth_saturated"`
	EBFMI              []Float              `json:"ebfmi,omitempty"` // per chain
	// Adjustment is the likelihood sampled (Result.Adjustment) and AdjustmentSDRatio, per
	// parameter, the factor by which the adjustment widened it (Result.SDRatio).
	Adjustment        string           `json:"adjustment"`
	AdjustmentSDRatio map[string]Float `json:"adjustment_sd_ratio,omitempty"`
	StepSize          []Float          `json:"step_size,omitempty"` // per chain, after warm-up
	Warmup            int              `json:"warmup,omitempty"`    // warm-up iterations run, where more than the run's warmup (max_warmup)
	Seconds           float64          `json:"seconds"`             // of the run that sampled it
	SampledWith       int              `json:"sampled_with"`        // subjects in that run
	Warnings          []Warning        `json:"warnings,omitempty"`
	Error             string           `json:"error,omitempty"`
}

// SummaryJSON is the content of summary.json.
type SummaryJSON struct {
	Run      Run           `json:"run"`
	Subjects []SubjectJSON `json:"subjects"`
	// WithWarnings lists the subjects that have warnings.
	WithWarnings []string `json:"subjects_with_warnings"`
}

// Output writes the results of a run to a directory: draws.csv and summary.csv are appended
// to and synced after each batch of subjects, then summary.json is replaced (written to a
// temporary file and renamed), which makes the batch final: a resumed run keeps the rows of
// the subjects in summary.json only.
type Output struct {
	dir          string
	names        []string
	params       []models.Param // the sampled parameters
	sum          SummaryJSON
	draws, table *os.File
	// drawsStats are the sampler's statistics in draws.csv's rows: drawStats, or the
	// earlier ones where a run of an earlier version is resumed.
	drawsStats []string
}

// drawStats are the sampler's statistics of each draw, the last columns of draws.csv, as Stan
// names them less the trailing "__": lp__ (on the unconstrained scale, Jacobian included), then
// divergent__, treedepth__, stepsize__, then the Hamiltonian at the draw (energy__: the
// negative log posterior plus the kinetic energy of the draw's momentum), the mean Metropolis
// acceptance probability over the draw's trajectory (accept_stat__) and its leapfrog steps
// (n_leapfrog__). The last three came in a later version, after the others, so that readers
// of the earlier columns keep working.
var drawStats = []string{"log_posterior", "divergent", "tree_depth", "step_size", "energy", "accept_stat", "n_leapfrog"}

// earlierDrawStats are the statistics of draws.csv before energy, accept_stat and n_leapfrog:
// a run of such a version is resumed in its own layout.
var earlierDrawStats = drawStats[:4]

// Create starts the outputs of run in dir (which must exist), replacing any there; params are
// the sampled parameters (Sampler.Params), in the order of run.Sampled.
func Create(dir string, run Run, params []models.Param) (*Output, error) {
	if err := checkColumnNames(run.Sampled); err != nil {
		return nil, err
	}
	o := &Output{dir: dir, names: run.Sampled, params: params, sum: SummaryJSON{Run: run, Subjects: []SubjectJSON{}, WithWarnings: []string{}}}
	if err := o.open(nil); err != nil {
		return nil, err
	}
	return o, o.writeJSON()
}

// Resume continues the outputs of run in dir: the subjects in its summary.json are kept and
// listed by Done, rows of other subjects (an interrupted batch) are dropped, and temporary
// files of writes cut short are removed. Without a
// summary.json it is Create. A summary.json of a run with other settings is an error listing
// the differences.
func Resume(dir string, run Run, params []models.Param) (*Output, error) {
	if err := checkColumnNames(run.Sampled); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, SummaryJSONFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Create(dir, run, params)
	}
	if err != nil {
		return nil, err
	}
	o := &Output{dir: dir, names: run.Sampled, params: params}
	if err := json.Unmarshal(raw, &o.sum); err != nil {
		return nil, fmt.Errorf("%s: not a summary of `nioc-gpu sample`: %v", path, err)
	}
	if diff := o.sum.Run.Differences(run); len(diff) > 0 {
		return nil, fmt.Errorf("%s holds a run with other settings; resume it with its settings, or use --force or another --out:\n  %s",
			dir, strings.Join(diff, "\n  "))
	}
	o.sum.Run = run
	if _, err := atomicfile.RemoveStale(path); err != nil { // a summary write killed before its rename
		return nil, err
	}
	if o.sum.WithWarnings == nil {
		o.sum.WithWarnings = []string{}
	}
	keep := map[string]bool{}
	for _, s := range o.sum.Subjects {
		keep[s.Subject] = true
	}
	return o, o.open(keep)
}

// DataDifferences lists the subjects already in the output whose data differ from digests
// (data.Digest by subject) or are not among them, one line each; nil if none. Subjects of a
// summary of an earlier version, without digests, are not compared.
func (o *Output) DataDifferences(digests map[string]string) []string {
	var out []string
	for _, s := range o.sum.Subjects {
		if d := data.DigestDifference(s.Subject, s.DataDigest, digests); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Done returns the subjects already in the output, in the order they were written.
func (o *Output) Done() []string {
	out := make([]string, len(o.sum.Subjects))
	for i, s := range o.sum.Subjects {
		out[i] = s.Subject
	}
	return out
}

func (o *Output) drawsHeader(stats []string) []string {
	h := append([]string{"subject", "chain", "draw"}, o.names...)
	return append(h, stats...)
}

func (o *Output) tableHeader() []string {
	return []string{"subject", "parameter", "scale", "mean", "sd", "q5", "q50", "q95", "rhat", "ess_bulk", "ess_tail"}
}

// open opens both tables for appending: with keep nil, new files with their headers; else the
// existing files reduced to the rows of the subjects in keep. A draws.csv of an earlier
// version, without energy, accept_stat and n_leapfrog, keeps its layout: the rows added to it
// leave them out too.
func (o *Output) open(keep map[string]bool) error {
	var err error
	path := filepath.Join(o.dir, DrawsFile)
	o.drawsStats = drawStats
	if keep != nil && slices.Equal(readHeader(path), o.drawsHeader(earlierDrawStats)) {
		o.drawsStats = earlierDrawStats
	}
	if o.draws, err = openTable(path, o.drawsHeader(o.drawsStats), keep); err != nil {
		return err
	}
	if o.table, err = openTable(filepath.Join(o.dir, SummaryFile), o.tableHeader(), keep); err != nil {
		o.draws.Close()
		return err
	}
	return nil
}

// checkColumnNames refuses sampled parameters named as another column of draws.csv, which
// would make its header ambiguous.
func checkColumnNames(names []string) error {
	for _, n := range names {
		if slices.Contains(drawStats, n) || n == "subject" || n == "chain" || n == "draw" {
			return fmt.Errorf("parameter %q has the name of another column of %s (subject, chain, draw, the parameters, %s): rename it in the task file",
				n, DrawsFile, strings.Join(drawStats, ", "))
		}
	}
	return nil
}

// EarlierDrawsLayout reports whether draws.csv is a resumed one of an earlier version, without
// energy, accept_stat and n_leapfrog, whose layout the rows added to it keep.
func (o *Output) EarlierDrawsLayout() bool { return len(o.drawsStats) < len(drawStats) }

// readHeader returns the first record of the CSV file at path, nil if there is none.
func readHeader(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	h, _ := cr.Read()
	return h
}

// openTable opens the CSV file at path for appending. With keep nil, or if the file does not
// exist, it is created with header; else the rows of subjects (first column) not in keep are
// dropped, and a file with another header is an error. Temporary files that a killed run's
// writes of path left are removed.
func openTable(path string, header []string, keep map[string]bool) (*os.File, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(header)
	if keep != nil {
		f, err := os.Open(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && len(keep) > 0:
			return nil, fmt.Errorf("%s is missing, but %s lists subjects as done; use --force to start afresh", path, SummaryJSONFile)
		case err == nil:
			err = copyRows(w, f, header, keep)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: not a table of this run: %v", path, err)
			}
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	w.Flush()
	if _, err := atomicfile.RemoveStale(path); err != nil {
		return nil, err
	}
	if err := writeAtomic(path, buf.Bytes()); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}

// copyRows copies the rows of the subjects in keep from the CSV table r, whose header must be
// header, to w.
func copyRows(w *csv.Writer, r io.Reader, header []string, keep map[string]bool) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	got, err := cr.Read()
	if err != nil {
		return err
	}
	if !slices.Equal(got, header) {
		return fmt.Errorf("header %v, want %v", got, header)
	}
	for {
		rec, err := cr.Read()
		var pe *csv.ParseError
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &pe):
			// Rows cut off by an interruption, after every final row: their subjects are not
			// final and are sampled again.
			return nil
		case err != nil:
			return err
		}
		if keep[rec[0]] {
			_ = w.Write(rec)
		}
	}
}

// writeAtomic replaces the file at path by data (atomicfile.Write).
func writeAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Write appends the results of a batch of subjects and makes them final.
func (o *Output) Write(results []Result) error {
	var draws, table bytes.Buffer
	dw, tw := csv.NewWriter(&draws), csv.NewWriter(&table)
	for _, r := range results {
		sj := SubjectJSON{Subject: r.Subject, DataDigest: r.DataDigest, Trials: r.Trials, Divergences: r.Divergences,
			TreeDepthSaturated: r.TreeDepthSaturated, Seconds: math.Round(r.Seconds*1000) / 1000,
			SampledWith: r.Together, Warnings: r.Warnings, Error: r.Err, Adjustment: r.Adjustment}
		if r.SDRatio != nil {
			sj.AdjustmentSDRatio = map[string]Float{}
			for k, name := range r.Names {
				sj.AdjustmentSDRatio[name] = Float(r.SDRatio[k])
			}
		}
		if len(r.Warnings) > 0 {
			o.sum.WithWarnings = append(o.sum.WithWarnings, r.Subject)
		}
		if r.Err != "" {
			o.sum.Subjects = append(o.sum.Subjects, sj)
			continue
		}
		for c := range r.Chains {
			ch := &r.Chains[c]
			sj.EBFMI = append(sj.EBFMI, Float(r.EBFMI[c]))
			sj.StepSize = append(sj.StepSize, Float(ch.StepSize))
			if ch.Warmup > o.sum.Run.Warmup {
				sj.Warmup = max(sj.Warmup, ch.Warmup)
			}
			for d, x := range ch.Scaled {
				row := []string{r.Subject, strconv.Itoa(c + 1), strconv.Itoa(d + 1)}
				for k, v := range x {
					row = append(row, num(o.params[k].FromScale(v)))
				}
				row = append(row, num(ch.LogP[d]), strconv.FormatBool(ch.Divergent[d]), strconv.Itoa(ch.TreeDepth[d]), num(ch.StepSize),
					num(ch.Energy[d]), num(ch.AcceptStat[d]), strconv.Itoa(ch.NLeapfrog[d]))
				_ = dw.Write(row[:3+len(x)+len(o.drawsStats)])
			}
		}
		sj.Parameters = map[string]ParamJSON{}
		for k, name := range r.Names {
			s := r.Summary[k]
			scale := o.params[k].Scale.String()
			sj.Parameters[name] = ParamJSON{Scale: scale, Mean: Float(s.Mean), SD: Float(s.SD), Q5: Float(s.Q5),
				Q50: Float(s.Q50), Q95: Float(s.Q95), RHat: Float(s.RHat), ESSBulk: Float(s.ESSBulk), ESSTail: Float(s.ESSTail)}
			_ = tw.Write([]string{r.Subject, name, scale, num(s.Mean), num(s.SD), num(s.Q5), num(s.Q50), num(s.Q95),
				num(s.RHat), num(s.ESSBulk), num(s.ESSTail)})
		}
		o.sum.Subjects = append(o.sum.Subjects, sj)
	}
	dw.Flush()
	tw.Flush()
	for _, w := range []struct {
		f *os.File
		b []byte
	}{{o.draws, draws.Bytes()}, {o.table, table.Bytes()}} {
		if _, err := w.f.Write(w.b); err != nil {
			return err
		}
		if err := w.f.Sync(); err != nil {
			return err
		}
	}
	return o.writeJSON()
}

func (o *Output) writeJSON() error {
	b, err := json.MarshalIndent(o.sum, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(o.dir, SummaryJSONFile), append(b, '\n'))
}

// Close closes the tables.
func (o *Output) Close() error {
	return errors.Join(o.draws.Close(), o.table.Close())
}
