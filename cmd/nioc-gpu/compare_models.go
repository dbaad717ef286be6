package main

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nioc-gpu/nioc-gpu/bms"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/internal/atomicfile"
	"github.com/nioc-gpu/nioc-gpu/plots"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "compare-models", summary: "compare models across subjects by their fits' evidence (random-effects Bayesian model selection)", run: runCompareModels})
}

// The files compare-models writes in --out.
const (
	bmsJSONFile     = "bms.json"
	bmsSubjectsFile = "subjects.csv"
	bmsFigureFile   = "bms.png"
)

// bmsModel is one model of compare-models: a results file of fits of the subjects' data
// under it, with each subject's last record.
type bmsModel struct {
	name, path string
	recs       map[string]fit.Record
	order      []string // subjects in the file's order
}

// bmsLeftOut is a subject compare-models leaves out, with why, model by model.
type bmsLeftOut struct {
	Subject string   `json:"subject"`
	Reasons []string `json:"reasons"`
}

func runCompareModels(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare-models", "[--names a,b,...] [--evidence laplace|bic] [--samples N] [--seed N] [--out DIR] [--force] results-a.jsonl results-b.jsonl [more.jsonl ...]", stderr)
	names := fs.String("names", "", "the models' names, `a,b,...`, one per results file in their order (default: the files' names without .jsonl)")
	evidence := fs.String("evidence", "laplace", "each subject's log model evidence, `laplace|bic`: laplace (the fit's Laplace approximation, log_evidence) or bic (−BIC/2)")
	samples := fs.Int("samples", 0, "exceedance probabilities by Monte Carlo from `N` draws of the posterior model frequencies; 0: exact (the Beta distribution for two models, numerical integration for more)")
	seed := fs.Uint64("seed", 1, "random seed of --samples")
	out := fs.String("out", "", "directory to write bms.json, subjects.csv and the figure bms.png in (created if needed)")
	force := fs.Bool("force", false, "replace those files if --out holds them")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	paths := fs.Args()
	if err := checkCompareArgs(paths, *evidence, *samples); err != nil {
		return err
	}
	modelNames, err := bmsNames(*names, paths)
	if err != nil {
		return err
	}
	var outputs []string
	if *out != "" {
		if err := refuseNonDir("out", *out); err != nil {
			return err
		}
		for _, f := range []string{bmsJSONFile, bmsSubjectsFile, bmsFigureFile} {
			outputs = append(outputs, filepath.Join(*out, f))
		}
		if !*force {
			if err := refuseExisting(forceHint, outputs...); err != nil {
				return err
			}
		}
	}

	models, subjects, err := readBMSModels(paths, modelNames, *evidence, stderr)
	if err != nil {
		return err
	}
	kept, L, left := evidenceMatrix(models, subjects, *evidence)
	if len(left) > 0 {
		fmt.Fprintf(stderr, "warning: %d of %d subject(s) left out, for they lack an evidence under some model (the comparison needs each subject under every model):\n", len(left), len(subjects))
		for _, l := range left {
			fmt.Fprintf(stderr, "  subject %s: %s\n", l.Subject, strings.Join(l.Reasons, "; "))
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("no subject has an evidence under every model: nothing to compare")
	}
	if *evidence == "laplace" {
		noteAtBound(models, kept, stderr)
	}
	res, err := bms.Compare(L, bms.Options{Samples: *samples, Seed: *seed})
	if err != nil {
		return err
	}
	rep := newBMSReport(models, kept, L, left, res, *evidence, *samples, *seed)
	if err := printBMS(stdout, rep); err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeBMS(*out, rep); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", strings.Join(outputs, ", "))
	return nil
}

// checkCompareArgs checks compare-models' results files (two or more, each once) and its
// --evidence and --samples.
func checkCompareArgs(paths []string, evidence string, samples int) error {
	if len(paths) < 2 {
		return usagef("give two or more results files, one per model (fits of the same subjects' data under each model); got %d", len(paths))
	}
	if evidence != "laplace" && evidence != "bic" {
		return usagef("unknown --evidence %q: use laplace or bic", evidence)
	}
	if samples < 0 {
		return usagef("--samples must be >= 0, got %d", samples)
	}
	for i, p := range paths {
		for _, q := range paths[:i] {
			if p == q || sameFile(p, q) {
				return usagef("%s is given twice: give each model's results file once", p)
			}
		}
	}
	return nil
}

// readBMSModels reads each model's results file and returns the models and their subjects,
// having checked that every model fitted the same data and carries the evidence asked for.
func readBMSModels(paths, names []string, evidence string, stderr io.Writer) ([]bmsModel, []string, error) {
	models := make([]bmsModel, len(paths))
	for i, p := range paths {
		var err error
		if models[i], err = readBMSModel(p, names[i], stderr); err != nil {
			return nil, nil, err
		}
	}
	subjects := bmsSubjects(models)
	if err := checkSameData(models, subjects, stderr); err != nil {
		return nil, nil, err
	}
	if err := checkEvidence(models, evidence); err != nil {
		return nil, nil, err
	}
	return models, subjects, nil
}

// bmsNames returns the models' names: --names's, else each file's name without .jsonl (its
// path where two files share a name).
func bmsNames(flag string, paths []string) ([]string, error) {
	if flag != "" {
		names := strings.Split(flag, ",")
		if len(names) != len(paths) {
			return nil, usagef("--names gives %d name(s) for %d results files: give one per file, in their order", len(names), len(paths))
		}
		for i, n := range names {
			names[i] = strings.TrimSpace(n)
			if names[i] == "" {
				return nil, usagef("--names: name %d is empty", i+1)
			}
			if slices.Contains(names[:i], names[i]) {
				return nil, usagef("--names: %s is given twice; each model needs a name of its own", names[i])
			}
		}
		return names, nil
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".jsonl")
	}
	for i := range names {
		for j := range names {
			if i != j && names[i] == names[j] {
				for k, p := range paths {
					names[k] = strings.TrimSuffix(filepath.Clean(p), ".jsonl")
				}
				return names, nil
			}
		}
	}
	return names, nil
}

