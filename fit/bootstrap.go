package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// UncertaintyBootstrap (Options.Uncertainty): the robust standard errors widened and the
// intervals re-centred by a bias-corrected parametric bootstrap over a family of agents
// (Options.Bootstrap, Options.BootstrapAgents).
const UncertaintyBootstrap = "bootstrap"

// DefaultBootstrapDraws and DefaultBootstrapRestarts are the bootstrap's data sets per subject
// and restarts per refit unless Options.Bootstrap and Options.BootstrapRestarts say otherwise.
const (
	DefaultBootstrapDraws    = 25 // 5 per agent of DefaultBootstrapAgentNames
	DefaultBootstrapRestarts = 1
)

// DefaultBootstrapAgentNames are the agents the bootstrap simulates from unless
// Options.BootstrapAgents says otherwise: the likelihood's own, one without policy noise,
// one whose planner stopped after 10 iterations, one that acts without the feed-forward
// term (likelihood.ParseAgentVariant), and one with all three departures at once, as the JAX
// reference's agent has them (since 2026-11-25: its estimates' shift is not any one
// departure's, and without it the intervals on the reference's fully observed navigation data
// covered 0.87–0.90; docs/intervals.md, "An agent like the reference's"). The planner stopped
// after 3 iterations is left out: on navigation, whose planner needs about 7, it moves the
// estimates by far more than the reference's agent's data are off and widens the intervals of
// our own agent's data threefold; the delayed agent too, for the same reason
// (docs/intervals.md).
const DefaultBootstrapAgentNames = "ours,ours-nonoise,iter10,nofeedforward,ours-nonoise+iter10+nofeedforward"

// DefaultBootstrapAgents returns the agents of DefaultBootstrapAgentNames.
func DefaultBootstrapAgents() []likelihood.AgentVariant {
	vs, err := likelihood.ParseAgentVariants(DefaultBootstrapAgentNames)
	if err != nil {
		panic(err)
	}
	return vs
}

// Bootstrap is what the bias-corrected parametric bootstrap of one subject found: Draws data
// sets simulated at the estimate θ̂, split evenly among Agents (the likelihood's own agent and
// agents that depart from it as subjects plausibly do: likelihood.AgentVariant), each refitted
// from θ̂ with our likelihood. In the fitting scale, Bias = mean of all K refits − θ̂
// estimates the estimator's bias at θ̂ averaged over the agents, and SD the refits' spread
// about that mean, which holds both each agent's scatter and how far the agents' own means
// lie apart. The subject's standard error becomes SE = √(max(SD, robust SE)² + SD²/K) (the
// second term: the error of the estimated bias) and its 95 % interval (θ̂ − Bias) ± t·SE with
// t the 97.5 % quantile of Student's t with SE²'s degrees of freedom, kept in DOF: K − 1
// where SE is made of SD alone (estimated from K refits), else the Satterthwaite degrees of
// freedom of the robust SE² (the subject's trials − 1) plus SD²/K (K − 1), satterthwaiteDOF;
// joined with the interval ± t·SE around every other optimum the fit's restarts
// found (Result.Ends) whose log-likelihood is within LogLikGap95 of the best: the 95th
// percentile over the refits of how far their maximized log-likelihood rose above their
// data's log-likelihood at θ̂, where the data were made. Such an optimum lies in the
// likelihood-ratio confidence region that the bootstrap calibrates, and a likelihood with
// several peaks puts the truth near one the fit did not pick (docs/intervals.md). AgentBias holds each agent's own mean − θ̂: how
// much the estimate would move were the subject that agent.
type Bootstrap struct {
	Draws  int `json:"draws"`  // data sets simulated
	Refits int `json:"refits"` // of them, refitted without error
	// Evaluations counts the refits' likelihood evaluations (each a value and gradient of one
	// data set): with Result.Evaluations, what the subject's fit cost.
	Evaluations int                `json:"evaluations"`
	Bias        map[string]float64 `json:"bias_scaled"` // mean of the refits − the estimate
	SD          map[string]float64 `json:"sd_scaled"`   // standard deviation of the refits
	// Robust holds the robust (sandwich) standard errors the interval started from (fitting
	// scale), absent where the Hessian was not positive definite: with StdErrHessian it lets
	// a reader compare the three without another fit.
	Robust    map[string]float64            `json:"stderr_robust_scaled,omitempty"`
	DOF       map[string]float64            `json:"dof"` // degrees of freedom of each interval's t
	Agents    []string                      `json:"agents,omitempty"`
	AgentBias map[string]map[string]float64 `json:"agent_bias_scaled,omitempty"` // agent → parameter → its refits' mean − the estimate
	Fits      []Refit                       `json:"fits,omitempty"`              // every refit, for a look at their spread
	// LogLikGap95 is the 95th percentile of the refits' maximized log-likelihood minus their
	// data's log-likelihood at θ̂ (nats); OptimaWithin counts the other optima within it.
	LogLikGap95  float64 `json:"loglik_gap95"`
	OptimaWithin int     `json:"optima_within"`
}

