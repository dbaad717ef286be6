package study

// A population of simulated subjects (simulate --population): each subject's parameters drawn
// from normal distributions in the parameters' fitting scale, the means shifted by the
// subject's group, and the files beside the data that say what was drawn: the truths (one row
// per subject, natural units) and the subjects table (subject,group) that a population fit
// reads with its formula.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/models"
)

// DefaultGroup is the name of the single group of a population given no groups.
const DefaultGroup = "all"

// Population is where simulate --population draws its subjects' parameters: each drawn
// parameter normal in its fitting scale (models.Param.ToScale), its mean shifted by the
// subject's group, the draws truncated to the parameter's search box.
type Population struct {
	Params []PopulationParam // the drawn parameters, in the task's order
	Groups []Group           // the groups of subjects, in order; at least one
}

// PopulationParam is a drawn parameter: normal with Mean and SD in its fitting scale.
type PopulationParam struct {
	Name     string
	Index    int     // in the task's parameters
	Mean, SD float64 // fitting scale
}

// Group is a group of a population's subjects.
type Group struct {
	Name     string
	Subjects int
	Shift    map[string]float64 // parameter → shift of its mean, fitting scale; nil: none
}

// NewPopulation returns the population of the task of spec that simulate's flags give:
// population "name=mean:sd,..." (fitting scale), groups "name=count,..." ("": one group,
// DefaultGroup, of subjects subjects) and effects "GROUP:name=shift,..." (fitting scale; an
// item without "GROUP:" shifts the previous item's group). An unknown parameter, group or
// malformed item, a parameter or group given twice, an sd ≤ 0, a count < 1, a shift of a
// parameter that is not drawn and a group's mean outside the parameter's search box are
// errors, starting "population: ", "groups: " or "group-effect: ", the part that is wrong.
func NewPopulation(spec models.Spec, population, groups, effects string, subjects int) (*Population, error) {
	params, err := parsePopulationParams(spec, population)
	if err != nil {
		return nil, fmt.Errorf("population: %w", err)
	}
	p := &Population{Params: params}
	if p.Groups, err = parseGroups(groups, subjects); err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	if err := p.parseEffects(effects); err != nil {
		return nil, fmt.Errorf("group-effect: %w", err)
	}
	if err := p.checkBox(spec); err != nil {
		return nil, fmt.Errorf("population: %w", err)
	}
	return p, nil
}

// parsePopulationParams parses "name=mean:sd,..." for the task of spec, in the task's order.
func parsePopulationParams(spec models.Spec, s string) ([]PopulationParam, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no parameters: give name=mean:sd,... in the parameters' fitting scale")
	}
	var out []PopulationParam
	for _, item := range strings.Split(s, ",") {
		name, ms, ok := strings.Cut(strings.TrimSpace(item), "=")
		name = strings.TrimSpace(name)
		mean, sd, okMS := strings.Cut(ms, ":")
		if !ok || !okMS || name == "" {
			return nil, fmt.Errorf("%q is not name=mean:sd (mean and sd in the parameter's fitting scale, e.g. action_cost=-2.5:0.1)", item)
		}
		i := slices.IndexFunc(spec.Params, func(p models.Param) bool { return p.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("task %s has no parameter %q; its parameters are %s", spec.Name, name, strings.Join(spec.ParamNames(), ", "))
		}
		if slices.ContainsFunc(out, func(p PopulationParam) bool { return p.Name == name }) {
			return nil, fmt.Errorf("parameter %s given twice", name)
		}
		pp := PopulationParam{Name: name, Index: i}
		var err error
		if pp.Mean, err = finite(mean); err != nil {
			return nil, fmt.Errorf("%s: mean %q is not a number", name, mean)
		}
		if pp.SD, err = finite(sd); err != nil || pp.SD <= 0 {
			return nil, fmt.Errorf("%s: sd %q must be a number > 0 (for a parameter that does not vary, give its value with --params)", name, sd)
		}
		out = append(out, pp)
	}
	slices.SortFunc(out, func(a, b PopulationParam) int { return a.Index - b.Index })
	return out, nil
}