// readBMSModel reads the results file path of the model name, each subject's last record
// (study.Latest), and says on stderr what it holds.
func readBMSModel(path, name string, stderr io.Writer) (bmsModel, error) {
	recs, _, err := fit.ReadRecords(path)
	if err != nil {
		return bmsModel{}, err
	}
	if len(recs) == 0 {
		return bmsModel{}, fmt.Errorf("%s holds no results", path)
	}
	latest, repeated, _ := study.Latest(recs)
	m := bmsModel{name: name, path: path, recs: map[string]fit.Record{}}
	for _, r := range latest {
		m.recs[r.Subject] = r
		m.order = append(m.order, r.Subject)
	}
	r := latest[0]
	what := fmt.Sprintf("task %s, method %s, planner %s", r.Task, r.Method, cmp.Or(r.Planner, "the task's"))
	if len(r.Fitted) > 0 {
		what += ", fitted " + strings.Join(r.Fitted, ",")
	}
	fmt.Fprintf(stderr, "model %s: %s, %d subject(s) (%s)\n", name, path, len(latest), what)
	if len(repeated) > 0 {
		fmt.Fprintf(stderr, "  subject(s) %s appear more than once: used is each one's last record\n", strings.Join(repeated, ", "))
	}
	return m, nil
}

// bmsSubjects returns the subjects of all models in natural order: IDs that are both
// integers by value, others as strings with their digit runs compared by value (s2 before
// s10).
func bmsSubjects(models []bmsModel) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range models {
		for _, s := range m.order {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, naturalCompare)
	return out
}

