package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/population"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "population", summary: "fit a population of subjects at once: population means, spreads and covariate effects with intervals, shrunk subject estimates (empirical Bayes)", run: runPopulation})
}

// The files a population fit writes in its --out directory.
const (
	popIndependent = "independent.jsonl" // the independent fits (fit's results file)
	popSteps       = "em.jsonl"          // the EM steps as they finish
	popJSON        = "population.json"   // the report
	popCSV         = "population.csv"    // effects and spreads
	popSubjects    = "subjects.csv"      // each subject's independent and shrunk estimates
)

// popFlags are population's flags.
type popFlags struct {
	data, subjects, formula, infer, fix, out string
	restarts, maxIter, maxEM, maxBatch       int
	tol                                      float64
	seed                                     uint64
	resume, quiet                            bool
	every                                    time.Duration
	fs                                       *flag.FlagSet // the flags registered on (checkMaxBatch)
	truth                                    string        // --truth: the subjects' true values, for the figures
	maxMemory                                memoryFlag
}

func (pf *popFlags) register(fs *flag.FlagSet) {
	pf.fs = fs
	fs.StringVar(&pf.data, "data", "", "trajectory CSV with the subjects")
	fs.StringVar(&pf.subjects, "subjects", "", "subjects table (CSV: subject, then covariate columns such as group or age) for --population-model")
	fs.StringVar(&pf.formula, "population-model", "~ 1", "the population mean of every fitted parameter: \"~ 1\" (one population) or covariate columns of --subjects joined by +, e.g. \"~ group + age\" (categorical columns: each level's difference from the first in sorted order; numeric: centred)")
	fs.StringVar(&pf.infer, "infer", "", "parameters to fit, name,name (default: all the likelihood depends on)")
	fs.StringVar(&pf.fix, "fix", "", "parameters held fixed, name=value,... (natural units)")
	fs.StringVar(&pf.out, "out", "", "output directory: "+popIndependent+", "+popSteps+", "+popJSON+", "+popCSV+", "+popSubjects)
	fs.IntVar(&pf.restarts, "restarts", 20, "random restarts of each subject's independent fit (the first EM step's starts)")
	fs.Uint64Var(&pf.seed, "seed", 1, "seed of the restarts' initial points")
	fs.IntVar(&pf.maxIter, "max-iter", 200, "L-BFGS-B iterations per restart")
	fs.IntVar(&pf.maxEM, "max-em", 50, "EM iterations at most")
	fs.Float64Var(&pf.tol, "em-tol", 0.01, "EM stops when the log marginal likelihood rises by less than this (nats)")
	fs.IntVar(&pf.maxBatch, "max-batch", 0, maxBatchDoc("parameter vectors × trials"))
	pf.maxMemory.register(fs)
	fs.BoolVar(&pf.resume, "resume", false, "continue an interrupted run in --out")
	fs.BoolVar(&pf.quiet, "quiet", false, "no progress bar")
	fs.DurationVar(&pf.every, "checkpoint-every", time.Minute, "save the independent fits' optimizer state this often (and on Ctrl-C); 0 disables")
	fs.StringVar(&pf.truth, "truth", "", "`FILE` of the subjects' true values (CSV: subject, [group,] then the task's parameters in natural units, as simulate --population writes it) to mark on "+popDensities+" and "+popShrinkage)
}

func (pf *popFlags) check() error {
	switch {
	case pf.restarts < 1:
		return usagef("--restarts must be >= 1, got %d", pf.restarts)
	case pf.maxIter < 1 || pf.maxEM < 1:
		return usagef("--max-iter and --max-em must be >= 1, got %d and %d", pf.maxIter, pf.maxEM)
	case !(pf.tol > 0):
		return usagef("--em-tol must be > 0, got %g", pf.tol)
	case checkMaxBatch(pf.fs, pf.maxBatch) != nil:
		return checkMaxBatch(pf.fs, pf.maxBatch)
	case pf.every < 0:
		return usagef("--checkpoint-every must be >= 0, got %s", pf.every)
	}
	return nil
}