// Refit is one of the bootstrap's refits: the agent that simulated its data set, its
// estimates (fitting scale), its maximized log-likelihood and the log-likelihood of its data
// at the subject's estimate θ̂ (where its first restart began).
type Refit struct {
	Agent            string             `json:"agent"`
	Scaled           map[string]float64 `json:"scaled"`
	LogLik           float64            `json:"loglik"`
	LogLikAtEstimate float64            `json:"loglik_at_estimate"`
}

// bootstrap runs the parametric bootstrap of subject s (the fit's subject si) fitted at x
// (fitted parameters, fitting scale) and sets res's standard errors and intervals from it
// (UncertaintyBootstrap). The refits run as workers of b, the fit's batcher, so that the
// refits of every subject in their bootstrap and the other subjects' restarts share its
// batches (on a GPU, one subject's 25 refits alone are calls of 25 rows each); the caller
// must not be one of b's workers.
func (f *Fitter) bootstrap(ctx context.Context, b *batcher, si int, s Subject, x []float64, res *Result) error {
	K, agents := f.opts.Bootstrap, f.opts.BootstrapAgents
	sims := make([][][][][]float64, len(agents)) // each agent's data sets
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for a, v := range agents { // side by side: each plans and simulates on one core
		Ka := K / len(agents)
		if a < K%len(agents) {
			Ka++
		}
		wg.Go(func() { sims[a], errs[a] = f.simulateAt(s, x, Ka, agentSeed(f.opts.Seed, s.ID, v), v) })
	}
	wg.Wait()
	var subjects []Subject
	var of []int // the agent of each data set
	for a, v := range agents {
		if errs[a] != nil {
			return fmt.Errorf("bootstrap, agent %s: %w", v, errs[a])
		}
		for _, d := range sims[a] {
			subjects = append(subjects, Subject{ID: strconv.Itoa(len(subjects)), Trials: d})
			of = append(of, a)
		}
	}
	key := func(j int) int { return f.setKey(si, j) }
	refits, data, logliks, evals, err := f.refit(ctx, b, key, subjects, s.ID, x, res.Hessian)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	agentOf := make([]int, len(data)) // the agent of each refit's data set
	for j, d := range data {
		agentOf[j] = of[d]
	}
	atEstimate, err := f.logLiksAt(ctx, b, key, subjects, x)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if len(refits) < max(3, K/2) {
		return fmt.Errorf("bootstrap: %d of %d refits failed", K-len(refits), K)
	}
	bs := &Bootstrap{Draws: K, Refits: len(refits), Evaluations: evals, Bias: map[string]float64{}, SD: map[string]float64{}, DOF: map[string]float64{}}
	if len(agents) > 1 || agents[0] != (likelihood.AgentVariant{}) {
		bs.AgentBias = map[string]map[string]float64{}
		for _, v := range agents {
			bs.Agents = append(bs.Agents, v.String())
			bs.AgentBias[v.String()] = map[string]float64{}
		}
	}
	if res.StdErr == nil {
		res.StdErr = map[string]float64{}
	}
	res.CI95 = map[string][2]float64{}
	res.CI95Natural = map[string][2]float64{}
	column := make([]float64, len(refits))
	weights := make([][]float64, len(bs.Agents)) // weights[a][j]: 1 where refit j is agent a's
	for a := range weights {
		weights[a] = make([]float64, len(refits))
		for j, of := range agentOf {
			if of == a {
				weights[a][j] = 1
			}
		}
	}
	n := float64(len(refits))
	gaps := make([]float64, len(refits))
	for j := range refits {
		gaps[j] = logliks[j] - atEstimate[data[j]]
	}
	var near []Optimum // the other optima in the bootstrap's likelihood-ratio region
	bs.LogLikGap95, near = nearOptima(*res, gaps)
	bs.OptimaWithin = len(near)
	for k, i := range f.infer {
		prm := f.spec.Params[i]
		for j, row := range refits {
			column[j] = row[k]
		}
		mean, sd := stat.MeanStdDev(column, nil)
		bs.Bias[prm.Name], bs.SD[prm.Name] = mean-x[k], sd
		for a, v := range bs.Agents {
			if slices.Contains(agentOf, a) {
				bs.AgentBias[v][prm.Name] = stat.Mean(column, weights[a]) - x[k]
			}
		}
		se, dof := sd, n-1 // SD² + SD²/K: one estimate, K − 1 degrees of freedom
		if old, ok := res.StdErr[prm.Name]; ok {
			if old > sd {
				se = old
				dof = satterthwaiteDOF(old*old, float64(max(len(s.Trials)-1, 1)), sd*sd/n, n-1)
			}
			if bs.Robust == nil {
				bs.Robust = map[string]float64{}
			}
			bs.Robust[prm.Name] = old
		}
		bs.DOF[prm.Name] = dof
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile(0.975)
		se = math.Sqrt(se*se + sd*sd/n)
		peaks := make([]float64, len(near))
		for j, o := range near {
			peaks[j] = o.Scaled[prm.Name]
		}
		lo, hi := joinedInterval(x[k]-bs.Bias[prm.Name], t*se, peaks)
		res.setBounds(prm, se, lo, hi)
	}
	for j, row := range refits {
		fit := Refit{Agent: agents[agentOf[j]].String(), Scaled: map[string]float64{}, LogLik: logliks[j], LogLikAtEstimate: atEstimate[data[j]]}
		for k, i := range f.infer {
			fit.Scaled[f.spec.Params[i].Name] = row[k]
		}
		bs.Fits = append(bs.Fits, fit)
	}
	res.Bootstrap, res.Uncertainty = bs, UncertaintyBootstrap
	return nil
}