// naturalCompare orders strings with their runs of digits compared as numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun returns the length of the run of ASCII digits that s starts with.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// checkSameData returns an error naming the files and subjects whose records were fitted
// to different data (their data_digest differs): a comparison of models needs the same data
// under each. Records without a digest (earlier versions) cannot be checked: a note says so.
func checkSameData(models []bmsModel, subjects []string, stderr io.Writer) error {
	var diffs []string
	unchecked := 0
	for _, s := range subjects {
		first := -1
		for i, m := range models {
			r, ok := m.recs[s]
			if !ok {
				continue
			}
			if r.DataDigest == "" {
				unchecked++
				continue
			}
			if first < 0 {
				first = i
				continue
			}
			if d := models[first].recs[s].DataDigest; d != r.DataDigest {
				diffs = append(diffs, fmt.Sprintf("subject %s: %s fitted data %s, %s fitted data %s", s, models[first].path, d, m.path, r.DataDigest))
			}
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the results files hold fits of different data; a comparison of models needs fits of the same data under each:\n  %s", strings.Join(diffs, "\n  "))
	}
	if unchecked > 0 {
		fmt.Fprintf(stderr, "note: %d record(s) do not say which data they fitted (written by an earlier version): that the models were fitted to the same data is not checked for them\n", unchecked)
	}
	return nil
}

// checkEvidence returns an error for a results file none of whose records carries the
// evidence asked for (records written before nioc-gpu recorded it, or every fit failed).
func checkEvidence(models []bmsModel, evidence string) error {
	for _, m := range models {
		has := false
		for _, r := range m.recs {
			if _, ok := recordEvidence(r, evidence); ok {
				has = true
				break
			}
		}
		if !has {
			if evidence == "laplace" {
				return fmt.Errorf("%s: no record has a log_evidence (the Laplace approximation; absent where the fit failed, where the Hessian at the estimate is not positive definite, and in records of versions before it was recorded): refit, or give --evidence bic", m.path)
			}
			return fmt.Errorf("%s: no record has a bic (absent where the fit failed and in records of early versions): refit", m.path)
		}
	}
	return nil
}

// recordEvidence returns the subject's log model evidence in r: its Laplace approximation
// (laplace) or −BIC/2 (bic); false if r has none.
func recordEvidence(r fit.Record, evidence string) (float64, bool) {
	if r.Error != "" {
		return 0, false
	}
	switch {
	case evidence == "laplace" && r.LogEvidence != nil:
		return *r.LogEvidence, true
	case evidence == "bic" && r.BIC != nil:
		return -*r.BIC / 2, true
	}
	return 0, false
}

// evidenceMatrix returns the subjects that have an evidence under every model, their log
// evidences (subjects × models), and the others with why.
func evidenceMatrix(models []bmsModel, subjects []string, evidence string) (kept []string, L [][]float64, left []bmsLeftOut) {
	for _, s := range subjects {
		row := make([]float64, len(models))
		var reasons []string
		for k, m := range models {
			r, ok := m.recs[s]
			if !ok {
				reasons = append(reasons, fmt.Sprintf("%s: not in %s", m.name, m.path))
				continue
			}
			v, ok := recordEvidence(r, evidence)
			switch {
			case ok:
				row[k] = v
			case r.Error != "":
				reasons = append(reasons, fmt.Sprintf("%s: the fit failed (%s)", m.name, r.Error))
			case evidence == "laplace" && !r.HessianPD:
				reasons = append(reasons, fmt.Sprintf("%s: no log_evidence (the Hessian at the estimate is not positive definite; --evidence bic does not need it)", m.name))
			default:
				reasons = append(reasons, fmt.Sprintf("%s: no %s in its record", m.name, map[string]string{"laplace": "log_evidence", "bic": "bic"}[evidence]))
			}
		}
		if len(reasons) > 0 {
			left = append(left, bmsLeftOut{Subject: s, Reasons: reasons})
			continue
		}
		kept = append(kept, s)
		L = append(L, row)
	}
	return kept, L, left
}

// noteAtBound says on stderr, for each model, how many of the compared subjects have an
// estimate at a bound of its search box: the Laplace approximation there treats the
// posterior as if it went on beyond the bound.
func noteAtBound(models []bmsModel, kept []string, stderr io.Writer) {
	for _, m := range models {
		n := 0
		params := map[string]bool{}
		for _, s := range kept {
			if r := m.recs[s]; len(r.AtBound) > 0 {
				n++
				for _, p := range r.AtBound {
					params[p] = true
				}
			}
		}
		if n > 0 {
			names := slices.Sorted(func(yield func(string) bool) {
				for p := range params {
					if !yield(p) {
						return
					}
				}
			})
			fmt.Fprintf(stderr, "note: model %s: %d of %d subject(s) have an estimate at a bound of the search box (%s); their Laplace evidence is approximate there (--evidence bic is another view)\n",
				m.name, n, len(kept), strings.Join(names, ", "))
		}
	}
}

// bmsReport is what compare-models reports and writes to bms.json.
type bmsReport struct {
	Evidence string `json:"evidence"` // laplace or bic
	// Subjects is how many subjects were compared, and LeftOut those left out with why.
	Subjects int              `json:"subjects"`
	LeftOut  []bmsLeftOut     `json:"left_out,omitempty"`
	Models   []bmsModelReport `json:"models"`
	// BOR is the Bayesian omnibus risk; FreeEnergy and NullEvidence are F1 and F0 (nats).
	BOR          float64 `json:"bor"`
	FreeEnergy   float64 `json:"free_energy"`
	NullEvidence float64 `json:"null_evidence"`
	Iterations   int     `json:"iterations"`
	// ExceedanceMethod is beta, integration or "monte carlo"; Samples and Seed its draws.
	ExceedanceMethod string             `json:"exceedance_method"`
	Samples          int                `json:"samples,omitempty"`
	Seed             *uint64            `json:"seed,omitempty"`
	PerSubject       []bmsSubjectReport `json:"per_subject"`
	Version          string             `json:"version"`
}

// bmsModelReport is one model's line of the report.
type bmsModelReport struct {
	Name    string   `json:"name"`
	File    string   `json:"file"`
	Task    string   `json:"task"`
	Method  string   `json:"method"`
	Observe string   `json:"observe"`
	Planner string   `json:"planner,omitempty"`
	Fitted  []string `json:"fitted,omitempty"`
	// PriorCount and Alpha are the prior and posterior Dirichlet parameters of its frequency.
	PriorCount          float64 `json:"prior_count"`
	Alpha               float64 `json:"alpha"`
	Frequency           float64 `json:"expected_frequency"`
	FrequencySD         float64 `json:"frequency_sd"`
	Exceedance          float64 `json:"exceedance"`
	ProtectedExceedance float64 `json:"protected_exceedance"`
	// BestFor is how many subjects it is the most probable model of; SummedLogEvidence its
	// log evidences' sum over the compared subjects (the fixed-effects log evidence).
	BestFor           int     `json:"subjects_best"`
	SummedLogEvidence float64 `json:"summed_log_evidence"`
}

// bmsSubjectReport is one compared subject: its evidences, posterior model probabilities and
// most probable model, keyed by model name.
type bmsSubjectReport struct {
	Subject      string              `json:"subject"`
	DataDigest   string              `json:"data_digest,omitempty"`
	LogEvidence  map[string]float64  `json:"log_evidence"` // the compared one (--evidence)
	Laplace      map[string]*float64 `json:"laplace_log_evidence"`
	BIC          map[string]*float64 `json:"bic"`
	Posterior    map[string]float64  `json:"posterior"`
	MostProbable string              `json:"most_probable"`
}

func newBMSReport(models []bmsModel, kept []string, L [][]float64, left []bmsLeftOut, res *bms.Result, evidence string, samples int, seed uint64) bmsReport {
	rep := bmsReport{Evidence: evidence, Subjects: len(kept), LeftOut: left, BOR: res.BOR, FreeEnergy: res.FreeEnergy,
		NullEvidence: res.NullEvidence, Iterations: res.Iterations, ExceedanceMethod: res.ExceedanceMethod, Version: versionString()}
	if samples > 0 {
		rep.Samples, rep.Seed = samples, &seed
	}
	for k, m := range models {
		first := m.recs[kept[0]]
		mr := bmsModelReport{Name: m.name, File: m.path, Task: first.Task, Method: first.Method, Observe: first.Observe,
			Planner: first.Planner, Fitted: first.Fitted, PriorCount: res.Prior[k], Alpha: res.Alpha[k],
			Frequency: res.Frequency[k], FrequencySD: res.FrequencySD[k], Exceedance: res.Exceedance[k],
			ProtectedExceedance: res.Protected[k]}
		for n := range kept {
			mr.SummedLogEvidence += L[n][k]
			if res.Best[n] == k {
				mr.BestFor++
			}
		}
		rep.Models = append(rep.Models, mr)
	}
	for n, s := range kept {
		sr := bmsSubjectReport{Subject: s, LogEvidence: map[string]float64{}, Laplace: map[string]*float64{},
			BIC: map[string]*float64{}, Posterior: map[string]float64{}, MostProbable: models[res.Best[n]].name}
		for k, m := range models {
			r := m.recs[s]
			sr.DataDigest = cmp.Or(sr.DataDigest, r.DataDigest)
			sr.LogEvidence[m.name] = L[n][k]
			sr.Laplace[m.name], sr.BIC[m.name] = r.LogEvidence, r.BIC
			sr.Posterior[m.name] = res.Posterior[n][k]
		}
		rep.PerSubject = append(rep.PerSubject, sr)
	}
	return rep
}

// printBMS prints the table of compare-models.
func printBMS(w io.Writer, rep bmsReport) error {
	what := map[string]string{"laplace": "Laplace log evidence", "bic": "−BIC/2"}[rep.Evidence]
	fmt.Fprintf(w, "random-effects Bayesian model selection: %d subject(s), %s\n\n", rep.Subjects, what)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\texpected frequency\texceedance\tprotected exceedance\tsubjects best explained\tsummed log evidence\tfile\t")
	for _, m := range rep.Models {
		fmt.Fprintf(tw, "%s\t%.3f ± %.3f\t%.4f\t%.4f\t%d\t%.2f\t%s\t\n", m.Name, m.Frequency, m.FrequencySD, m.Exceedance,
			m.ProtectedExceedance, m.BestFor, m.SummedLogEvidence, m.File)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nBayesian omnibus risk (BOR, the probability that all models are equally frequent): %.3g\n", rep.BOR)
	return err
}

// writeBMS writes bms.json, subjects.csv and bms.png in dir.
func writeBMS(dir string, rep bmsReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, bmsJSONFile), append(b, '\n')); err != nil {
		return err
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	header := []string{"subject"}
	for _, m := range rep.Models {
		header = append(header, m.Name+"_log_evidence", m.Name+"_bic")
	}
	for _, m := range rep.Models {
		header = append(header, m.Name+"_posterior")
	}
	_ = cw.Write(append(header, "most_probable"))
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	}
	for _, s := range rep.PerSubject {
		row := []string{s.Subject}
		for _, m := range rep.Models {
			row = append(row, num(s.Laplace[m.Name]), num(s.BIC[m.Name]))
		}
		for _, m := range rep.Models {
			row = append(row, strconv.FormatFloat(s.Posterior[m.Name], 'g', -1, 64))
		}
		_ = cw.Write(append(row, s.MostProbable))
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, bmsSubjectsFile), buf.Bytes()); err != nil {
		return err
	}
	bars := make([]plots.ModelBars, len(rep.Models))
	for i, m := range rep.Models {
		bars[i] = plots.ModelBars{Name: m.Name, Frequency: m.Frequency, FrequencySD: m.FrequencySD,
			Exceedance: m.Exceedance, ProtectedExceedance: m.ProtectedExceedance}
	}
	what := map[string]string{"laplace": "Laplace evidence", "bic": "BIC"}[rep.Evidence]
	title := fmt.Sprintf("models compared across %d subjects (%s)\nBayesian omnibus risk %s", rep.Subjects, what, fmtBOR(rep.BOR))
	return plots.ModelComparison(filepath.Join(dir, bmsFigureFile), title, bars)
}

// fmtBOR formats the omnibus risk for a title: 3 significant digits, "< 1e-12" below that.
func fmtBOR(v float64) string {
	if v < 1e-12 {
		return "< 1e-12"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
