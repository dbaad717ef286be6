package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

// populationFlags are simulate's flags of a population of subjects (--population).
type populationFlags struct {
	population, groups, effects, truth, subjectsOut string
}

func (pf *populationFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&pf.population, "population", "", "draw each subject's parameters from a population, name=mean:sd,...: normal with that mean and sd in the parameter's fitting scale (log10 for log-scaled ones, see the tasks command), truncated to its search box; a parameter not named: its --params value or the task's default")
	fs.StringVar(&pf.groups, "groups", "", "with --population: groups of subjects, name=count,... in this order (default: one group \""+study.DefaultGroup+"\" of --subjects subjects)")
	fs.StringVar(&pf.effects, "group-effect", "", "with --groups: GROUP:name=shift,... shifts the mean of the --population parameter name in group GROUP by shift, in its fitting scale (an item without GROUP: is of the previous item's group)")
	fs.StringVar(&pf.truth, "truth", "", "with --population: the subjects' true parameters, CSV subject,group,<parameters> in natural units (default: beside --out, data.csv → data.truth.csv)")
	fs.StringVar(&pf.subjectsOut, "subjects-out", "", "with --population: the subjects table, CSV subject,group, as a population fit reads it (default: beside --out, data.csv → data.subjects.csv)")
}

// populationOnly are the flags that only --population takes.
var populationOnly = []string{"groups", "group-effect", "truth", "subjects-out"}

// draw returns the population of --population (nil without it) for the task of spec and the
// subjects drawn from it, the parameters not drawn at sim.Theta (--params, params, or the
// task's defaults), and sets the simulation sim to simulate them. It warns on stderr of a
// parameter not drawn outside its search box; without --population, of every parameter.
func (pf *populationFlags) draw(fs *flag.FlagSet, spec models.Spec, sim *study.Simulation, params string, stderr io.Writer) (*study.Population, *study.Draws, error) {
	if pf.population == "" {
		for _, name := range populationOnly {
			if isSet(fs, name) {
				return nil, nil, usagef("--%s needs --population (a population of subjects to draw)", name)
			}
		}
		warnParamsOutsideBox(stderr, spec, params, "params", sim.Theta)
		return nil, nil, nil
	}
	if isSet(fs, "subjects") && isSet(fs, "groups") {
		return nil, nil, usagef("--subjects with --groups: give each group's subjects in --groups (e.g. control=20,patient=20)")
	}
	pop, err := study.NewPopulation(spec, pf.population, pf.groups, pf.effects, sim.Subjects)
	if err != nil {
		return nil, nil, usagef("--%v", err)
	}
	given, _, _ := parseAssignments(params, "params") // valid: paramValues parsed it
	for _, pp := range pop.Params {
		if slices.Contains(given, pp.Name) {
			return nil, nil, usagef("--params and --population both give %s: a drawn parameter has no fixed value; leave it out of one of them", pp.Name)
		}
	}
	for i, name := range spec.ParamNames() {
		if !slices.ContainsFunc(pop.Params, func(pp study.PopulationParam) bool { return pp.Name == name }) {
			what := ""
			if slices.Contains(given, name) {
				what = "params"
			}
			warnOutsideBox(stderr, spec, what, []string{name}, []float64{sim.Theta[i]})
		}
	}
	d := pop.Draw(spec, sim.Theta, sim.Seed)
	sim.Thetas, sim.IDs, sim.Subjects = d.Thetas, d.IDs, len(d.IDs)
	return pop, d, nil
}

// paths returns the truth file and the subjects table of the data file out: --truth and
// --subjects-out, by default beside out. Paths that coincide are a usage error.
func (pf *populationFlags) paths(out string) (truth, subjects string, err error) {
	base := strings.TrimSuffix(out, filepath.Ext(out))
	if filepath.Ext(out) != ".csv" {
		base = out
	}
	truth, subjects = pf.truth, pf.subjectsOut
	if truth == "" {
		truth = base + ".truth.csv"
	}
	if subjects == "" {
		subjects = base + ".subjects.csv"
	}
	for _, c := range []struct{ flag, path string }{{"truth", truth}, {"subjects-out", subjects}} {
		if err := refuseDir(c.flag, c.path); err != nil {
			return "", "", err
		}
	}
	switch {
	case samePath(truth, out) || samePath(subjects, out):
		return "", "", usagef("--truth and --subjects-out must differ from --out (%s)", out)
	case samePath(truth, subjects):
		return "", "", usagef("--truth and --subjects-out are the same file %s", truth)
	}
	return truth, subjects, nil
}

// samePath reports whether the paths a and b name the same file, whether or not it exists.
func samePath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB || sameFile(a, b)
}

// reportPopulation says on stderr which population pop the subjects d were drawn from, the
// draws redrawn inside the search box, and where the truths and subjects table went.
func reportPopulation(stderr io.Writer, spec models.Spec, pop *study.Population, d *study.Draws, truth, subjects string) {
	var groups []string
	for _, g := range pop.Groups {
		groups = append(groups, fmt.Sprintf("%s %d", g.Name, g.Subjects))
	}
	fmt.Fprintf(stderr, "population of %d subject(s) (%s); each parameter normal in its fitting scale:\n", len(d.IDs), strings.Join(groups, ", "))
	for k, pp := range pop.Params {
		par := spec.Params[pp.Index]
		var means []string
		for _, g := range pop.Groups {
			m := pop.Mean(pp, g)
			means = append(means, fmt.Sprintf("%s %.6g (natural %.4g)", g.Name, m, par.FromScale(m)))
		}
		fmt.Fprintf(stderr, "  %s, %s scale: sd %g; mean %s\n", pp.Name, par.Scale, pp.SD, strings.Join(means, ", "))
		if n := d.Redrawn[k]; n > 0 {
			fmt.Fprintf(stderr, "note: %d of %d draws of %s fell outside its search box [%g, %g] and were drawn again inside it (a truncated normal): its subjects' spread is narrower than sd %g, and a population fit will find it so\n",
				n, len(d.IDs), pp.Name, par.Lo, par.Hi, pp.SD)
		}
	}
	fmt.Fprintf(stderr, "wrote the subjects' true parameters (natural units) to %s and the subjects table (subject,group) to %s\n", truth, subjects)
}