// satterthwaiteDOF returns the Satterthwaite (1946) degrees of freedom of a + b, independent
// variance estimates with na and nb degrees of freedom: (a + b)² / (a²/na + b²/nb); na where
// both are zero. Where the robust SE² (from the subject's trials' scores, trials − 1) sets
// the bootstrap's SE² and the bias's variance SD²/K (K − 1) is added, the interval's t is
// Student's at these degrees of freedom: an interval set by the robust SE is not widened as
// if it were estimated from the K refits.
func satterthwaiteDOF(a, na, b, nb float64) float64 {
	den := a*a/na + b*b/nb
	if den == 0 {
		return na
	}
	return (a + b) * (a + b) / den
}

// setKey names data set j made from subject si's estimate in the fit's batches (request.row):
// the bootstrap's data sets are j < Bootstrap, the goodness-of-fit check's the next
// CheckDraws. Negative, so that it is no subject's index and no other data set's.
func (f *Fitter) setKey(si, j int) int { return -1 - si*(f.opts.Bootstrap+f.opts.CheckDraws) - j }

// logLiksAt returns the log-likelihoods of the data sets at x (fitted parameters, fitting
// scale), evaluated as workers of b (data set j named key(j)); the caller must not be one.
func (f *Fitter) logLiksAt(ctx context.Context, b *batcher, key func(int) int, sets []Subject, x []float64) ([]float64, error) {
	full := f.full(x)
	lls, errs := make([]float64, len(sets)), make([]error, len(sets))
	var wg sync.WaitGroup
	for j, d := range sets {
		b.enter()
		wg.Go(func() {
			defer b.exit()
			lls[j], _, errs[j] = b.call(ctx, key(j), d.Trials, full)
		})
	}
	wg.Wait()
	return lls, errors.Join(errs...)
}

// refit fits the bootstrap's data sets (subjects) of subject id, fitted at x (fitting scale),
// with BootstrapRestarts restarts each, the first from x with its L-BFGS-B memory started
// from the subject's Hessian there, hess (nil: none), as workers of b (data set j named
// key(j)), and returns for those fitted without error their fitted parameters (fitting
// scale), the index of their data set in subjects and their maximized log-likelihoods, in
// data-set order (so that the bootstrap's sums do not depend on which refit finished
// first), and the evaluations all refits took. The caller must not be one of b's workers.
// Each refit is fitted as the subject was, with its prior (Options.Priors) if it has one.
func (f *Fitter) refit(ctx context.Context, b *batcher, key func(int) int, subjects []Subject, id string, x []float64, hess [][]float64) ([][]float64, []int, []float64, int, error) {
	opts := f.opts
	opts.Restarts = f.opts.BootstrapRestarts
	if opts.Restarts <= 0 {
		opts.Restarts = DefaultBootstrapRestarts
	}
	opts.Seed = bootstrapSeed(f.opts.Seed+1, id)
	opts.Bootstrap, opts.CheckDraws, opts.Progress, opts.Checkpoint = 0, 0, nil, nil
	// Every refit's first restart begins at the estimate, the others at random points: the
	// refit's optimum is most likely near it, and a refit that finds none better than there
	// says so without the random restarts' work.
	at := map[string]float64{}
	for k, i := range f.infer {
		at[f.spec.Params[i].Name] = x[k]
	}
	opts.Starts, opts.StartsFrom, opts.Priors = map[string]map[string]float64{}, "", nil
	prior, hasPrior := f.opts.Priors[id]
	if hasPrior {
		opts.Priors = map[string]Prior{}
	}
	for _, s := range subjects {
		opts.Starts[s.ID] = at
		if hasPrior {
			opts.Priors[s.ID] = prior
		}
	}
	opts.refit = true
	// The refits' data are the subject's kind of data made at x, so the subject's curvature
	// there is a good model of theirs: the first step is a Newton step, not a steepest
	// descent (29–60 % fewer evaluations; docs/speed.md, change 13).
	opts.curvature = hess
	nf, err := New(f.e, opts)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	tr, err := nf.newTracker(subjects, nil)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	byData := make([]Result, len(subjects)) // in data-set order, whatever order they finish in
	start := time.Now()
	var wg sync.WaitGroup
	for j, s := range subjects {
		b.enter()
		wg.Go(func() {
			defer b.exit()
			byData[j] = nf.fitSubject(ctx, b, j, key(j), s, start, tr)
		})
	}
	wg.Wait()
	var refits [][]float64
	var data []int
	var logliks []float64
	evals := 0
	for j, r := range byData {
		evals += r.Evaluations
		if r.Err != "" {
			continue
		}
		row := make([]float64, len(f.infer))
		for k, i := range f.infer {
			row[k] = r.Scaled[f.spec.Params[i].Name]
		}
		refits, data, logliks = append(refits, row), append(data, j), append(logliks, r.LogLik)
	}
	return refits, data, logliks, evals, ctx.Err()
}

