package study

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/internal/atomicfile"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// ResultsFile is a results file of package fit (JSON Lines, one record per subject) being
// filled with the fits of the subjects of one shard of a data set, resumably: the subjects
// already in it are skipped, and a checkpoint beside it (fit.CheckpointPath) is continued.
// Open it with OpenResults, check what it holds with Differences, then Start and Fit.
type ResultsFile struct {
	Path string
	Spec models.Spec // the task's, with the likelihood's nuisance parameters (the fitter's)
	Run  fit.Run     // what its records record about the run (RunOf)
	// Done are the records in the file: those read by OpenResults, then those Fit writes; after
	// Fit, in the order of the data set's subjects.
	Done []fit.Record
	// Subjects are the subjects of the shard that Fit fits: those not in Done (set by Start).
	Subjects []fit.Subject
	// Checkpoint is the checkpoint that Fit continues, nil if none (set by Start).
	Checkpoint *fit.Checkpoint

	fitter *fit.Fitter
	set    *data.Set
	k, n   int
	valid  int64 // bytes of the file that hold whole records
	w      *fit.Writer
}

// OpenResults returns the results file at path of fitter's fits with run of the subjects of
// set in shard k of n (data.Set.Shard), with the records it holds already (none if it does
// not exist); spec is the task's, the order of the parameters in the CSV table. It returns
// fit.ReadRecords' error for a file that cannot be read.
func OpenResults(path string, fitter *fit.Fitter, spec models.Spec, run fit.Run, set *data.Set, k, n int) (*ResultsFile, error) {
	rf := &ResultsFile{Path: path, Spec: spec, Run: run, fitter: fitter, set: set, k: k, n: n}
	if _, err := os.Stat(path); err == nil {
		if rf.Done, rf.valid, err = fit.ReadRecords(path); err != nil {
			return nil, err
		}
	}
	return rf, nil
}

// Difference is how a record of a results file differs from what a fit would write now.
type Difference struct {
	Subject string
	Lines   []string // one per setting or datum: "setting: in the file, now"
}

// Differences returns the records in the file, in file order, that Fit would not resume:
// those of a run with other settings, task or data than the fitter's with Run on the data
// set (fit.Fitter.RecordDifferences). Unchecked is how many records were written by an
// earlier version that recorded neither data nor task (fit.Unchecked): accepted unchecked.
func (rf *ResultsFile) Differences() (diffs []Difference, unchecked int) {
	digests := rf.set.Digests()
	for _, r := range rf.Done {
		if fit.Unchecked(r) {
			unchecked++
		}
		if d := rf.fitter.RecordDifferences(r, rf.Run, digests); len(d) > 0 {
			diffs = append(diffs, Difference{Subject: r.Subject, Lines: d})
		}
	}
	return diffs, unchecked
}

// Start reads the checkpoint beside the file, if any, into Checkpoint, sets Subjects and
// opens the file for Fit, which closes it. Temporary files of a checkpoint write that was cut
// short are removed. A checkpoint of a run with other settings is an error listing the
// differences (fit.Fitter.CheckpointDifferences).
func (rf *ResultsFile) Start() error {
	path := fit.CheckpointPath(rf.Path)
	if _, err := atomicfile.RemoveStale(path); err != nil {
		return err
	}
	c, err := fit.ReadCheckpoint(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c = nil
	case err != nil:
		return err
	default:
		if diff := rf.fitter.CheckpointDifferences(c, rf.Run); len(diff) > 0 {
			return fmt.Errorf("%s holds the state of a run with other settings; resume it with its settings, or remove it to start its subjects over:\n  %s",
				path, strings.Join(diff, "\n  "))
		}
	}
	rf.Checkpoint = c
	skip := map[string]bool{}
	for _, r := range rf.Done {
		skip[r.Subject] = true
	}
	rf.Subjects = nil
	for _, s := range rf.set.Shard(rf.k, rf.n) {
		if !skip[s.ID] {
			rf.Subjects = append(rf.Subjects, fit.Subject{ID: s.ID, Trials: s.States()})
		}
	}
	rf.w, err = fit.OpenWriter(rf.Path, rf.valid)
	return err
}

// CheckpointCounts returns how many restarts of Subjects the Checkpoint holds finished and
// under way, and the likelihood evaluations they have spent; zeros without a checkpoint.
func (rf *ResultsFile) CheckpointCounts() (finished, running, evals int) {
	if rf.Checkpoint == nil {
		return 0, 0, 0
	}
	ids := map[string]bool{}
	for _, s := range rf.Subjects {
		ids[s.ID] = true
	}
	for _, s := range rf.Checkpoint.Subjects {
		if !ids[s.Subject] {
			continue
		}
		for _, r := range s.Restarts {
			switch {
			case r == nil:
				continue
			case r.Status != "":
				finished++
			default:
				running++
			}
			evals += r.State.Evaluations
		}
	}
	return finished, running, evals
}

