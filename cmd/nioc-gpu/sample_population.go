package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/population"
	"github.com/nioc-gpu/nioc-gpu/posterior"
)

// The files of sample --population in its --out directory.
const (
	hierJSON  = "hierarchical.json"
	hierDraws = "draws.csv"
)

// hierReport is hierarchical.json: the posterior's summary beside the empirical-Bayes fit it
// started from.
type hierReport struct {
	From        string                 `json:"from"` // the population fit's directory
	Chains      int                    `json:"chains"`
	Warmup      int                    `json:"warmup"`
	Draws       int                    `json:"draws"`
	Seed        uint64                 `json:"seed"`
	Posterior   *population.HierResult `json:"posterior"`
	EmpiricalEB []population.Effect    `json:"empirical_bayes_effects"`
	Settings    population.Settings    `json:"settings"`
	Spreads     []population.Spread    `json:"empirical_bayes_spreads"`
}

// runSamplePopulation is sample --population DIR: the hierarchical posterior of the population
// fit in DIR (nioc-gpu population), its chains started at that fit.
func runSamplePopulation(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sample --population", "DIR --task NAME --data FILE.csv [--subjects subjects.csv --population-model \"~ group\"] [--chains 4] [--warmup 500] [--draws 1000] [--seed 1] [--target-accept 0.8] [--max-depth 10] [--max-memory auto|SIZE] [task and likelihood flags as for the population fit] --out DIR", stderr)
	var tf taskFlags
	tf.register(fs, true)
	var pf popFlags
	fs.StringVar(&pf.data, "data", "", "trajectory CSV with the subjects (the population fit's)")
	fs.StringVar(&pf.subjects, "subjects", "", "subjects table of the population fit")
	fs.StringVar(&pf.formula, "population-model", "~ 1", "the population fit's model")
	fs.StringVar(&pf.out, "out", "", "output directory: "+hierJSON+", "+hierDraws)
	fs.Uint64Var(&pf.seed, "seed", 1, "seed of the chains")
	fs.IntVar(&pf.maxBatch, "max-batch", 0, maxBatchDoc("subjects × chains × trials"))
	pf.maxMemory.register(fs)
	from := fs.String("population", "", "the output directory of the `nioc-gpu population` fit to sample from (its settings, and where the chains start)")
	chains := fs.Int("chains", 4, "chains")
	warmup := fs.Int("warmup", 500, "warm-up iterations per chain")
	draws := fs.Int("draws", 1000, "draws per chain after warm-up")
	targetAccept := fs.Float64("target-accept", 0.8, "target acceptance statistic, in (0, 1); raise it (e.g. 0.95) against divergences")
	maxDepth := fs.Int("max-depth", 10, "maximum tree depth of NUTS")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "population", "data", "out"); err != nil {
		return err
	}
	switch {
	case *chains < 1 || *draws < 1 || *warmup < 0 || *maxDepth < 1:
		return usagef("--chains, --draws and --max-depth must be >= 1 and --warmup >= 0")
	case !(*targetAccept > 0 && *targetAccept < 1):
		return usagef("--target-accept must be in (0, 1), got %g", *targetAccept)
	case checkMaxBatch(fs, pf.maxBatch) != nil:
		return checkMaxBatch(fs, pf.maxBatch)
	}
	rep, last, err := readPopulationFit(*from)
	if err != nil {
		return err
	}
	h, X, err := hierarchicalOf(&tf, &pf, rep, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(pf.out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := hierReport{From: *from, Chains: *chains, Warmup: *warmup, Draws: *draws, Seed: pf.seed, EmpiricalEB: rep.Effects, Spreads: rep.Spreads, Settings: rep.Settings}
	start := startOf(h, last)
	fmt.Fprintf(stderr, "sampling the hierarchical posterior of %d subject(s) (%d dimensions), %d chains × (%d warm-up + %d draws), from the population fit in %s\n",
		len(X), h.Dim(), *chains, *warmup, *draws, *from)
	t0 := time.Now()
	res, all, err := h.Sample(ctx, posterior.Options{Chains: *chains, Warmup: *warmup, Draws: *draws, Seed: pf.seed, TargetAccept: *targetAccept, MaxDepth: *maxDepth},
		start, rep.Settings.Fitted, rep.Settings.Columns)
	if err != nil {
		return err
	}
	res.Seconds = time.Since(t0).Seconds()
	out.Posterior = res
	raw, _ := json.MarshalIndent(out, "", "  ")
	if err := os.WriteFile(filepath.Join(pf.out, hierJSON), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	if err := population.WriteDraws(filepath.Join(pf.out, hierDraws), all, rep.Settings.Fitted, rep.Settings.Columns, rep.Settings.Subjects); err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	printHierarchical(stdout, &out)
	return nil
}

// readPopulationFit reads the report and the last EM step of the population fit in dir.
func readPopulationFit(dir string) (*population.Report, population.Step, error) {
	rep, err := population.ReadReport(filepath.Join(dir, popJSON))
	if err != nil {
		return nil, population.Step{}, fmt.Errorf("--population: %w (run nioc-gpu population first)", err)
	}
	_, steps, err := population.ReadSteps(filepath.Join(dir, popSteps))
	if err != nil {
		return nil, population.Step{}, fmt.Errorf("--population: %w", err)
	}
	if len(steps) == 0 || steps[len(steps)-1].Iter != rep.Steps {
		return nil, population.Step{}, fmt.Errorf("--population: %s does not end with the step of %s", popSteps, popJSON)
	}
	return rep, steps[len(steps)-1], nil
}

// hierarchicalOf returns the hierarchical posterior of the population fit rep for the
// task, likelihood and data of the flags, which must be the fit's, evaluated within
// --max-memory (notes on stderr).
func hierarchicalOf(tf *taskFlags, pf *popFlags, rep *population.Report, stderr io.Writer) (*population.Hierarchical, [][]float64, error) {
	m, err := tf.model()
	if err != nil {
		return nil, nil, err
	}
	formula, table, err := pf.model()
	if err != nil {
		return nil, nil, err
	}
	opts, err := tf.likelihoodOptions(m.Spec())
	if err != nil {
		return nil, nil, err
	}
	set, opts, err := readPlanned(tf, pf.data, &pf.maxBatch, m, opts, pf.maxMemory, stderr)
	if err != nil {
		return nil, nil, err
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return nil, nil, err
	}
	X, columns, err := design(table, formula, rep.Settings.Subjects)
	if err != nil {
		return nil, nil, err
	}
	digests := set.Digests()
	var differ []string
	for _, id := range rep.Settings.Subjects {
		if digests[id] != rep.Settings.DataDigests[id] {
			differ = append(differ, id)
		}
	}
	switch {
	case e.TaskDigest() != rep.Settings.TaskDigest || string(e.Options().Observe) != rep.Settings.Observe || likelihoodText(e) != rep.Settings.Likelihood:
		return nil, nil, fmt.Errorf("--population: the fit was of task %s (%s observability; %s): give the same task and likelihood flags", rep.Settings.Task, rep.Settings.Observe, rep.Settings.Likelihood)
	case len(differ) > 0:
		return nil, nil, fmt.Errorf("--population: --data %s holds other data than the fit's for subject(s) %v", pf.data, differ)
	case !slices.Equal(columns, rep.Settings.Columns):
		return nil, nil, fmt.Errorf("--population: the fit's model has terms %v, --population-model %q gives %v", rep.Settings.Columns, formula, columns)
	}
	h, err := population.NewHierarchical(e, fit.Options{Infer: rep.Settings.Fitted, MaxBatch: pf.maxBatch}, subjectsOf(set, rep.Settings.Subjects), X)
	return h, X, err
}

// startOf returns the point of h at the empirical-Bayes step: each subject's MAP, the
// population's effects and spreads.
func startOf(h *population.Hierarchical, s population.Step) []float64 {
	theta := make([][]float64, len(s.Subjects))
	for i, sf := range s.Subjects {
		theta[i] = sf.MAP
	}
	sd := make([]float64, len(s.Prior.Var))
	for k, v := range s.Prior.Var {
		sd[k] = math.Sqrt(v)
	}
	return h.Pack(theta, s.Prior.Beta, sd)
}

// printHierarchical prints the posterior of the population beside the empirical-Bayes fit.
func printHierarchical(stdout io.Writer, r *hierReport) {
	p := r.Posterior
	fmt.Fprintf(stdout, "hierarchical posterior (%d chains × %d draws, %d divergent, max R-hat %.3f, min bulk ESS %.0f, %.0f s) beside the empirical-Bayes fit\n\n",
		r.Chains, r.Draws, p.Divergences, p.MaxRHat, p.MinESS, p.Seconds)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tterm\tposterior mean\tsd\t95% interval\tP(>0)\tempirical Bayes\tSE")
	for i, ef := range p.Effects {
		pp := ""
		if ef.PPositive != nil {
			pp = fmt.Sprintf("%.3f", *ef.PPositive)
		}
		eb := r.EmpiricalEB[i]
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t[%.4f, %.4f]\t%s\t%.4f\t%.4f\n", ef.Param, ef.Term, ef.Mean, ef.SD, ef.Q025, ef.Q975, pp, eb.Estimate, eb.SE)
	}
	for i, s := range p.Spreads {
		fmt.Fprintf(tw, "%s\tSD across subjects\t%.4f\t%.4f\t[%.4f, %.4f]\t\t%.4f\t%.4f\n", s.Param, s.Mean, s.SD, s.Q025, s.Q975, r.Spreads[i].SD, r.Spreads[i].SE)
	}
	tw.Flush()
}
