package study

import (
	"math"
	"slices"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Latest returns the records of recs that a comparison uses, each subject's last one where
// recs (a results file) hold several (the latest fit appended), in the order of those
// records; with the subjects that appear more than once, and those of the kept records whose
// estimate the data do not determine (fit.Record.Identified false), in order.
func Latest(recs []fit.Record) (latest []fit.Record, repeated, unidentified []string) {
	last := map[string]int{}
	for i, r := range recs {
		last[r.Subject] = i
	}
	for i, r := range recs {
		if last[r.Subject] != i {
			if !slices.Contains(repeated, r.Subject) {
				repeated = append(repeated, r.Subject)
			}
			continue
		}
		if r.Identified != nil && !*r.Identified {
			unidentified = append(unidentified, r.Subject)
		}
		latest = append(latest, r)
	}
	return latest, repeated, unidentified
}

// Comparison sets the estimates of one parameter by a set of records beside its true value.
type Comparison struct {
	N      int     // records that fitted the parameter (fit.Record.Fitted); 0: not fitted
	Median float64 // median of their estimates, natural units; NaN when N is 0
	// RelErrors are |estimate − truth| / |truth| of each estimate; none for a true value of 0.
	RelErrors []float64
}

// Compare returns how the records recs estimate each parameter of spec, in spec's order,
// against its true value truth[i] (natural units).
func Compare(spec models.Spec, truth []float64, recs []fit.Record) []Comparison {
	out := make([]Comparison, len(spec.Params))
	for i, p := range spec.Params {
		var est []float64
		c := &out[i]
		for _, r := range recs {
			if v, ok := r.Params[p.Name]; ok && slices.Contains(r.Fitted, p.Name) {
				est = append(est, v)
				if truth[i] != 0 {
					c.RelErrors = append(c.RelErrors, math.Abs(v-truth[i])/math.Abs(truth[i]))
				}
			}
		}
		c.N, c.Median = len(est), fit.Median(est)
	}
	return out
}

// MedianRelError returns the median of the relative errors of every comparison of cs
// together; NaN for none.
func MedianRelError(cs []Comparison) float64 {
	var all []float64
	for _, c := range cs {
		all = append(all, c.RelErrors...)
	}
	return fit.Median(all)
}

// MedianLogLik returns the median log-likelihood of the records of recs that have one; NaN
// for none.
func MedianLogLik(recs []fit.Record) float64 {
	var ll []float64
	for _, r := range recs {
		if r.LogLik != nil {
			ll = append(ll, *r.LogLik)
		}
	}
	return fit.Median(ll)
}