// Fit fits Subjects, from Checkpoint, and appends each one's record to the file as its fit
// ends, after passing its result to report (nil: none); it then rewrites the CSV table beside
// the file (fit.CSVPath) with every record in Done, in the data set's order, and closes the
// file. With the fitter's Options.CheckpointEvery, the restarts' state is saved beside the
// file that often and when ctx is cancelled; once every subject is fitted, the checkpoint is
// removed. It returns how many subjects could not be fitted (fit.Result.Err) and the first
// error of the fits, the file or the table; when ctx is cancelled, the fit stops early and
// the checkpoint is kept.
func (rf *ResultsFile) Fit(ctx context.Context, report func(fit.Result)) (failed int, err error) {
	defer rf.w.Close()
	spec := rf.Spec
	scale := map[string]string{}
	for _, p := range spec.Params {
		scale[p.Name] = p.Scale.String()
	}
	ckpt := fit.CheckpointPath(rf.Path)
	if every := rf.fitter.Options().CheckpointEvery; every > 0 {
		rf.fitter.SetCheckpoint(every, func(c *fit.Checkpoint) error {
			c.Run = rf.Run
			return fit.WriteCheckpoint(ckpt, c)
		})
	}
	err = rf.fitter.FitFrom(ctx, rf.Subjects, rf.Checkpoint, func(r fit.Result) error {
		if r.Err != "" {
			failed++
		}
		if report != nil {
			report(r)
		}
		rec := fit.NewRecord(r, rf.Run, scale)
		rf.Done = append(rf.Done, rec)
		return rf.w.Write(rec)
	})
	order := map[string]int{}
	for i, s := range rf.set.Subjects {
		order[s.ID] = i
	}
	sort.SliceStable(rf.Done, func(a, b int) bool { return order[rf.Done[a].Subject] < order[rf.Done[b].Subject] })
	if csvErr := fit.WriteCSV(fit.CSVPath(rf.Path), rf.Done, fit.ParamNames(rf.Done, spec.ParamNames())); csvErr != nil && err == nil {
		err = csvErr
	}
	if ctx.Err() != nil || err != nil {
		return failed, err
	}
	if err := os.Remove(ckpt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return failed, err
	}
	return failed, nil
}

// RunOf returns what the records of fitter's fits with the likelihood options opts of the
// task of spec record about the run, version being the program's.
func RunOf(fitter *fit.Fitter, spec models.Spec, opts likelihood.Options, version string) fit.Run {
	fo := fitter.Options()
	run := fit.Run{Task: spec.Name, Method: string(opts.Method), Observe: string(opts.Observe), Planner: string(opts.Planner),
		Linearize: string(opts.Linearize), Likelihood: Conventions(spec, opts), Seed: &fo.Seed, MaxIter: fo.MaxIter,
		Start: fo.StartsFrom, CheckDraws: &fo.CheckDraws, TaskDigest: fitter.TaskDigest(), Version: version}
	switch fo.Uncertainty {
	case fit.UncertaintyHessian:
		run.StdErrs = fo.Uncertainty
	case fit.UncertaintyBootstrap:
		run.StdErrs = fmt.Sprintf("%s %dx%d", fo.Uncertainty, fo.Bootstrap, fo.BootstrapRestarts)
		if a := fo.BootstrapAgents; len(a) != 1 || a[0] != (likelihood.AgentVariant{}) {
			names := make([]string, len(a))
			for i, v := range a {
				names[i] = v.String()
			}
			run.StdErrs += " " + strings.Join(names, ",")
		}
	}
	return run
}

// Conventions returns the flags that set the conventions of the likelihood options opts
// apart from the defaults for the task of spec (fit.Run.Likelihood), comma-separated:
// first-order-noise, ignore-gaps, nominal-filter, raw-angles, jitter=V and belief-prior=V (or
// the covariance's rows, "a b;c d"); "" for none.
func Conventions(spec models.Spec, opts likelihood.Options) string {
	var out []string
	if opts.FirstOrderNoise {
		out = append(out, "first-order-noise")
	}
	if opts.IgnoreGaps {
		out = append(out, "ignore-gaps")
	}
	if opts.NominalFilter {
		out = append(out, "nominal-filter")
	}
	if opts.RawAngles {
		out = append(out, "raw-angles")
	}
	if opts.Jitter != likelihood.TaskJitter(spec) {
		out = append(out, "jitter="+strconv.FormatFloat(opts.Jitter, 'g', -1, 64))
	}
	if opts.Prior != nil {
		out = append(out, "belief-prior="+priorString(opts.Prior))
	}
	return strings.Join(out, ",")
}

// priorString writes a belief prior covariance: its variance when it is that times the
// identity, else its rows separated by ";", their values by spaces.
func priorString(P [][]float64) string {
	scalar := true
	rows := make([]string, len(P))
	for i, r := range P {
		cells := make([]string, len(r))
		for j, v := range r {
			cells[j] = strconv.FormatFloat(v, 'g', -1, 64)
			if (i == j && v != P[0][0]) || (i != j && v != 0) {
				scalar = false
			}
		}
		rows[i] = strings.Join(cells, " ")
	}
	if scalar {
		return strconv.FormatFloat(P[0][0], 'g', -1, 64)
	}
	return strings.Join(rows, ";")
}

// Starts returns the estimates of the successful records of recs, by subject, in the fitting
// scales of spec's parameters (fit.Options.Starts); the last record of a subject wins.
func Starts(recs []fit.Record, spec models.Spec) map[string]map[string]float64 {
	starts := map[string]map[string]float64{}
	for _, r := range recs {
		if r.Params != nil {
			starts[r.Subject] = r.Scaled(spec)
		}
	}
	return starts
}

// ReadStarts returns the estimates that the results file path holds for the subjects of set
// in shard k of n, in the fitting scales of spec's parameters (Starts), and the data digest
// each was fitted to, by subject ("" where the record predates them). It returns
// fit.EstimatesOf's error for a file that cannot be read, holds results of another task or
// lacks a successful fit of one of the subjects.
func ReadStarts(path string, spec models.Spec, set *data.Set, k, n int) (starts map[string]map[string]float64, digests map[string]string, err error) {
	var ids []string
	for _, s := range set.Shard(k, n) {
		ids = append(ids, s.ID)
	}
	recs, err := fit.EstimatesOf(path, spec.Name, ids)
	if err != nil {
		return nil, nil, err
	}
	digests = map[string]string{}
	for id, r := range recs {
		digests[id] = r.DataDigest
	}
	return Starts(slices.Collect(maps.Values(recs)), spec), digests, nil
}
