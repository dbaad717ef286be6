package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior/ioc"
	"github.com/nioc-gpu/nioc-gpu/study"
)

// figureFlags are sample's flags for its figures.
type figureFlags struct {
	plots            bool
	truth, truthFile string
	ppc, ppcDraws    int
	figs             *sampleFigures // check's: the truths to mark; nil with --plots=false
}

func (ff *figureFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&ff.plots, "plots", true, "draw each subject's corner-SUBJECT.png and trace-SUBJECT.png in --out (--plots=false: none)")
	fs.StringVar(&ff.truth, "truth", "", "true values to mark on the figures, `name=value,...` (natural units; for data simulated with known parameters)")
	fs.StringVar(&ff.truthFile, "truth-file", "", "truth.csv of nioc-gpu eval (columns set, then the task's parameters): each subject's (set's) true values to mark; --truth overrides its values")
	fs.IntVar(&ff.ppc, "ppc", 0, "posterior predictive check: simulate N trials at each of --ppc-draws draws of each subject and draw them over its data in ppc-SUBJECT.png (0: none)")
	fs.IntVar(&ff.ppcDraws, "ppc-draws", ioc.DefaultPPCDraws, "posterior draws of each subject, evenly spread over its chains, that --ppc simulates at")
}

// sampleFigures draws the figures of the subjects as they are sampled.
type sampleFigures struct {
	dir    string
	truth  map[string]float64            // --truth, for every subject
	byID   map[string]map[string]float64 // --truth-file, by subject
	check  *ioc.Predictive
	trials map[string][][][]float64 // the subjects' data, for the check
}

// check checks the flags against the sampler's parameters (spec, temperature included when
// sampled) and reads --truth-file for subjects, before any work: a flag that cannot be
// honoured fails at once, not after the fit that --init fit runs first. m is the task, dir
// the output directory.
func (ff *figureFlags) check(spec models.Spec, m models.Model, dir string, subjects []fit.Subject, stderr io.Writer) error {
	switch {
	case ff.ppc < 0:
		return usagef("--ppc must be >= 0 trials, got %d", ff.ppc)
	case ff.ppcDraws < 1:
		return usagef("--ppc-draws must be >= 1, got %d", ff.ppcDraws)
	case !ff.plots && (ff.ppc > 0 || ff.truth != "" || ff.truthFile != ""):
		return usagef("--plots=false draws no figures: leave out --ppc, --truth and --truth-file")
	}
	names, vals, err := parseAssignments(ff.truth, "truth")
	if err != nil {
		return err
	}
	sf := &sampleFigures{dir: dir, truth: map[string]float64{}}
	for i, n := range names {
		idx := paramIndex(spec, n)
		if idx < 0 {
			return usagef("--truth: task %s has no parameter %q; its parameters are %s", spec.Name, n, strings.Join(spec.ParamNames(), ", "))
		}
		if err := spec.Params[idx].Validate(vals[i]); err != nil {
			return usagef("--truth: %v", err)
		}
		sf.truth[n] = vals[i]
	}
	if !ff.plots {
		return nil
	}
	if ff.truthFile != "" {
		truth, _, err := study.ReadTruth(ff.truthFile, m.Spec())
		if err != nil {
			return err
		}
		sf.byID = map[string]map[string]float64{}
		var missing []string
		for _, s := range subjects {
			th, ok := truth[s.ID]
			if !ok {
				missing = append(missing, s.ID)
				continue
			}
			sf.byID[s.ID] = map[string]float64{}
			for i, p := range m.Spec().Params {
				sf.byID[s.ID][p.Name] = th[i]
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "--truth-file: %s has no set %s: no truth marked for those subjects\n", ff.truthFile, strings.Join(missing, ", "))
		}
	}
	ff.figs = sf
	return nil
}

// parse returns what draws the figures of the subjects sampled by sampler (seed its seed),
// nil with --plots=false; check must have passed.
func (ff *figureFlags) parse(m models.Model, sampler *ioc.Sampler, seed uint64, subjects []fit.Subject) (*sampleFigures, error) {
	sf := ff.figs
	if sf == nil {
		return nil, nil
	}
	var err error
	if ff.ppc > 0 {
		if sf.check, err = sampler.Predictive(ioc.PPCOptions{Model: m, Trials: ff.ppc, Draws: ff.ppcDraws, Seed: seed}); err != nil {
			return nil, usageError{err}
		}
		sf.trials = map[string][][][]float64{}
		for _, s := range subjects {
			sf.trials[s.ID] = s.Trials
		}
	}
	return sf, nil
}

// write draws the figures of the results rs and reports failures with println: the draws are
// written already, so a figure that fails only warns.
func (sf *sampleFigures) write(sampler *ioc.Sampler, rs []ioc.Result, println func(string)) {
	if sf == nil {
		return
	}
	for _, r := range rs {
		truth := map[string]float64{}
		for k, v := range sf.byID[r.Subject] {
			truth[k] = v
		}
		for k, v := range sf.truth {
			truth[k] = v
		}
		o := ioc.FigureOptions{Truth: truth}
		if sf.check != nil {
			o.Check, o.Data = sf.check, sf.trials[r.Subject]
		}
		if _, err := sampler.WriteFigures(sf.dir, r, o); err != nil {
			println(fmt.Sprintf("warning: subject %s: figures: %v", r.Subject, err))
		}
	}
}

// files says which figures are written, for the final message.
func (sf *sampleFigures) files() string {
	if sf == nil {
		return ""
	}
	kinds := []string{ioc.CornerFigure, ioc.TraceFigure}
	if sf.check != nil {
		kinds = append(kinds, ioc.PPCFigure)
	}
	var out []string
	for _, k := range kinds {
		out = append(out, k+"-SUBJECT.png")
	}
	return ", " + strings.Join(out, ", ")
}
