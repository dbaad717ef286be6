package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// ErrNoParameter is returned by NewSelection when every parameter is fixed or left out.
var ErrNoParameter = errors.New("no parameter left to fit")

// Selection says which of a likelihood's parameters are inferred (fitted or sampled) and at
// which values the others are held: at a value given to fix, or at the task's default.
// Inferred parameters are searched in their fitting scale within their bounds (models.Param
// Lo, Hi and Scale).
type Selection struct {
	spec    models.Spec
	infer   []int     // indices of the inferred parameters, in task order
	base    []float64 // every parameter in fitting scale: fixed values and defaults
	natural []float64 // the same in natural units, exactly as given
	lo, hi  []float64 // bounds of the inferred parameters in fitting scale
	ignored []string
}

// NewSelection returns the selection of the evaluator's parameters: infer names the inferred
// ones (nil means every parameter the likelihood depends on, Evaluator.Identifiable, that is
// not fixed) and fix holds parameters at values in natural units. It returns an error for an
// unknown or repeated name, a parameter both inferred and fixed, an inferred parameter the
// likelihood does not depend on, a fixed value outside the parameter's bounds, and
// ErrNoParameter when nothing is left to infer.
func NewSelection(e *likelihood.Evaluator, infer []string, fix map[string]float64) (*Selection, error) {
	spec := e.Spec()
	index := map[string]int{}
	for i, p := range spec.Params {
		index[p.Name] = i
	}
	known := strings.Join(spec.ParamNames(), ", ")
	s := &Selection{spec: spec, base: make([]float64, len(spec.Params)), natural: spec.Defaults()}
	for i, p := range spec.Params {
		s.base[i] = p.ToScale(p.Default)
	}
	fixed := map[int]bool{}
	for name, v := range fix {
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("--fix: task %s has no parameter %q; its parameters are %s", spec.Name, name, known)
		}
		p := spec.Params[i]
		if v < p.Lo || v > p.Hi || math.IsNaN(v) {
			return nil, fmt.Errorf("--fix %s=%g is outside its bounds [%g, %g]", name, v, p.Lo, p.Hi)
		}
		fixed[i] = true
		s.base[i] = p.ToScale(v)
		s.natural[i] = v
	}
	identifiable := e.Identifiable()
	if infer != nil {
		seen := map[int]bool{}
		for _, name := range infer {
			i, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("--infer: task %s has no parameter %q; its parameters are %s", spec.Name, name, known)
			}
			if seen[i] {
				return nil, fmt.Errorf("--infer: parameter %s given twice", name)
			}
			if fixed[i] {
				return nil, fmt.Errorf("parameter %s is both inferred and fixed", name)
			}
			if !identifiable[i] {
				o := e.Options()
				return nil, fmt.Errorf("--infer: the likelihood (method %s, observe %s, planner %s) does not depend on %s, so it cannot be inferred; leave it out of --infer",
					o.Method, o.Observe, o.Planner, name)
			}
			seen[i] = true
		}
		for i := range spec.Params {
			if seen[i] {
				s.infer = append(s.infer, i)
			}
		}
	} else {
		for i, ok := range identifiable {
			switch {
			case ok && !fixed[i]:
				s.infer = append(s.infer, i)
			case !ok && !fixed[i]:
				s.ignored = append(s.ignored, spec.Params[i].Name)
			}
		}
	}
	if len(s.infer) == 0 {
		return nil, ErrNoParameter
	}
	for _, i := range s.infer {
		p := spec.Params[i]
		s.lo = append(s.lo, p.ToScale(p.Lo))
		s.hi = append(s.hi, p.ToScale(p.Hi))
	}
	return s, nil
}

// Spec returns the evaluator's spec whose parameters the selection selects from.
func (s *Selection) Spec() models.Spec { return s.spec }

// Indices returns the indices in Spec().Params of the inferred parameters, in task order.
func (s *Selection) Indices() []int { return slices.Clone(s.infer) }

// Names returns the names of the inferred parameters, in task order.
func (s *Selection) Names() []string {
	names := make([]string, len(s.infer))
	for k, i := range s.infer {
		names[k] = s.spec.Params[i].Name
	}
	return names
}

// Bounds returns the bounds of the inferred parameters in their fitting scale.
func (s *Selection) Bounds() (lo, hi []float64) { return slices.Clone(s.lo), slices.Clone(s.hi) }

// Natural returns every parameter's value in natural units with the inferred ones at their
// defaults: the values at which the others are held.
func (s *Selection) Natural() []float64 { return slices.Clone(s.natural) }

// Full returns the full parameter vector in fitting scale with the inferred parameters at x
// (fitting scale, in the order of Names) and the others at their held values.
func (s *Selection) Full(x []float64) []float64 {
	th := slices.Clone(s.base)
	for k, i := range s.infer {
		th[i] = x[k]
	}
	return th
}

// Ignored returns, when no names were given to infer, the parameters held at their defaults,
// neither inferred nor fixed, because the likelihood does not depend on them
// (Evaluator.Identifiable); nil otherwise.
func (s *Selection) Ignored() []string { return slices.Clone(s.ignored) }
