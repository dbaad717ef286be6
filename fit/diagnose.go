package fit

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

// diagnose sets res.Identified and res.Warnings for the estimate x (fitted parameters in
// fitting scale) of subject s, once the Laplace approximation is in res. The data do not
// determine an estimate when
//   - a parameter is on a bound of its box (res.AtBound: within 1e-6 in fitting scale): the likelihood
//     still rises beyond it, so the box, not the data, sets the value, and an interval around
//     it means little: profileAtBounds makes it one-sided (Profile). The policy noise's
//     temperature at its lower end is not a warning: it is the agent without policy noise, as
//     data from an agent that acts by its plan alone look (docs/intervals.md), and the other
//     estimates stand (boundSide);
//   - the Hessian of the negative log-likelihood is not positive definite: in some direction
//     the likelihood is flat or falls, so no standard errors exist;
//   - a standard error is wider than the parameter's box: the data barely constrain it;
//   - no trial moves: every state stays at its first value, so nothing in the data depends on
//     the parameters.
func (f *Fitter) diagnose(s Subject, x []float64, res *Result) {
	if res.Err != "" {
		return
	}
	var warn []string
	if still(s.Trials) {
		warn = append(warn, "the trials do not move (every state stays at its first value): nothing in these data depends on the parameters; check the data file's columns")
	}
	for k, i := range f.infer {
		p := f.spec.Params[i]
		if !slices.Contains(res.AtBound, p.Name) { // fitSubject's rule: within 1e-6 of a bound
			continue
		}
		lower, warned := f.boundSide(k, x)
		if !warned {
			continue
		}
		end, v := "upper", p.Hi
		if lower {
			end, v = "lower", p.Lo
		}
		warn = append(warn, fmt.Sprintf("%s is at its %s bound %s: the data would take it beyond, so the box sets this estimate, and its interval is one-sided, from the bound to the farthest value the profile likelihood allows; fix it (--fix %s=VALUE) or widen the box in a task file",
			p.Name, end, strconv.FormatFloat(v, 'g', -1, 64), p.Name))
	}
	if !res.HessianPD {
		warn = append(warn, "the Hessian at the estimate is not positive definite: the likelihood is flat or falls in some direction, so the parameters are not identified by these data (no standard errors); fix one of those that trade off, or give more trials")
	}
	for k, i := range f.infer {
		p := f.spec.Params[i]
		if se, ok := res.StdErr[p.Name]; ok && se > f.hi[k]-f.lo[k] {
			warn = append(warn, fmt.Sprintf("%s is barely constrained by these data: its standard error (%.3g in %s scale) is wider than its whole box; fix it (--fix %s=VALUE) or give more trials",
				p.Name, se, p.Scale, p.Name))
		}
	}
	res.Warnings = warn
	res.Identified = len(warn) == 0
}

// boundSide says, for fitted parameter k of the estimate x (fitting scale) on a bound of its
// box, whether that is the lower bound, and whether it is warned of (and its interval made
// one-sided): every parameter but the temperature at its lower end.
func (f *Fitter) boundSide(k int, x []float64) (lower, warned bool) {
	lower = x[k]-f.lo[k] < f.hi[k]-x[k]
	return lower, !(lower && f.spec.Params[f.infer[k]].Name == likelihood.TemperatureParam(0).Name)
}

// still reports whether no trial moves: every state of every trial equals the trial's first.
func still(trials [][][]float64) bool {
	for _, tr := range trials {
		if len(tr) == 0 {
			continue
		}
		for _, x := range tr[1:] {
			for j, v := range x {
				if v != tr[0][j] {
					return false
				}
			}
		}
	}
	return true
}
