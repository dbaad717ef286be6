// One subject's fit: its restarts as workers of the shared batcher, then its Hessian,
// intervals and goodness-of-fit check (Fitter.fitSubject).

package fit

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
)

// fitSubject runs the restarts of subject si (the tracker's index; key names its trials in
// b's batches, request.row), as workers of b, and then its Hessian and bootstrap. The calling
// goroutine is itself a registered worker of b while it runs.
func (f *Fitter) fitSubject(ctx context.Context, b *batcher, si, key int, s Subject, start time.Time, track *tracker) Result {
	nObs := 0.0 // the transitions observed: every trial's own steps
	for _, tr := range s.Trials {
		nObs += float64(len(tr) - 1)
	}
	res := Result{Subject: s.ID, Fitted: f.Fitted(), Restarts: f.opts.Restarts, Trials: len(s.Trials), DataDigest: data.Digest(s.Trials)}
	var (
		results = make([]LBFGSBResult, f.opts.Restarts)
		wg      sync.WaitGroup
	)
	prior, hasPrior := f.opts.Priors[s.ID]
	if hasPrior && (len(prior.Mean) != len(f.infer) || len(prior.Var) != len(f.infer)) {
		res.Err = fmt.Sprintf("prior of %d means and %d variances for %d fitted parameters", len(prior.Mean), len(prior.Var), len(f.infer))
		return res
	}
	objective := func(x []float64) (float64, []float64, error) {
		ll, grad, err := b.call(ctx, key, s.Trials, f.full(x))
		if err != nil {
			return 0, nil, err
		}
		if math.IsInf(ll, -1) {
			return math.Inf(1), nil, nil
		}
		g := make([]float64, len(f.infer))
		for k, i := range f.infer {
			g[k] = -grad[i] / nObs
		}
		if hasPrior {
			pen, pg := prior.penalty(x)
			for k := range g {
				g[k] += pg[k] / nObs
			}
			return (pen - ll) / nObs, g, nil
		}
		return -ll / nObs, g, nil
	}
	// logLik returns the data's log-likelihood at x from the objective's value there.
	logLik := func(F float64, x []float64) float64 {
		if hasPrior {
			pen, _ := prior.penalty(x)
			return pen - F*nObs
		}
		return -F * nObs
	}
	settings := f.opts.Settings
	settings.MaxIter = f.opts.MaxIter
	points := f.InitialPoints(s.ID)
	var todo []int // the restarts to run
	for r := range points {
		if prev := track.restart(si, r); prev != nil && prev.Status != "" { // finished before a checkpoint
			results[r] = prev.result()
			continue
		}
		todo = append(todo, r)
	}
	// This goroutine makes no calls while its restarts run: it leaves the batcher meanwhile,
	// and the last restart to end registers it again before leaving, so that the batcher never
	// sees the subject gone between its restarts and its Hessian (a queue would admit the next
	// subject there).
	var left atomic.Int32
	left.Store(int32(len(todo)))
	for _, r := range todo {
		prev, x0 := track.restart(si, r), points[r]
		wg.Add(1)
		b.enter()
		go func() {
			defer wg.Done()
			defer func() {
				if left.Add(-1) == 0 {
					b.enter()
				}
				b.exit()
			}()
			set := settings
			if r == 0 {
				set.Curvature = perTransition(f.opts.curvature, nObs)
			}
			set.OnIteration = func(st LBFGSBState) { track.update(si, r, &RestartState{State: st}) }
			var rr LBFGSBResult
			if prev != nil {
				rr = LBFGSBFrom(objective, prev.State, f.lo, f.hi, set)
			} else {
				rr = LBFGSB(objective, x0, f.lo, f.hi, set)
			}
			if rr.Err == nil {
				track.update(si, r, finished(rr))
			}
			results[r] = rr
		}()
	}
	if len(todo) > 0 {
		b.exit()
	}
	wg.Wait()
	if ctx.Err() != nil {
		res.Err = ctx.Err().Error()
		return res
	}
	for _, rr := range results {
		res.Evaluations += rr.Evaluations
	}
	bestR := -1
	var reasons []string
	for r, rr := range results {
		if rr.Err != nil {
			reasons = append(reasons, rr.Err.Error())
			continue
		}
		if math.IsInf(rr.F, 0) || math.IsNaN(rr.F) {
			reasons = append(reasons, rr.Status)
			continue
		}
		if bestR < 0 || rr.F < results[bestR].F {
			bestR = r
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if bestR < 0 {
		res.Err = "every restart failed: " + summarize(reasons)
		b.exit() // a direct evaluation: leave the batcher meanwhile
		bad := f.nonFiniteTrials(s, f.InitialPoints(s.ID)[0])
		b.enter()
		if len(bad) > 0 {
			res.Err += fmt.Sprintf("; at the first initial point the log-likelihood is not finite for trial(s) %s of %d (in file order, from 1)",
				bad, len(s.Trials))
		}
		return res
	}
	bestRes := results[bestR]
	res.Ends, res.EndLogLik = make([][]float64, len(results)), make([]float64, len(results))
	for r, rr := range results {
		res.EndLogLik[r] = math.Inf(-1)
		if rr.Err == nil && !math.IsInf(rr.F, 0) && !math.IsNaN(rr.F) {
			res.Ends[r], res.EndLogLik[r] = rr.X, logLik(rr.F, rr.X)
		}
	}
	res.LogLik = logLik(bestRes.F, bestRes.X)
	res.Converged = bestRes.Converged
	res.Status = bestRes.Status
	tol := f.opts.BestTol + 1e-7*math.Abs(res.LogLik)
	for _, rr := range results {
		if rr.Err == nil && !math.IsInf(rr.F, 0) && (bestRes.F-rr.F)*nObs >= -tol {
			res.RestartsAtBest++
		}
	}
	theta := f.full(bestRes.X)
	res.Params = map[string]float64{}
	res.Scaled = map[string]float64{}
	for i, p := range f.spec.Params {
		res.Params[p.Name] = f.natural[i]
	}
	for _, i := range f.infer {
		res.Params[f.spec.Params[i].Name] = f.spec.Params[i].FromScale(theta[i])
	}
	for k, i := range f.infer {
		name := f.spec.Params[i].Name
		res.Scaled[name] = bestRes.X[k]
		if bestRes.X[k]-f.lo[k] < 1e-6 || f.hi[k]-bestRes.X[k] < 1e-6 {
			res.AtBound = append(res.AtBound, name)
		}
	}
	k := float64(len(f.infer))
	res.AIC = 2*k - 2*res.LogLik
	res.BIC = k*math.Log(nObs) - 2*res.LogLik
	if f.opts.refit {
		res.Seconds = time.Since(start).Seconds()
		return res
	}
	if err := f.laplace(ctx, b, si, s, bestRes.X, &res); err != nil {
		res.Err = err.Error()
	}
	res.LogEvidence = f.logEvidence(s.ID, bestRes.X, res.LogLik, res.Hessian)
	f.diagnose(s, bestRes.X, &res)
	// The goodness-of-fit check needs the estimate alone: it runs on its own beside the
	// bootstrap and the profile, filling the cores their rounds leave idle, and its result is
	// kept where they leave the fit standing.
	var (
		checkDone chan struct{}
		check     *Check
		checkErr  error
	)
	if f.opts.CheckDraws > 0 && res.Err == "" && ctx.Err() == nil {
		checkDone = make(chan struct{})
		x, ll := bestRes.X, res.LogLik
		go func() {
			defer close(checkDone)
			check, checkErr = f.check(ctx, b, si, s, x, ll)
		}()
	}
	if f.opts.Uncertainty == UncertaintyBootstrap && res.Err == "" && ctx.Err() == nil {
		b.exit() // while it simulates, the batcher must not wait for this subject
		if err := f.bootstrap(ctx, b, si, s, bestRes.X, &res); err != nil {
			res.BootstrapErr = err.Error()
		}
		b.enter()
	}
	if len(res.AtBound) > 0 && !hasPrior && res.Err == "" && ctx.Err() == nil {
		if err := f.profileAtBounds(objective, nObs, bestRes.X, &res); err != nil {
			res.Err = "profile at a bound: " + err.Error()
		}
	}
	if checkDone != nil {
		b.exit() // the check evaluates on its own: the batcher must not wait for this subject
		<-checkDone
		b.enter()
		if res.Err == "" && ctx.Err() == nil {
			if checkErr != nil {
				res.CheckErr = checkErr.Error()
			}
			res.Check = check
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

// perTransition returns h/nObs: a Hessian of the negative log-likelihood as one of the
// objective the restarts minimize (the negative log-likelihood per transition); nil where h
// is empty or has an entry that is not finite (no curvature to start from).
func perTransition(h [][]float64, nObs float64) [][]float64 {
	if len(h) == 0 {
		return nil
	}
	out := make([][]float64, len(h))
	for i, row := range h {
		out[i] = make([]float64, len(row))
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil
			}
			out[i][j] = v / nObs
		}
	}
	return out
}

func summarize(reasons []string) string {
	count := map[string]int{}
	for _, r := range reasons {
		count[r]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, count[k])
	}
	return strings.Join(parts, "; ")
}