func runPopulation(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("population", "--task NAME --data FILE.csv [--subjects subjects.csv --population-model \"~ group\"] [--observe partial|full] [--planner full|partial] [--timing act-then-see|see-then-act] [--restarts 20] [--seed 1] [--max-em 50] [--em-tol 0.01] [--infer name,...] [--fix name=value,...] [--resume] [--truth FILE] [--max-memory auto|SIZE] [--backend go|xla] --out DIR", stderr)
	var tf taskFlags
	tf.register(fs, true)
	var pf popFlags
	pf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	if err := required(fs, "data", "out"); err != nil {
		return err
	}
	if err := pf.check(); err != nil {
		return err
	}
	formula, table, err := pf.model()
	if err != nil {
		return err
	}
	spec := m.Spec()
	opts, err := tf.likelihoodOptions(spec)
	if err != nil {
		return err
	}
	fixNames, fixValues, err := parseAssignments(pf.fix, "fix")
	if err != nil {
		return err
	}
	if err := pf.prepareOut(); err != nil {
		return err
	}
	set, opts, err := readPlanned(&tf, pf.data, &pf.maxBatch, m, opts, pf.maxMemory, stderr)
	if err != nil {
		return err
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	fopts := fit.Options{Restarts: pf.restarts, Seed: pf.seed, MaxIter: pf.maxIter, Infer: parseNames(pf.infer),
		Fix: map[string]float64{}, MaxBatch: pf.maxBatch, CheckpointEvery: pf.every}
	for i, n := range fixNames {
		fopts.Fix[n] = fixValues[i]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return pf.run(ctx, e, fopts, set, formula, table, stdout, stderr)
}

// model returns the population model and the subjects table (nil without --subjects).
func (pf *popFlags) model() (population.Formula, *population.Subjects, error) {
	formula, err := population.ParseFormula(pf.formula)
	if err != nil {
		return formula, nil, usagef("--population-model: %v", err)
	}
	if pf.subjects == "" {
		if len(formula.Terms) > 0 {
			return formula, nil, usagef("--population-model %q names covariates: give them with --subjects subjects.csv", formula)
		}
		return formula, nil, nil
	}
	table, err := population.ReadSubjects(pf.subjects)
	return formula, table, err
}

// prepareOut creates --out, or checks that it may continue the run there.
func (pf *popFlags) prepareOut() error {
	if err := refuseNonDir("out", pf.out); err != nil {
		return err
	}
	if !pf.resume {
		for _, f := range []string{popIndependent, popSteps} {
			if _, err := os.Stat(filepath.Join(pf.out, f)); err == nil {
				return usagef("%s already holds a population fit (%s): use --resume to continue it, or choose another --out", pf.out, f)
			}
		}
	}
	return os.MkdirAll(pf.out, 0o755)
}

// run fits the subjects of set independently, then the population by EM, and writes and
// prints the report.
func (pf *popFlags) run(ctx context.Context, e *likelihood.Evaluator, fopts fit.Options, set *data.Set,
	formula population.Formula, table *population.Subjects, stdout, stderr io.Writer) error {
	t0 := time.Now()
	fitter, err := fit.New(e, fopts)
	if err != nil {
		return usageError{err}
	}
	var all []string
	for _, s := range set.Subjects {
		all = append(all, s.ID)
	}
	if _, _, err := design(table, formula, all); err != nil { // before the fits: a table that does not fit the data
		return err
	}
	indepPath := filepath.Join(pf.out, popIndependent)
	fmt.Fprintln(stderr, "independent fits (the population's starting point):")
	if err := fitFile(ctx, fitter, e.Spec(), e.Options(), set, 1, 1, indepPath, pf.quiet, stderr); err != nil {
		return err
	}
	recs, _, err := fit.ReadRecords(indepPath)
	if err != nil {
		return err
	}
	in := population.Independent(recs, e.Spec(), fitter.Fitted())
	order := all // the data's order; a resumed run keeps its own (earlier versions took the file's)
	if pf.resume {
		if prev, _, err := population.ReadSteps(filepath.Join(pf.out, popSteps)); err == nil &&
			slices.Equal(slices.Sorted(slices.Values(prev.Subjects)), slices.Sorted(slices.Values(in.IDs))) {
			order = prev.Subjects
		}
	}
	in.SortBy(order)
	for _, id := range slices.Sorted(maps.Keys(in.Excluded)) {
		fmt.Fprintf(stderr, "warning: subject %s is left out of the population: %s\n", id, in.Excluded[id])
	}
	X, columns, err := design(table, formula, in.IDs)
	if err != nil {
		return err
	}
	settings := population.Settings{Task: e.Spec().Name, TaskDigest: e.TaskDigest(), Observe: string(e.Options().Observe),
		Formula: formula.String(), Columns: columns, Fitted: fitter.Fitted(), Subjects: in.IDs, DataDigests: set.Digests(),
		Restarts: pf.restarts, Seed: pf.seed, MaxIter: pf.maxEM, Tol: pf.tol, Likelihood: likelihoodText(e)}
	cfg := population.Config{Evaluator: e, Fit: fopts, Subjects: subjectsOf(set, in.IDs), X: X, MaxIter: pf.maxEM, Tol: pf.tol}
	cfg.Fit.CheckpointEvery = 0
	last, converged, err := pf.em(ctx, cfg, settings, in, stderr)
	if err != nil {
		return err
	}
	effects, spreads, err := population.Inference(X, columns, settings.Fitted, last.Prior, last.Subjects)
	if err != nil {
		return err
	}
	rep := population.NewReport(settings, last, converged, effects, spreads, in.Scaled, in.SE, in.Excluded, pf.evaluations(recs), time.Since(t0).Seconds())
	if err := pf.write(rep, e.Spec()); err != nil {
		return err
	}
	pf.figures(rep, e, table, stderr)
	printPopulation(stdout, rep, e.Spec())
	return nil
}

// em runs EM, continuing the steps in --out; it says on stderr how each step went.
func (pf *popFlags) em(ctx context.Context, cfg population.Config, settings population.Settings, in population.IndependentFits,
	stderr io.Writer) (population.Step, bool, error) {
	path := filepath.Join(pf.out, popSteps)
	w, steps, err := population.CreateSteps(path, settings)
	var se *population.SettingsError
	if errors.As(err, &se) {
		return population.Step{}, false, fmt.Errorf("%v; resume it with its settings and data, or choose another --out", err)
	} else if err != nil {
		return population.Step{}, false, err
	}
	var last *population.Step
	if n := len(steps); n > 0 {
		last = &steps[n-1]
		fmt.Fprintf(stderr, "resuming: %d EM step(s) in %s\n", n, path)
		converged := n >= 2 && steps[n-1].LogMarginal-steps[n-2].LogMarginal < pf.tol // as population.Run stops
		if converged || n >= pf.maxEM {
			return steps[n-1], converged, nil
		}
	}
	prev := 0.0
	if last != nil {
		prev = last.LogMarginal
	}
	step, converged, err := population.Run(ctx, cfg, population.Initial(cfg.X, in.Rows(), 1e-4), in.Rows(), last, func(s population.Step) error {
		change := ""
		if s.Iter > 1 {
			change = fmt.Sprintf(" (%+.3f)", s.LogMarginal-prev)
		}
		prev = s.LogMarginal
		fmt.Fprintf(stderr, "EM step %d: log marginal likelihood %.3f%s, %d evaluations, %.1f s\n", s.Iter, s.LogMarginal, change, s.Evaluations, s.Seconds)
		for _, sf := range s.Subjects {
			if sf.Note != "" {
				fmt.Fprintf(stderr, "  note: subject %s: %s\n", sf.Subject, sf.Note)
			}
		}
		return w.Append(s)
	})
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: the finished EM steps are in %s; rerun with --resume to continue\n", path)
		return step, false, errInterrupted
	}
	if err == nil && !converged {
		fmt.Fprintf(stderr, "warning: EM did not converge in %d steps (--max-em): the population is that of the last step\n", pf.maxEM)
	}
	return step, converged, err
}

// evaluations returns the likelihood evaluations of the independent fits and of the EM
// steps in --out.
func (pf *popFlags) evaluations(recs []fit.Record) int {
	n := 0
	for _, r := range recs {
		n += r.Evaluations
	}
	if _, steps, err := population.ReadSteps(filepath.Join(pf.out, popSteps)); err == nil {
		for _, s := range steps {
			n += s.Evaluations
		}
	}
	return n
}

// write writes the report's files into --out.
func (pf *popFlags) write(rep *population.Report, spec models.Spec) error {
	if err := rep.WriteJSON(filepath.Join(pf.out, popJSON)); err != nil {
		return err
	}
	if err := rep.WriteEffectsCSV(filepath.Join(pf.out, popCSV)); err != nil {
		return err
	}
	return rep.WriteSubjectsCSV(filepath.Join(pf.out, popSubjects), spec)
}

// design returns the design matrix of the subjects ids: the intercept alone without a
// subjects table.
func design(table *population.Subjects, formula population.Formula, ids []string) ([][]float64, []string, error) {
	if table == nil {
		X := make([][]float64, len(ids))
		for i := range X {
			X[i] = []float64{1}
		}
		return X, []string{population.Intercept}, nil
	}
	return population.Design(table, formula, ids)
}

// subjectsOf returns the subjects ids of set, in ids' order.
func subjectsOf(set *data.Set, ids []string) []fit.Subject {
	byID := map[string]data.Subject{}
	for _, s := range set.Subjects {
		byID[s.ID] = s
	}
	out := make([]fit.Subject, len(ids))
	for i, id := range ids {
		out[i] = fit.Subject{ID: id, Trials: byID[id].States()}
	}
	return out
}

// likelihoodText names the likelihood: its method, planner, linearization and the conventions
// that differ from the defaults (study.Conventions).
func likelihoodText(e *likelihood.Evaluator) string {
	o := e.Options()
	text := fmt.Sprintf("method %s, planner %s, linearize %s", o.Method, o.Planner, o.Linearize)
	if c := study.Conventions(e.Spec(), o); c != "" {
		text += ", " + c
	}
	return text
}

// printPopulation prints the population's effects and spreads as a table.
func printPopulation(stdout io.Writer, rep *population.Report, spec models.Spec) {
	status := "converged"
	if !rep.Converged {
		status = "NOT converged"
	}
	fmt.Fprintf(stdout, "population of %d subject(s), %s (fitting scales), EM %s after %d step(s), log marginal likelihood %.2f\n\n",
		len(rep.Subjects), rep.Settings.Formula, status, rep.Steps, rep.LogMarginal)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tterm\testimate\tSE\t95% CI\tp\tnatural")
	for _, ef := range rep.Effects {
		nat, p := "", ""
		if ef.Term == population.Intercept {
			prm, _ := spec.Param(ef.Param)
			nat = fmt.Sprintf("%.4g", prm.FromScale(ef.Estimate))
		}
		if ef.P != nil {
			p = fmt.Sprintf("%.3g", *ef.P)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t[%.4f, %.4f]\t%s\t%s\n", ef.Param, ef.Term, ef.Estimate, ef.SE, ef.CI95[0], ef.CI95[1], p, nat)
	}
	for _, s := range rep.Spreads {
		fmt.Fprintf(tw, "%s\tSD across subjects\t%.4f\t%.4f\t[%.4f, %.4f]\t\t\n", s.Param, s.SD, s.SE, s.CI95[0], s.CI95[1])
	}
	tw.Flush()
}