// simulateAt simulates K data sets of agent v (the likelihood's own for the zero value) at x
// (fitted parameters, fitting scale; the others at their fixed values), each with s's number
// of trials, their lengths and their initial states (the trials of one problem, planned once
// from their mean initial state, as the likelihood's agent plans), and returns those without a
// diverged trial.
func (f *Fitter) simulateAt(s Subject, x []float64, K int, seed uint64, v likelihood.AgentVariant) ([][][][]float64, error) {
	full := f.full(x)
	spec := f.e.Spec()
	natural := make([]float64, len(full))
	for i, v := range full {
		natural[i] = spec.Params[i].FromScale(v)
	}
	N := len(s.Trials)
	lengths, starts := make([]int, K*N), make([][]float64, K*N)
	for j := range lengths {
		lengths[j], starts[j] = len(s.Trials[j%N])-1, s.Trials[j%N][0]
	}
	sims, err := f.e.SimulateVariantTrials([][]float64{natural}, lengths, starts, seed, v)
	if err != nil {
		return nil, err
	}
	var rows [][][][]float64
	for k := range K {
		d := sims[0][k*N : (k+1)*N]
		if !slices.ContainsFunc(d, func(tr [][]float64) bool { return tr == nil }) { // a data set with a diverged trial is left out
			rows = append(rows, d)
		}
	}
	if len(rows) < max(3, K/2) {
		return nil, fmt.Errorf("%d of %d simulated data sets diverged", K-len(rows), K)
	}
	return rows, nil
}

// bootstrapSeed is the seed of subject id's bootstrap: the fit's seed and the ID.
func bootstrapSeed(seed uint64, id string) uint64 { return checkSeed(seed, "bootstrap:"+id) }

// agentSeed is the seed of the data sets agent v simulates in subject id's bootstrap; the
// likelihood's own agent keeps bootstrapSeed, as before there were others.
func agentSeed(seed uint64, id string, v likelihood.AgentVariant) uint64 {
	if v == (likelihood.AgentVariant{}) {
		return bootstrapSeed(seed, id)
	}
	return checkSeed(seed, "bootstrap:"+v.String()+":"+id)
}

// nearOptima returns the 95th percentile of gaps, the refits' maximized log-likelihoods minus
// their data's at the estimate (the ⌊0.95·K⌋+1-th smallest of K; the largest for K = 20), and
// the other optima of r's restarts (otherOptima) whose log-likelihood is within it of r's.
func nearOptima(r Result, gaps []float64) (float64, []Optimum) {
	g := slices.Sorted(slices.Values(gaps))
	gap95 := g[min(len(g)-1, int(0.95*float64(len(g))))]
	var near []Optimum
	for _, o := range otherOptima(r) {
		if r.LogLik-o.LogLik <= gap95 {
			near = append(near, o)
		}
	}
	return gap95, near
}

// joinedInterval returns the smallest interval that holds centre ± halfWidth and p ± halfWidth
// for every other peak p.
func joinedInterval(centre, halfWidth float64, peaks []float64) (lo, hi float64) {
	lo, hi = centre-halfWidth, centre+halfWidth
	for _, p := range peaks {
		lo, hi = math.Min(lo, p-halfWidth), math.Max(hi, p+halfWidth)
	}
	return lo, hi
}
