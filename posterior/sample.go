package posterior

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Options configure Sample. A zero field means its default, which is Stan's.
type Options struct {
	Chains int    // chains per group; 0 means 4
	Warmup int    // warm-up iterations per chain; 0 means 1000, negative means none (no adaptation)
	Draws  int    // draws per chain after warm-up; 0 means 1000
	Seed   uint64 // seed of every chain's random stream, with the chain's group and index
	// GroupSeed, if set, gives the seed of group g's chains instead of Seed, and their random
	// streams then depend on the chain's index but not on g: a group's draws are the same
	// whichever groups it is sampled with (for example a subject's, seeded from its ID).
	GroupSeed func(group int) uint64

	MaxDepth     int     // maximum tree depth; 0 means 10 (at most 2¹⁰ − 1 leapfrog steps a draw)
	MaxDeltaH    float64 // energy error beyond which a trajectory is divergent; 0 means 1000
	TargetAccept float64 // target mean acceptance statistic δ of the step-size adaptation; 0 means 0.8
	StepSize     float64 // initial step size, refined by Stan's heuristic when warming up; 0 means 1
	Gamma        float64 // dual-averaging regularization γ; 0 means 0.05
	Kappa        float64 // dual-averaging relaxation exponent κ; 0 means 0.75
	T0           float64 // dual-averaging offset t₀; 0 means 10

	// Metric adaptation windows: an initial buffer of step-size adaptation only, slow windows
	// doubling from Window in which the diagonal metric is estimated, and a terminal buffer
	// of step-size adaptation. 0 means Stan's 75, 25 and 50. With fewer than 20 warm-up
	// iterations the metric stays the identity; when the buffers and the first window do
	// not fit in the warm-up they become 15%, 75% and 10% of it (as in Stan).
	InitBuffer, Window, TermBuffer int

	// InitRadius: chains start at a point drawn uniformly in (−InitRadius, InitRadius)^dim
	// of the unconstrained space, redrawn (up to 100 times) where the density is zero; 0
	// means 2.
	InitRadius float64
	// Init, if set, gives the initial point on the unconstrained space of every chain
	// instead (e.g. a maximum-likelihood fit mapped by Box.To).
	Init func(group, chain int) []float64
	// InitMetric, if set, gives the inverse metric group's chains start from (a symmetric
	// positive-definite dim × dim matrix on the unconstrained space, such as a Laplace
	// approximation's covariance mapped by the box's Jacobian; only its diagonal without
	// DenseMetric), or nil for the identity. The windows' estimates are then shrunk towards it
	// (as towards 20 draws of it per parameter) instead of towards 10⁻³·I: Stan's regularization assumes
	// a posterior of unit scale, and at the scale of a well-identified parameter (standard
	// deviations of 10⁻² on the logit scale) it inflated the narrow directions several-fold
	// after a short warm-up, so that the step size fell to a twentieth and the trees ran deep.
	InitMetric func(group int) [][]float64

	// CrossChain estimates each window's metric from the draws of all of a group's chains in
	// that window, their covariance about their common mean, instead of from each chain's own:
	// where the chains have spread along a ridge of the posterior, the metric then spans the
	// ridge rather than the stretch one chain has seen, and the chains take long steps along it
	// (as in the cross-chain warm-up tried for Stan, stan-dev/stan pull request 2886; chains on
	// separate peaks it does not bring together: docs/posterior.md, "Ridges"). A chain waits at the end of each window until the group's other
	// chains have reached it or stopped; the draws still do not depend on the scheduling.
	CrossChain bool
	// MaxWarmup, with CrossChain, lets the warm-up of a group go on past Warmup, one window
	// of the last window's length at a time, while its chains' draws in the last window
	// disagree (R-hat above 1.1 in any parameter), up to MaxWarmup iterations: the pooled
	// metric then has the time to carry the chains along a ridge they had begun to spread
	// over (the "campfire" warm-up tried for Stan also ran until the chains agreed). All
	// chains of a group decide alike, from the same pooled draws. 0 means Warmup.
	MaxWarmup int

	// DenseMetric adapts a dense inverse metric (the draws' covariance, regularized as in
	// Stan's dense_e) instead of a diagonal one.
	DenseMetric bool

	// Unsynchronized lets a chain begin its next transition without waiting for the other
	// chains to finish theirs. The draws are the same; the batches are fuller and fewer.
	Unsynchronized bool

	// Progress, if set, is called after every batched evaluation.
	Progress func(Progress)
}

