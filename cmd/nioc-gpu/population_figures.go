package main

// The figures of a population fit, drawn into --out after its report: population.png (each
// fitted parameter's population normal by group, the subjects' estimates under it) and
// shrinkage.png (each subject's estimate fitted alone against its estimate under the
// population), with the subjects' true values where --truth gives them.

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
	"github.com/nioc-gpu/nioc-gpu/population"
	"github.com/nioc-gpu/nioc-gpu/study"
)

// The figures a population fit draws in its --out directory.
const (
	popDensities = "population.png" // the population normals by group
	popShrinkage = "shrinkage.png"  // independent against population estimates
)

// popGroup is a group of subjects in the figures: the subjects of one level of each
// categorical term of the population model.
type popGroup struct {
	name string    // "group b", "group b, site x"; "" for a model without categorical terms
	row  []float64 // its design row: the intercept, its levels' columns, numeric covariates at their average (0)
}

// figures draws the figures of the report rep (fitted with the likelihood of e; the subjects
// table table, nil without --subjects) into --out, marking the true values of --truth. A
// figure that cannot be drawn is a warning on stderr, not a failure of the fit.
func (pf *popFlags) figures(rep *population.Report, e *likelihood.Evaluator, table *population.Subjects, stderr io.Writer) {
	spec := e.Spec()
	task := spec // the task's parameters, those of a truth file: without a fitted temperature
	if e.Options().FitTemperature {
		task.Params = spec.Params[:len(spec.Params)-1] // likelihood.New appends it
	}
	truth := pf.readTruth(rep, task, stderr)
	groups, of, numeric, err := popGroups(rep, table)
	if err != nil {
		fmt.Fprintf(stderr, "warning: no figures of the population: %v\n", err)
		return
	}
	dens, shr := popPanels(rep, spec, groups, of, truth)
	what := fmt.Sprintf("population fit of %d subjects, %s", len(rep.Subjects), rep.Settings.Formula)
	if !rep.Converged {
		what += " (EM NOT converged)"
	}
	if len(numeric) > 0 {
		what += "; population means at the average " + strings.Join(numeric, " and ")
	}
	for _, fig := range []struct {
		file string
		draw func(path string) error
	}{
		{popDensities, func(path string) error {
			return plots.PopulationDensities(path, what+"\neach parameter's population normal by group (fitting scale)", dens)
		}},
		{popShrinkage, func(path string) error {
			return plots.Shrinkage(path, what+"\neach subject's estimate fitted alone (x) and under the population (y)", shr)
		}},
	} {
		if err := fig.draw(filepath.Join(pf.out, fig.file)); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
}

// readTruth reads --truth: each subject's true parameters (natural units, spec's order), nil
// without --truth or when the file cannot be read (a warning). It warns of subjects of rep
// that the file lacks.
func (pf *popFlags) readTruth(rep *population.Report, spec models.Spec, stderr io.Writer) map[string][]float64 {
	if pf.truth == "" {
		return nil
	}
	truth, _, err := study.ReadTruth(pf.truth, spec)
	if err != nil {
		fmt.Fprintf(stderr, "warning: --truth: %v: the figures mark no true values (fix the file and rerun with --resume to draw them)\n", err)
		return nil
	}
	var missing []string
	for _, s := range rep.Subjects {
		if _, ok := truth[s.Subject]; !ok {
			missing = append(missing, s.Subject)
		}
	}
	if len(missing) > 0 {
		if len(missing) > 10 {
			missing = append(missing[:10], fmt.Sprintf("… (%d in all)", len(missing)))
		}
		fmt.Fprintf(stderr, "warning: --truth: %s has no row for subject(s) %s: no truth marked for them\n", pf.truth, strings.Join(missing, ", "))
	}
	return truth
}

// popGroups returns the groups of the report's subjects (the combinations of their levels of
// the model's categorical terms, in sorted order; one group without such terms), each
// subject's group (rep.Subjects' order) and the model's numeric terms. The subjects table
// must make the design the fit had.
func popGroups(rep *population.Report, table *population.Subjects) ([]popGroup, []int, []string, error) {
	cols := rep.Settings.Columns
	of := make([]int, len(rep.Subjects))
	if table == nil {
		return []popGroup{{row: rowOfGroup([]float64{1}, cols, nil)}}, of, nil, nil
	}
	formula, err := population.ParseFormula(rep.Settings.Formula)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := make([]string, len(rep.Subjects))
	for i, s := range rep.Subjects {
		ids[i] = s.Subject
	}
	X, names, err := population.Design(table, formula, ids)
	if err != nil {
		return nil, nil, nil, err
	}
	if !slices.Equal(names, cols) {
		return nil, nil, nil, fmt.Errorf("%s makes the design columns %q, the fit has %q", table.Path, names, cols)
	}
	var numeric []string // a numeric term's one column is named as the term
	for _, term := range formula.Terms {
		if slices.Contains(cols, term) {
			numeric = append(numeric, term)
		}
	}
	labels := make([]string, len(ids))
	var groups []popGroup
	for i, id := range ids {
		var levels []string
		for _, term := range formula.Terms {
			if !slices.Contains(numeric, term) {
				levels = append(levels, term+" "+table.Rows[id][slices.Index(table.Columns, term)])
			}
		}
		labels[i] = strings.Join(levels, ", ")
		if !slices.ContainsFunc(groups, func(g popGroup) bool { return g.name == labels[i] }) {
			groups = append(groups, popGroup{name: labels[i], row: rowOfGroup(X[i], cols, numeric)})
		}
	}
	slices.SortFunc(groups, func(a, b popGroup) int { return strings.Compare(a.name, b.name) })
	for i := range of {
		of[i] = slices.IndexFunc(groups, func(g popGroup) bool { return g.name == labels[i] })
	}
	return groups, of, numeric, nil
}

// rowOfGroup returns a subject's design row x (columns cols; an intercept alone is padded
// with zeros) with its numeric covariates at their average (0): the row of its group's mean.
func rowOfGroup(x []float64, cols, numeric []string) []float64 {
	row := make([]float64, len(cols))
	copy(row, x)
	for j, c := range cols {
		if slices.Contains(numeric, c) {
			row[j] = 0
		}
	}
	return row
}

// popPanels returns the panels of the figures of rep: a panel per fitted parameter, a group
// per groups (the subjects i with of[i] == g), each group's mean its design row times the
// effects, the truths (natural units by subject in the order of spec's parameters, which
// may add a temperature after them; nil: none) in fitting scale.
func popPanels(rep *population.Report, spec models.Spec, groups []popGroup, of []int, truth map[string][]float64) ([]plots.DensityPanel, []plots.ShrinkagePanel) {
	var dens []plots.DensityPanel
	var shr []plots.ShrinkagePanel
	for k, name := range rep.Settings.Fitted {
		par, _ := spec.Param(name)
		tk := paramIndex(spec, name) // in the task's parameters, a truth's order
		dp := plots.DensityPanel{Param: name, Scale: par.Scale, Groups: make([]plots.DensityGroup, len(groups))}
		sp := plots.ShrinkagePanel{Param: name, Scale: par.Scale, Groups: make([]plots.ShrinkageGroup, len(groups))}
		for g, gr := range groups {
			mean := 0.0
			for _, ef := range rep.Effects {
				if j := slices.Index(rep.Settings.Columns, ef.Term); ef.Param == name && j >= 0 {
					mean += gr.row[j] * ef.Estimate
				}
			}
			dp.Groups[g] = plots.DensityGroup{Name: gr.name, Mean: mean, SD: rep.Spreads[k].SD}
			sp.Groups[g] = plots.ShrinkageGroup{Name: gr.name, Mean: mean}
		}
		for i, s := range rep.Subjects {
			d, h := &dp.Groups[of[i]], &sp.Groups[of[i]]
			d.Estimates = append(d.Estimates, s.Shrunk[name])
			h.Independent, h.Shrunk = append(h.Independent, s.Independent[name]), append(h.Shrunk, s.Shrunk[name])
			h.IndependentSE, h.ShrunkSE = append(h.IndependentSE, seOf(s.IndependentSE, name)), append(h.ShrunkSE, seOf(s.ShrunkSE, name))
			if truth != nil {
				v := math.NaN()
				if th, ok := truth[s.Subject]; ok && tk >= 0 && tk < len(th) { // a fitted temperature has none
					v = par.ToScale(th[tk])
				}
				d.Truths, h.Truths = append(d.Truths, v), append(h.Truths, v)
			}
		}
		dens, shr = append(dens, dp), append(shr, sp)
	}
	return dens, shr
}

// seOf returns the standard error of parameter name in se, NaN where it has none (a
// subject whose Hessian was not positive definite).
func seOf(se map[string]float64, name string) float64 {
	if v, ok := se[name]; ok {
		return v
	}
	return math.NaN()
}
