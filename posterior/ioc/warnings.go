package ioc

import (
	"fmt"
	"math"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/posterior"
	"gonum.org/v1/gonum/stat"
)

// Thresholds of the warnings (Vehtari et al. 2021; Betancourt 2017).
const (
	MaxRHat    = 1.01 // R̂ above it: the chains have not mixed
	MinESSBulk = 400  // bulk effective sample size below it: too few for reliable summaries
	MinEBFMI   = 0.3  // E-BFMI below it: the energy is poorly explored
)

// Warning kinds.
const (
	WarnRHat        = "rhat"
	WarnESSBulk     = "ess_bulk"
	WarnDivergences = "divergences"
	WarnTreeDepth   = "tree_depth"
	WarnEBFMI       = "ebfmi"
	WarnAdjustment  = "adjustment"
)

// Warning is a sign that a subject's draws may not represent its posterior, with what to do.
type Warning struct {
	Subject   string `json:"subject"`
	Parameter string `json:"parameter,omitempty"` // the parameter concerned or most implicated
	Kind      string `json:"kind"`                // WarnRHat, WarnESSBulk, …
	Message   string `json:"message"`             // a sentence naming the subject and parameter
}

// warnings returns the warnings of a subject's successful result.
func (s *Sampler) warnings(r Result) []Warning {
	var out []Warning
	add := func(param, kind, format string, args ...any) {
		out = append(out, Warning{Subject: r.Subject, Parameter: param, Kind: kind,
			Message: fmt.Sprintf("subject %s: ", r.Subject) + fmt.Sprintf(format, args...)})
	}
	if note, ok := strings.CutPrefix(r.Adjustment, AdjustNone+": "); ok {
		add("", WarnAdjustment, "the likelihood was sampled unadjusted (%s); its posterior is likely too narrow (docs/posterior.md, \"Calibration\"). Give it more trials, or sample with --adjust none to say so", note)
	}
	for k, name := range r.Names {
		sum := r.Summary[k]
		switch {
		case math.IsNaN(sum.RHat) || math.IsInf(sum.RHat, 0):
			add(name, WarnRHat, "%s: R-hat is %v: the chains did not move (or hold too few draws); do not trust its summary. Run with warm-up (--warmup) and more --draws",
				name, sum.RHat)
		case sum.RHat > MaxRHat:
			add(name, WarnRHat, "%s: R-hat %.3f > %g: the chains disagree; do not trust its summary. Run longer (--warmup, --draws), let the chains pool their warm-up where they sit apart on a ridge (--cross-chain --max-warmup 600, docs/posterior.md \"Ridges\"), or look for several modes in draws.csv",
				name, sum.RHat, MaxRHat)
		}
		switch {
		case math.IsNaN(sum.ESSBulk):
			add(name, WarnESSBulk, "%s: bulk ESS is NaN: the chains did not move (or hold too few draws). Run with warm-up (--warmup) and more --draws", name)
		case sum.ESSBulk < MinESSBulk:
			add(name, WarnESSBulk, "%s: bulk ESS %.0f < %d: too few effective draws for reliable quantiles. Run more --draws (or --chains)",
				name, sum.ESSBulk, MinESSBulk)
		}
	}
	draws := len(r.Chains) * len(r.Chains[0].Draws)
	if r.Divergences > 0 {
		name := s.divergentParam(r)
		add(name, WarnDivergences, "%d of %d draws divergent, most unlike the other draws in %s: the sampler could not follow the posterior there, so the draws may be biased. Raise --target-accept (e.g. 0.95); if they persist, fix %s or give it a --prior",
			r.Divergences, draws, name, name)
	}
	if r.TreeDepthSaturated > 0 {
		name, why := s.saturatedParam(r)
		add(name, WarnTreeDepth, "%d of %d draws reached the maximum tree depth %d; %s: the posterior is long or flat along it. Raise --max-depth, or fix %s or give it a --prior",
			r.TreeDepthSaturated, draws, r.MaxDepth, why, name)
	}
	for c, e := range r.EBFMI {
		if e < MinEBFMI {
			add("", WarnEBFMI, "chain %d: E-BFMI %.2f < %g: the momentum resampling explores the posterior's energy poorly. Run longer, or fix or give priors to poorly identified parameters",
				c+1, e, MinEBFMI)
		}
	}
	return out
}

// divergentParam returns the sampled parameter in which the divergent draws differ most from
// all draws, in standard deviations on the unconstrained scale.
func (s *Sampler) divergentParam(r Result) string {
	best, bestScore := 0, -1.0
	for k := range r.Names {
		var all, div []float64
		for c := range r.Chains {
			for d, y := range r.Chains[c].Draws {
				all = append(all, y[k])
				if r.Chains[c].Divergent[d] {
					div = append(div, y[k])
				}
			}
		}
		mean, sd := stat.MeanStdDev(all, nil)
		score := math.Abs(stat.Mean(div, nil) - mean)
		if sd > 0 {
			score /= sd
		}
		if score > bestScore {
			best, bestScore = k, score
		}
	}
	return r.Names[best]
}

// saturatedParam returns the parameter most likely to make trajectories long, and why: one
// whose posterior reaches within 1 % of a bound of its search box (the data do not bound it
// there), else the one with the smallest bulk effective sample size.
func (s *Sampler) saturatedParam(r Result) (string, string) {
	lo, hi := s.box.Lo(), s.box.Hi()
	var atBound []string
	for k, name := range r.Names {
		x := posterior.ParamDraws(r.Chains, k)
		w := hi[k] - lo[k]
		switch {
		case posterior.Quantile(0.05, x) < lo[k]+0.01*w:
			atBound = append(atBound, name+" reaches its lower bound")
		case posterior.Quantile(0.95, x) > hi[k]-0.01*w:
			atBound = append(atBound, name+" reaches its upper bound")
		}
	}
	if len(atBound) > 0 {
		name, _, _ := strings.Cut(atBound[0], " ")
		return name, strings.Join(atBound, ", ") + " (not bounded by the data)"
	}
	best := 0
	for k := range r.Names {
		if r.Summary[k].ESSBulk < r.Summary[best].ESSBulk {
			best = k
		}
	}
	return r.Names[best], r.Names[best] + " mixes slowest"
}