// Progress reports how sampling is going.
type Progress struct {
	Transitions int // transitions completed by all chains together, warm-up included
	Total       int // transitions to run: chains × (warm-up + draws)
	Calls       int // batched calls of the log density so far
	Evaluations int // points evaluated in them
}

// Result is the output of Sample.
type Result struct {
	// Chains, group by group: chain c of group g is Chains[g·PerGroup + c].
	Chains   []Chain
	PerGroup int
	// Calls is the number of batched calls of the log density, Evaluations the number of
	// points evaluated in them.
	Calls, Evaluations int
}

// Group returns the chains of group g. It panics if g is out of range.
func (r *Result) Group(g int) []Chain {
	return r.Chains[g*r.PerGroup : (g+1)*r.PerGroup]
}

// Err returns the errors of the chains that stopped early, joined, or nil.
func (r *Result) Err() error {
	var errs []error
	for i := range r.Chains {
		if r.Chains[i].Err != nil {
			errs = append(errs, r.Chains[i].Err)
		}
	}
	return errors.Join(errs...)
}

func (o Options) resolve() (settings, error) {
	s := settings{chains: o.Chains, warmup: o.Warmup, maxWarmup: o.MaxWarmup, draws: o.Draws, seed: o.Seed, maxDepth: o.MaxDepth,
		maxDeltaH: o.MaxDeltaH, delta: o.TargetAccept, gamma: o.Gamma, kappa: o.Kappa, t0: o.T0,
		stepSize: o.StepSize, initRadius: o.InitRadius, initBuffer: o.InitBuffer, termBuffer: o.TermBuffer,
		window: o.Window, init: o.Init, initMetric: o.InitMetric, groupSeed: o.GroupSeed, unsynchronized: o.Unsynchronized, dense: o.DenseMetric, crossChain: o.CrossChain, progress: o.Progress}
	ints := []struct {
		v    *int
		def  int
		name string
	}{{&s.chains, 4, "chains"}, {&s.draws, 1000, "draws"}, {&s.maxDepth, 10, "max depth"},
		{&s.initBuffer, 75, "init buffer"}, {&s.termBuffer, 50, "term buffer"}, {&s.window, 25, "window"}}
	for _, f := range ints {
		if *f.v < 0 {
			return s, fmt.Errorf("posterior: %s must be >= 0, got %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if s.maxWarmup < 0 {
		return s, fmt.Errorf("posterior: max warm-up must be >= 0, got %d", s.maxWarmup)
	}
	switch {
	case s.warmup == 0:
		s.warmup = 1000
	case s.warmup < 0:
		s.warmup = 0
	}
	floats := []struct {
		v    *float64
		def  float64
		name string
	}{{&s.maxDeltaH, 1000, "max delta H"}, {&s.delta, 0.8, "target acceptance"}, {&s.gamma, 0.05, "gamma"},
		{&s.kappa, 0.75, "kappa"}, {&s.t0, 10, "t0"}, {&s.stepSize, 1, "step size"}, {&s.initRadius, 2, "init radius"}}
	for _, f := range floats {
		if !finite(*f.v) || *f.v < 0 {
			return s, fmt.Errorf("posterior: %s must be finite and >= 0, got %g", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if s.delta >= 1 {
		return s, fmt.Errorf("posterior: target acceptance must be in (0, 1), got %g", s.delta)
	}
	return s, nil
}

// Sample runs NUTS on every group of the target, opts.Chains chains each, and returns their
// draws. A chain that cannot start or fails during warm-up (no point of positive density,
// no usable step size, overflow in the metric) stops with its Chain.Err set (see Result.Err)
// while the others go on; an error of the log density or the context's cancellation stops
// every chain, and Sample then returns that error and no result.
//
// Every chain runs in its own goroutine and asks for its log-density evaluations through a
// channel; Sample gathers the requests of all chains and answers them with one call of the
// target's batched function, from the calling goroutine, once every chain has either asked
// or finished its transition. Chains that have finished their transition wait there until
// all have (unless opts.Unsynchronized), so one call serves at most one point per chain and
// the chains of all groups advance in lockstep, one transition at a time. The points of a
// call are ordered by chain. Since each chain's computation depends only on its own random
// stream and the values of the log density, the draws do not depend on the scheduling or on
// the other chains.
func Sample(ctx context.Context, t *Target, opts Options) (*Result, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	n := t.groups * o.chains
	runs := make([]*chainRun, n)
	msgs := make(chan message, n)
	replies := make([]chan reply, n)
	resume := make([]chan bool, n)
	pooled := make([]chan poolReply, n)
	for i := range runs {
		c := newChainRun(t, &o, i/o.chains, i%o.chains)
		runs[i] = c
		replies[i] = make(chan reply, 1)
		resume[i] = make(chan bool, 1)
		pooled[i] = make(chan poolReply, 1)
		eval := func(q []float64) (float64, []float64, error) {
			msgs <- message{chain: i, kind: msgEval, x: q, done: c.done}
			r := <-replies[i]
			return r.logp, r.grad, r.err
		}
		sync := func() bool {
			if o.unsynchronized {
				return true
			}
			msgs <- message{chain: i, kind: msgBarrier, done: c.done}
			return <-resume[i]
		}
		var pool func(windowStats) ([]windowStats, error)
		if o.crossChain {
			pool = func(st windowStats) ([]windowStats, error) {
				msgs <- message{chain: i, kind: msgPool, stats: st, done: c.done}
				r := <-pooled[i]
				return r.stats, r.err
			}
		}
		go func() {
			err := c.run(eval, sync, pool)
			msgs <- message{chain: i, kind: msgExit, done: c.done, err: err}
		}()
	}
	co := &coordinator{ctx: ctx, t: t, o: &o, msgs: msgs, replies: replies, resume: resume, pooled: pooled,
		chainErrs: make([]error, n)}
	if err := co.run(); err != nil {
		return nil, err
	}
	res := &Result{Chains: make([]Chain, n), PerGroup: o.chains, Calls: co.calls, Evaluations: co.evals}
	for i, c := range runs {
		res.Chains[i] = c.out
		if err := co.chainErrs[i]; err != nil {
			res.Chains[i].Err = fmt.Errorf("posterior: group %d, chain %d: %w", c.group, c.index, err)
		}
	}
	return res, nil
}

type msgKind int

const (
	msgEval    msgKind = iota // the chain asks for the log density at x
	msgBarrier                // the chain has finished a transition
	msgExit                   // the chain has stopped, with err if it failed
	msgPool                   // the chain has ended a metric window with stats (Options.CrossChain)
)

type message struct {
	chain int
	kind  msgKind
	x     []float64
	done  int // transitions the chain has completed
	err   error
	stats windowStats
}

// poolReply answers msgPool: the window accumulators of the group's chains, by chain index.
type poolReply struct {
	stats []windowStats
	err   error
}

type reply struct {
	logp float64
	grad []float64
	err  error
}

// coordinator answers the chains' requests in batches; see Sample.
type coordinator struct {
	ctx       context.Context
	t         *Target
	o         *settings
	msgs      chan message
	replies   []chan reply
	resume    []chan bool
	pooled    []chan poolReply
	chainErrs []error
	calls     int
	evals     int
}

const (
	chainRunning = iota // computing; it will send a message
	chainWaiting        // waiting for an evaluation
	chainAtBarrier
	chainAtPool
	chainExited
)

// run serves the chains until all have exited and returns the error that stopped them all,
// if any. Every chain is in exactly one of the states above; pending counts the running.
func (co *coordinator) run() error {
	n := len(co.replies)
	status := make([]int, n)
	points := make([][]float64, n)
	stats := make([]windowStats, n)
	done := make([]int, n)
	pending := n
	var abort error
	total := n * (co.o.warmup + co.o.draws)
	for {
		for ; pending > 0; pending-- {
			m := <-co.msgs
			done[m.chain] = m.done
			switch m.kind {
			case msgEval:
				status[m.chain], points[m.chain] = chainWaiting, m.x
			case msgBarrier:
				status[m.chain] = chainAtBarrier
			case msgPool:
				status[m.chain], stats[m.chain] = chainAtPool, m.stats
			case msgExit:
				status[m.chain] = chainExited
				if m.err != nil && !errors.Is(m.err, errAborted) {
					co.chainErrs[m.chain] = m.err
				}
			}
		}
		if released := co.releasePools(status, stats, abort); released > 0 {
			pending = released
			continue
		}
		var batch []int
		for i, s := range status {
			if s == chainWaiting {
				batch = append(batch, i)
			}
		}
		if len(batch) > 0 {
			if abort == nil {
				abort = co.ctx.Err()
			}
			var logp []float64
			var grad [][]float64
			if abort == nil {
				groups := make([]int, len(batch))
				x := make([][]float64, len(batch))
				for k, i := range batch {
					groups[k], x[k] = i/co.o.chains, points[i]
				}
				var err error
				logp, grad, err = co.t.Eval(groups, x)
				co.calls++
				co.evals += len(batch)
				if err != nil {
					abort = fmt.Errorf("posterior: evaluating the log density: %w", err)
				}
			}
			for k, i := range batch {
				if abort != nil {
					co.replies[i] <- reply{err: errAborted}
				} else {
					co.replies[i] <- reply{logp: logp[k], grad: grad[k]}
				}
				status[i], points[i] = chainRunning, nil
			}
			pending = len(batch)
			if abort == nil && co.o.progress != nil {
				sum := 0
				for _, d := range done {
					sum += d
				}
				co.o.progress(Progress{Transitions: sum, Total: total, Calls: co.calls, Evaluations: co.evals})
			}
			continue
		}
		// No chain wants an evaluation: all have finished their transition or exited.
		if abort == nil {
			abort = co.ctx.Err()
		}
		for i, s := range status {
			if s == chainAtBarrier {
				co.resume[i] <- abort == nil
				status[i] = chainRunning
				pending++
			}
		}
		if pending == 0 {
			return abort
		}
	}
}

// releasePools answers the chains at a metric window's end (msgPool) of every group none of
// whose chains is still on its way there: each gets the accumulators of them all, by chain
// index (or errAborted once abort is set). It returns how many chains it released.
func (co *coordinator) releasePools(status []int, stats []windowStats, abort error) int {
	per, released := co.o.chains, 0
	for g := 0; g < len(status)/per; g++ {
		var at []int
		ready := true
		for i := g * per; i < (g+1)*per; i++ {
			switch status[i] {
			case chainAtPool:
				at = append(at, i)
			case chainExited:
			default:
				ready = false
			}
		}
		if !ready || len(at) == 0 {
			continue
		}
		all := make([]windowStats, len(at))
		for k, i := range at {
			all[k] = stats[i]
		}
		for _, i := range at {
			if abort != nil {
				co.pooled[i] <- poolReply{err: errAborted}
			} else {
				co.pooled[i] <- poolReply{stats: all}
			}
			status[i], stats[i] = chainRunning, windowStats{}
		}
		released += len(at)
	}
	return released
}

// EBFMI returns the energy Bayesian fraction of missing information of a chain's energies,
// Σₙ (Eₙ − Eₙ₋₁)² / Σₙ (Eₙ − Ē)², or NaN with fewer than two values or constant energy.
func EBFMI(energy []float64) float64 {
	if len(energy) < 2 {
		return math.NaN()
	}
	var mean float64
	for _, e := range energy {
		mean += e
	}
	mean /= float64(len(energy))
	var num, den float64
	for i, e := range energy {
		if i > 0 {
			d := e - energy[i-1]
			num += d * d
		}
		den += (e - mean) * (e - mean)
	}
	if den == 0 {
		return math.NaN()
	}
	return num / den
}