// finite parses a finite number.
func finite(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = fmt.Errorf("%q is not finite", s)
	}
	return v, err
}

// parseGroups parses "name=count,...", or returns one group of subjects when s is empty.
func parseGroups(s string, subjects int) ([]Group, error) {
	if strings.TrimSpace(s) == "" {
		return []Group{{Name: DefaultGroup, Subjects: subjects}}, nil
	}
	var out []Group
	for _, item := range strings.Split(s, ",") {
		name, count, ok := strings.Cut(strings.TrimSpace(item), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("group %q is not name=count (e.g. control=20)", item)
		}
		if strings.ContainsAny(name, ":=\" \t") {
			return nil, fmt.Errorf("group name %q: a group's name has no spaces, quotes, ':' or '='", name)
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("group %s: %q subjects; a group has an integer count >= 1", name, count)
		}
		if slices.ContainsFunc(out, func(g Group) bool { return g.Name == name }) {
			return nil, fmt.Errorf("group %s given twice", name)
		}
		out = append(out, Group{Name: name, Subjects: n})
	}
	return out, nil
}

// parseEffects parses "GROUP:name=shift,..." into the groups' shifts; an item without GROUP:
// is of the previous item's group.
func (p *Population) parseEffects(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var g *Group
	for _, item := range strings.Split(s, ",") {
		assign := strings.TrimSpace(item)
		if group, rest, ok := strings.Cut(assign, ":"); ok {
			i := slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == strings.TrimSpace(group) })
			if i < 0 {
				return fmt.Errorf("group effect %q: no group %q; the groups are %s", item, strings.TrimSpace(group), p.groupNames())
			}
			g, assign = &p.Groups[i], rest
		}
		name, shift, ok := strings.Cut(assign, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || g == nil {
			return fmt.Errorf("group effect %q is not GROUP:name=shift (the shift of the group's mean in the parameter's fitting scale, e.g. patient:motor_noise=0.2)", item)
		}
		if !slices.ContainsFunc(p.Params, func(pp PopulationParam) bool { return pp.Name == name }) {
			return fmt.Errorf("group effect %q: %s is not a parameter of the population; give its mean:sd there", item, name)
		}
		v, err := finite(shift)
		if err != nil {
			return fmt.Errorf("group effect %q: the shift %q is not a number", item, shift)
		}
		if _, ok := g.Shift[name]; ok {
			return fmt.Errorf("group effect %s:%s given twice", g.Name, name)
		}
		if g.Shift == nil {
			g.Shift = map[string]float64{}
		}
		g.Shift[name] = v
	}
	return nil
}

// groupNames returns the groups' names joined by commas.
func (p *Population) groupNames() string {
	var names []string
	for _, g := range p.Groups {
		names = append(names, g.Name)
	}
	return strings.Join(names, ", ")
}

// checkBox returns an error if a group's mean of a parameter lies outside the parameter's
// search box: most of its subjects could not be fitted back.
func (p *Population) checkBox(spec models.Spec) error {
	for _, g := range p.Groups {
		for _, pp := range p.Params {
			par := spec.Params[pp.Index]
			lo, hi, mean := par.ToScale(par.Lo), par.ToScale(par.Hi), pp.Mean+g.Shift[pp.Name]
			if mean < lo || mean > hi {
				return fmt.Errorf("%s of group %s: mean %g (%s scale, %g in natural units) lies outside its search box [%g, %g] (%s scale: [%g, %g]): a fit cannot recover it",
					pp.Name, g.Name, mean, par.Scale, par.FromScale(mean), par.Lo, par.Hi, par.Scale, lo, hi)
			}
		}
	}
	return nil
}

// Subjects returns the number of subjects of all groups.
func (p *Population) Subjects() int {
	n := 0
	for _, g := range p.Groups {
		n += g.Subjects
	}
	return n
}

// Mean returns the mean of parameter pp in group g, fitting scale.
func (p *Population) Mean(pp PopulationParam, g Group) float64 { return pp.Mean + g.Shift[pp.Name] }

