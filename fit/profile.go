package fit

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// BoundLRDrop is the drop in log-likelihood, in nats, that bounds the one-sided profile
// interval of a parameter on a bound of its box where no bootstrap calibrates it:
// χ²₁(0.90)/2. On a boundary the likelihood-ratio statistic is ½χ²₀ + ½χ²₁ (Self & Liang
// 1987), so its 95th percentile is χ²₁'s 90th, 2.706.
const BoundLRDrop = 1.3527717

// Profile is the one-sided 95 % interval of a parameter whose estimate sits on a bound of its
// box (Result.AtBound). There the Laplace approximation and the bootstrap (whose data sets,
// simulated at the bound, refit to the bound) give an interval of about zero width, which the
// truth, anywhere inside the box, misses. The interval instead runs from the bound to End,
// the farthest value at which the profile log-likelihood (every other fitted parameter
// re-maximized with this one held fixed) is within Drop nats of the maximum, scanned inward
// from where the interval reached into the box (profileEnd), so never short of it. Drop is BoundLRDrop times the bootstrap's inflation of the likelihood ratio
// where one ran (boundDrop): a first-order Rao–Scott correction (Rao & Scott 1981) for the
// data not being the likelihood's agent's.
// End is the box's other end where the profile stays within Drop all the way.
type Profile struct {
	Bound float64 `json:"bound_scaled"` // the end of the box the estimate is on
	End   float64 `json:"end_scaled"`   // the interval's other end
	Drop  float64 `json:"drop"`         // nats below the maximum that End's profile log-likelihood may fall
	Fits  int     `json:"fits"`         // constrained fits the profile took
}

// Profile scan, from the interval's inner end (profileEnd): the box's far end first, then
// profileGrid steps toward it, then profileBisect halvings of the step where the profile first
// falls below the threshold; End is the bracket's outer end, so the interval errs wide by at
// most 1/(grid·2^bisect) of the stretch scanned.
const (
	profileGrid   = 8
	profileBisect = 4
)

// profileAtBounds replaces the interval of every fitted parameter of res that sits on a bound
// of its box (but the temperature at its lower end, the agent without policy noise, which
// diagnose does not warn of either: boundSide) with the one-sided profile interval (Profile). objective is the fit's (the negative
// log-likelihood per transition, nObs transitions) and x the estimate in fitting scale.
func (f *Fitter) profileAtBounds(objective Objective, nObs float64, x []float64, res *Result) error {
	drop := boundDrop(res.Bootstrap, len(f.infer))
	hess := perTransition(res.Hessian, nObs) // the objective's curvature at x, where the fit has one
	for k, i := range f.infer {
		prm := f.spec.Params[i]
		if !slices.Contains(res.AtBound, prm.Name) {
			continue
		}
		lower, warned := f.boundSide(k, x)
		if !warned {
			continue
		}
		bound, far := f.hi[k], f.lo[k]
		if lower {
			bound, far = f.lo[k], f.hi[k]
		}
		pr := Profile{Bound: bound, Drop: drop}
		start := bound // where the scan begins: the interval's inner end, where it reaches into the box
		if ci, ok := res.CI95[prm.Name]; ok {
			if lower {
				start = math.Min(math.Max(ci[1], bound), far)
			} else {
				start = math.Max(math.Min(ci[0], bound), far)
			}
		}
		end, err := f.profileEnd(objective, nObs, x, hess, k, bound, start, far, res.LogLik-drop, &pr.Fits, &res.Evaluations)
		if err != nil {
			return err
		}
		pr.End = end // never short of start: the interval keeps what it held inside the box
		lo, hi := math.Min(bound, end), math.Max(bound, end)
		if res.CI95 == nil {
			res.CI95, res.CI95Natural = map[string][2]float64{}, map[string][2]float64{}
		}
		res.CI95[prm.Name] = [2]float64{lo, hi}
		res.CI95Natural[prm.Name] = [2]float64{prm.FromScale(lo), prm.FromScale(hi)}
		if res.Profiles == nil {
			res.Profiles = map[string]Profile{}
		}
		res.Profiles[prm.Name] = pr
	}
	return nil
}

