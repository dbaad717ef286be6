package fit

import (
	"cmp"
	"math"
	"slices"
)

// OptimaWithin is how far below the best log-likelihood (nats) a restart's optimum may lie
// and still be kept in a record's Optima.
const OptimaWithin = 50.0

// Optimum is a local optimum of a subject's likelihood that a restart ended at: its
// log-likelihood and its fitted parameters in fitting scale.
type Optimum struct {
	LogLik float64            `json:"loglik"`
	Scaled map[string]float64 `json:"scaled"`
}

// otherOptima returns the local optima that r's restarts ended at other than its estimate,
// best first: those within OptimaWithin nats of the best, each at least 1e-3 (fitting scale,
// in some parameter) from the estimate and from every optimum listed before it. Many
// restarts ending elsewhere than the best, not far below it, say the likelihood has several
// peaks (docs/intervals.md, "Several optima").
func otherOptima(r Result) []Optimum {
	order := make([]int, 0, len(r.Ends))
	for i, x := range r.Ends {
		if x != nil && r.LogLik-r.EndLogLik[i] <= OptimaWithin {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.EndLogLik[b], r.EndLogLik[a]) })
	best := make([]float64, len(r.Fitted))
	for k, name := range r.Fitted {
		best[k] = r.Scaled[name]
	}
	kept := [][]float64{best}
	var out []Optimum
	for _, i := range order {
		x := r.Ends[i]
		if slices.ContainsFunc(kept, func(y []float64) bool { return maxAbsDiff(x, y) < 1e-3 }) {
			continue
		}
		kept = append(kept, x)
		o := Optimum{LogLik: r.EndLogLik[i], Scaled: map[string]float64{}}
		for k, name := range r.Fitted {
			o.Scaled[name] = x[k]
		}
		out = append(out, o)
	}
	return out
}

func maxAbsDiff(a, b []float64) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}
