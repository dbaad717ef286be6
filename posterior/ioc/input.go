package ioc

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior"
)

// ParsePriors parses priors written name=normal(mu,sd),name=uniform,… with mu and sd in the
// parameter's fitting scale (log10 or linear); uniform (also uniform()) is the default, a
// uniform prior on the parameter's box. It returns an error for an unknown family, a
// malformed entry, a parameter given twice, and a normal whose mean is not finite or whose sd
// is not a finite number > 0. Whether the names are sampled parameters is checked by New.
func ParsePriors(s string) (map[string]posterior.Prior, error) {
	out := map[string]posterior.Prior{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range splitTopLevel(s) {
		item = strings.TrimSpace(item)
		name, def, ok := strings.Cut(item, "=")
		name, def = strings.TrimSpace(name), strings.TrimSpace(def)
		if !ok || name == "" || def == "" {
			return nil, fmt.Errorf("--prior: %q is not name=normal(mu,sd) or name=uniform", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--prior: parameter %s given twice", name)
		}
		family, args := def, ""
		if i := strings.IndexByte(def, '('); i >= 0 {
			if !strings.HasSuffix(def, ")") {
				return nil, fmt.Errorf("--prior %s=%s: missing closing parenthesis", name, def)
			}
			family, args = strings.TrimSpace(def[:i]), strings.TrimSpace(def[i+1:len(def)-1])
		}
		switch family {
		case "uniform":
			if args != "" {
				return nil, fmt.Errorf("--prior %s=%s: uniform takes no arguments: it is uniform on the parameter's search box", name, def)
			}
			out[name] = posterior.Prior{}
		case "normal":
			parts := strings.Split(args, ",")
			if len(parts) != 2 {
				return nil, fmt.Errorf("--prior %s=%s: normal takes two numbers, normal(mu,sd)", name, def)
			}
			mu, err1 := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
			sd, err2 := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
			switch {
			case err1 != nil || err2 != nil:
				return nil, fmt.Errorf("--prior %s=%s: normal takes two numbers, normal(mu,sd)", name, def)
			case math.IsNaN(mu) || math.IsInf(mu, 0):
				return nil, fmt.Errorf("--prior %s=%s: the mean must be finite", name, def)
			case !(sd > 0) || math.IsInf(sd, 0):
				return nil, fmt.Errorf("--prior %s=%s: the sd must be a finite number > 0, got %g", name, def, sd)
			}
			out[name] = posterior.Prior{Mu: mu, SD: sd}
		default:
			return nil, fmt.Errorf("--prior %s=%s: unknown prior family %q: use normal(mu,sd) (in the parameter's fitting scale) or uniform", name, def, family)
		}
	}
	return out, nil
}

// splitTopLevel splits s at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// FormatPrior returns the prior as ParsePriors reads it.
func FormatPrior(p posterior.Prior) string {
	if p.SD == 0 {
		return "uniform"
	}
	return fmt.Sprintf("normal(%s,%s)", strconv.FormatFloat(p.Mu, 'g', -1, 64), strconv.FormatFloat(p.SD, 'g', -1, 64))
}

// ReadInit reads the estimates of the given subjects from a fit results file (package fit's
// JSON Lines) of the task of spec, in the fitting scales of spec's parameters. It returns them
// with the names among sampled that no estimate holds (such as a temperature the fit held
// fixed). It returns an error naming the file if it cannot be read, holds no results or
// results of another task, or lacks a successful fit of one of the subjects.
func ReadInit(path string, spec models.Spec, subjects, sampled []string) (map[string]Estimate, []string, error) {
	recs, err := fit.EstimatesOf(path, spec.Name, subjects)
	if err != nil {
		return nil, nil, fmt.Errorf("--init: %w", err)
	}
	out := map[string]Estimate{}
	var absent []string
	for _, id := range subjects {
		r := recs[id]
		// the estimates and the values the fit held fixed
		est := Estimate{Scaled: r.Scaled(spec), StdErr: r.StdErr, DataDigest: r.DataDigest}
		if r.Bootstrap != nil {
			est.Bias, est.DOF = r.Bootstrap.Bias, r.Bootstrap.DOF
		}
		for _, name := range sampled {
			if _, ok := est.Scaled[name]; !ok && !slices.Contains(absent, name) {
				absent = append(absent, name)
			}
		}
		out[id] = est
	}
	return out, absent, nil
}