// boundDrop returns the drop of a one-sided profile interval (Profile): BoundLRDrop scaled by
// how far the bootstrap's likelihood-ratio statistics, over its refits (each refit's
// maximized log-likelihood less its data's at the estimate, where they were made), run above
// those of a correct model with d fitted parameters, half a χ²_d: the ratio of their medians,
// at least 1. The median, not the mean, so that a few refits whose agent the likelihood
// describes badly (the agent without policy noise gains thousands of nats by moving the
// temperature) do not set it. BoundLRDrop itself without a bootstrap.
func boundDrop(bs *Bootstrap, d int) float64 {
	if bs == nil || len(bs.Fits) == 0 || d < 1 {
		return BoundLRDrop
	}
	gaps := make([]float64, len(bs.Fits))
	for j, r := range bs.Fits {
		gaps[j] = r.LogLik - r.LogLikAtEstimate
	}
	slices.Sort(gaps)
	n := len(gaps)
	median := 0.5 * (gaps[(n-1)/2] + gaps[n/2])
	correct := distuv.ChiSquared{K: float64(d)}.Quantile(0.5) / 2
	return BoundLRDrop * max(1, median/correct)
}

// profileEnd scans parameter k of the estimate x (fitting scale) from bound toward far and
// returns the farthest value of the first run, from the bound, of values whose profile
// log-likelihood is at least target (far itself where the profile there is): see Profile.
// The scan begins at start, the interval's inner end (bound where it has none): where the
// profile there is already below target the interval reaches beyond the run, and start is
// returned after one fit (the common case, which costs a subject on a bound 1 constrained fit
// rather than 6). hess, the objective's Hessian at x (nil: unknown), starts every constrained
// fit's L-BFGS-B memory (profileAt). fits and evals count the constrained fits and their
// evaluations.
func (f *Fitter) profileEnd(objective Objective, nObs float64, x []float64, hess [][]float64, k int, bound, start, far, target float64, fits, evals *int) (float64, error) {
	// at returns the profile log-likelihood at v, maximized from the other parameters of from.
	at := func(v float64, from []float64) (float64, []float64, error) {
		*fits++
		ll, opt, n, err := f.profileAt(objective, nObs, from, hess, k, v)
		*evals += n
		return ll, opt, err
	}
	in, from := bound, x // the last value in the region and its profile's optimum
	if start != bound {
		ll, opt, err := at(start, x)
		if err != nil || ll < target {
			return start, err
		}
		in, from = start, opt
	}
	if in == far {
		return far, nil
	}
	ll, _, err := at(far, from)
	if err != nil || ll >= target {
		return far, err
	}
	step := (far - in) / profileGrid
	first := in
	out := far
	for j := 1; j < profileGrid; j++ {
		v := first + float64(j)*step
		ll, opt, err := at(v, from)
		if err != nil {
			return far, err
		}
		if ll < target {
			out = v
			break
		}
		in, from = v, opt
	}
	for range profileBisect {
		v := 0.5 * (in + out)
		ll, opt, err := at(v, from)
		if err != nil {
			return far, err
		}
		if ll < target {
			out = v
		} else {
			in, from = v, opt
		}
	}
	return out, nil
}

// profileAt returns the log-likelihood maximized over the fitted parameters but k, which is
// held at v, starting from the others of from (fitting scale), the maximizing point, and the
// evaluations it took. A value where the data are impossible has log-likelihood −Inf. hess,
// the objective's Hessian near from (nil: unknown), less k's row and column, starts the
// L-BFGS-B memory: the others' curvature with k held.
func (f *Fitter) profileAt(objective Objective, nObs float64, from []float64, hess [][]float64, k int, v float64) (float64, []float64, int, error) {
	n := len(from)
	expand := func(z []float64) []float64 {
		full := make([]float64, 0, n)
		full = append(full, z[:k]...)
		full = append(full, v)
		return append(full, z[k:]...)
	}
	reduced := func(z []float64) (float64, []float64, error) {
		F, g, err := objective(expand(z))
		if err != nil || g == nil {
			return F, nil, err
		}
		return F, append(slices.Clone(g[:k]), g[k+1:]...), nil
	}
	drop := func(s []float64) []float64 { return append(slices.Clone(s[:k]), s[k+1:]...) }
	if n == 1 {
		F, _, err := reduced(nil)
		return -F * nObs, []float64{v}, 1, err
	}
	settings := f.opts.Settings
	settings.MaxIter = f.opts.MaxIter
	z0 := drop(from)
	if hess != nil {
		settings.Curvature = make([][]float64, 0, n-1)
		for i, row := range hess {
			if i != k {
				settings.Curvature = append(settings.Curvature, drop(row))
			}
		}
	}
	rr := LBFGSB(reduced, z0, drop(f.lo), drop(f.hi), settings)
	if rr.Err != nil {
		return 0, nil, rr.Evaluations, rr.Err
	}
	if math.IsInf(rr.F, 0) || math.IsNaN(rr.F) {
		return math.Inf(-1), nil, rr.Evaluations, nil
	}
	return -rr.F * nObs, expand(rr.X), rr.Evaluations, nil
}
