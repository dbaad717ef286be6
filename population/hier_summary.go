package population

import (
	"fmt"
	"math"

	"github.com/nioc-gpu/nioc-gpu/posterior"
	"github.com/nioc-gpu/nioc-gpu/posterior/ioc"
)

// summarize returns the summary of the hierarchical draws [chain][draw][β…, σ…, θ…] of res's
// chains, with the warnings of `sample` (ioc's thresholds) for the population's quantities.
func (h *Hierarchical) summarize(res *posterior.Result, draws [][][]float64, names, columns []string) *HierResult {
	col := func(j int) [][]float64 {
		x := make([][]float64, len(draws))
		for c := range draws {
			x[c] = make([]float64, len(draws[c]))
			for d, row := range draws[c] {
				x[c][d] = row[j]
			}
		}
		return x
	}
	one := func(param, term string, j int) HierSummary {
		x := col(j)
		return HierSummary{Param: param, Term: term, Summary: posterior.Summarize(x),
			Q025: posterior.Quantile(0.025, x), Q975: posterior.Quantile(0.975, x)}
	}
	out := &HierResult{MaxRHat: math.Inf(-1), MinESS: math.Inf(1), Evaluations: res.Evaluations}
	for k, name := range names {
		for j, term := range columns {
			ef := one(name, term, k*h.q+j)
			if j > 0 {
				pos, all := 0, 0
				for _, xs := range col(k*h.q + j) {
					for _, v := range xs {
						all++
						if v > 0 {
							pos++
						}
					}
				}
				pp := float64(pos) / float64(all)
				ef.PPositive = &pp
			}
			out.Effects = append(out.Effects, ef)
		}
	}
	for k, name := range names {
		out.Spreads = append(out.Spreads, one(name, "", h.p*h.q+k))
	}
	for _, s := range append(append([]HierSummary(nil), out.Effects...), out.Spreads...) {
		out.MaxRHat = math.Max(out.MaxRHat, s.RHat)
		out.MinESS = math.Min(out.MinESS, s.ESSBulk)
		what := s.Param
		if s.Term != "" {
			what += " " + s.Term
		} else {
			what += " SD"
		}
		if !(s.RHat <= ioc.MaxRHat) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: R-hat %.3f > %g: the chains disagree; run longer (--warmup, --draws)", what, s.RHat, ioc.MaxRHat))
		}
		if !(s.ESSBulk >= ioc.MinESSBulk) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: bulk ESS %.0f < %d: too few effective draws for reliable intervals; run more --draws", what, s.ESSBulk, ioc.MinESSBulk))
		}
	}
	base := h.p*h.q + h.p
	for i, s := range h.subjects {
		hs := HierSubject{Subject: s.ID}
		for k := range names {
			sum := posterior.Summarize(col(base + i*h.p + k))
			hs.Mean, hs.SD = append(hs.Mean, sum.Mean), append(hs.SD, sum.SD)
		}
		out.Subjects = append(out.Subjects, hs)
	}
	for _, ch := range res.Chains {
		out.Divergences += ch.Divergences()
	}
	if out.Divergences > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d divergent draws: the sampler could not follow the posterior everywhere, so the draws may be biased; raise --target-accept (e.g. 0.95)", out.Divergences))
	}
	return out
}