// Draws are the subjects a population drew (Population.Draw).
type Draws struct {
	IDs    []string    // the subjects' IDs, SubjectID
	Groups []string    // each subject's group
	Thetas [][]float64 // each subject's parameters, natural units, the task's order
	// Redrawn counts, per drawn parameter (Population.Params), the draws that fell outside
	// its search box and were drawn again inside it.
	Redrawn []int
}

// SubjectID returns the ID of subject i (counted from 0) of n: s001, s002, …, with more
// digits when n > 999.
func SubjectID(i, n int) string {
	return fmt.Sprintf("s%0*d", max(3, len(strconv.Itoa(n))), i+1)
}

// populationStream is the stream of the generators of Draw, apart from the simulations'.
const populationStream = 0x706f70 << 32

// Draw draws the parameters of each of the population's subjects, group after group in
// order: the drawn parameters normal with their group's mean and their sd in their fitting
// scale, truncated to their search box (a draw outside is drawn again from the normal
// restricted to the box, and counted in Redrawn); the other parameters at base (natural
// units, the task's order). Subject i's draws come from a generator of its own seeded with
// seed and i, so adding subjects changes none of the others.
func (p *Population) Draw(spec models.Spec, base []float64, seed uint64) *Draws {
	n := p.Subjects()
	d := &Draws{Redrawn: make([]int, len(p.Params))}
	for _, g := range p.Groups {
		for range g.Subjects {
			i := len(d.IDs)
			rng := rand.New(rand.NewPCG(seed, populationStream|uint64(i)))
			theta := slices.Clone(base)
			for k, pp := range p.Params {
				par := spec.Params[pp.Index]
				x, redrawn := truncatedNormal(rng, p.Mean(pp, g), pp.SD, par.ToScale(par.Lo), par.ToScale(par.Hi))
				theta[pp.Index] = par.FromScale(x)
				if redrawn {
					d.Redrawn[k]++
				}
			}
			d.IDs, d.Groups, d.Thetas = append(d.IDs, SubjectID(i, n)), append(d.Groups, g.Name), append(d.Thetas, theta)
		}
	}
	return d
}

// truncatedNormal draws from the normal of mean and sd restricted to [lo, hi], which holds
// the mean: a draw of the normal, or, when it falls outside (redrawn), one by inverting the
// normal's distribution function on [Φ(lo), Φ(hi)].
func truncatedNormal(rng *rand.Rand, mean, sd, lo, hi float64) (x float64, redrawn bool) {
	x = mean + sd*rng.NormFloat64()
	if x >= lo && x <= hi {
		return x, false
	}
	phi := func(v float64) float64 { return 0.5 * math.Erfc(-(v-mean)/sd/math.Sqrt2) }
	a, b := phi(lo), phi(hi)
	u := a + rng.Float64()*(b-a)
	x = mean - sd*math.Sqrt2*math.Erfcinv(2*u)
	return min(max(x, lo), hi), true
}

// WriteTruth writes the subjects' true parameters to a new CSV file at path: a header
// "subject", "group" and the task's parameter names (spec), then one row per subject, its
// parameters in natural units. ReadTruth reads it.
func (d *Draws) WriteTruth(path string, spec models.Spec) error {
	rows := [][]string{append([]string{SubjectHeader, GroupHeader}, spec.ParamNames()...)}
	for i, th := range d.Thetas {
		row := []string{d.IDs[i], d.Groups[i]}
		for _, v := range th {
			row = append(row, fmtFloat(v))
		}
		rows = append(rows, row)
	}
	return writeCSV(path, rows)
}

// WriteSubjects writes the subjects table of the draws to a new CSV file at path: a header
// "subject,group", then one row per subject (population.ReadSubjects reads it).
func (d *Draws) WriteSubjects(path string) error {
	rows := [][]string{{SubjectHeader, GroupHeader}}
	for i, id := range d.IDs {
		rows = append(rows, []string{id, d.Groups[i]})
	}
	return writeCSV(path, rows)
}

// The first columns of a population's truth file and subjects table.
const (
	SubjectHeader = "subject"
	GroupHeader   = "group"
)
