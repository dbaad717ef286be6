package posterior

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Chain is the output of one chain after warm-up: one entry per draw in every slice.
type Chain struct {
	Group int // the group (subject) the chain samples
	Index int // the chain's index within its group

	Draws  [][]float64 // draws on the unconstrained space, [draw][parameter]
	Scaled [][]float64 // the same draws in the parameters' fitting scale (Target.Scale)
	LogP   []float64   // log density of the target (Jacobian included) at each draw

	Divergent  []bool    // the draw's trajectory ended in a divergence
	TreeDepth  []int     // depth of the draw's trajectory
	NLeapfrog  []int     // leapfrog steps of the draw's trajectory
	Energy     []float64 // Hamiltonian at the draw (with its momentum)
	AcceptStat []float64 // mean acceptance probability over the draw's trajectory

	Warmup    int       // warm-up iterations run (Options.Warmup, or more: Options.MaxWarmup)
	StepSize  float64   // step size after warm-up
	InvMetric []float64 // diagonal of the inverse metric (mass matrix) after warm-up
	// InvMetricDense is the whole inverse metric after warm-up when it is dense
	// (Options.DenseMetric), else nil.
	InvMetricDense [][]float64

	Evaluations int   // log-density evaluations of the chain, warm-up and initialization included
	Err         error // why the chain stopped early; it then holds the draws made before
}

// Divergences returns the number of divergent draws.
func (c *Chain) Divergences() int {
	n := 0
	for _, d := range c.Divergent {
		if d {
			n++
		}
	}
	return n
}

// EBFMI returns the chain's energy Bayesian fraction of missing information (Betancourt 2016),
// Σₙ (Eₙ − Eₙ₋₁)² / Σₙ (Eₙ − Ē)²; values below 0.3 suggest the momentum resampling explores
// the energy distribution poorly. It returns NaN with fewer than two draws or constant energy.
func (c *Chain) EBFMI() float64 { return EBFMI(c.Energy) }

// settings are Options with the defaults filled in.
type settings struct {
	chains, warmup, draws, maxWarmup   int
	seed                               uint64
	maxDepth                           int
	maxDeltaH, delta, gamma, kappa, t0 float64
	stepSize, initRadius               float64
	initBuffer, termBuffer, window     int
	init                               func(group, chain int) []float64
	initMetric                         func(group int) [][]float64
	groupSeed                          func(group int) uint64
	unsynchronized, dense, crossChain  bool
	progress                           func(Progress)
}

// chainRun is one chain's whole run: initialization, warm-up and draws.
type chainRun struct {
	group, index int
	t            *Target
	o            *settings
	rng          *rand.Rand
	out          Chain
	done         int // transitions completed, warm-up included
}

func newChainRun(t *Target, o *settings, group, index int) *chainRun {
	// Independent PCG streams: the seed and a hash of (group, chain) as the two words; with
	// GroupSeed, the group's seed and a hash of the chain.
	seed, g := o.seed, uint64(group)
	if o.groupSeed != nil {
		seed, g = o.groupSeed(group), 0
	}
	stream := splitmix64(g<<32 ^ uint64(index) ^ 0x6a09e667f3bcc909)
	return &chainRun{group: group, index: index, t: t, o: o,
		rng: rand.New(rand.NewPCG(seed, stream)),
		out: Chain{Group: group, Index: index}}
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// run initializes the chain, warms it up and draws, evaluating the log density with eval and
// calling sync before every transition; sync returning false stops the run with errAborted.
// pool (nil: none) pools the metric windows' accumulators across the group's chains.
func (c *chainRun) run(eval evalFunc, sync func() bool, pool func(windowStats) ([]windowStats, error)) error {
	o, dim := c.o, c.t.dim
	s := &nuts{dim: dim, rng: c.rng, eval: eval, metric: unitMetric(dim, o.dense), qStep: make([]float64, dim),
		eps: o.stepSize, maxDepth: o.maxDepth, maxDeltaH: o.maxDeltaH}
	defer func() { c.out.Evaluations = s.evals }()
	var prior [][]float64 // the initial inverse metric, nil for the identity
	if o.initMetric != nil {
		if prior = o.initMetric(c.group); prior != nil {
			if err := s.metric.set(prior); err != nil {
				return fmt.Errorf("initial metric: %w", err)
			}
		}
	}
	z, err := c.initialPoint(s)
	if err != nil {
		return err
	}
	da := dualAveraging{mu: math.Log(10 * o.stepSize), delta: o.delta, gamma: o.gamma, kappa: o.kappa, t0: o.t0}
	va := newVarAdapter(dim, o.warmup, o.initBuffer, o.termBuffer, o.window, o.dense)
	va.prior = prior
	if o.crossChain && va.enabled {
		va.maxWarmup = max(o.maxWarmup, o.warmup)
	}
	warmup := o.warmup
	if o.warmup > 0 {
		if err := s.initStepSize(z); err != nil {
			return err
		}
	}
	c.allocate(s.metric)
	for it := 0; it < warmup+o.draws; it++ {
		if !sync() {
			return errAborted
		}
		next, st, err := s.transition(z)
		if err != nil {
			return err
		}
		z = next
		if it < warmup {
			s.eps = da.learn(st.acceptStat)
			updated, err := va.learn(z.q, s.metric, pool)
			if err != nil {
				return err
			}
			warmup = max(warmup, va.warmup)
			if updated {
				if err := s.initStepSize(z); err != nil {
					return err
				}
				da.mu = math.Log(10 * s.eps)
				da.restart()
			}
			if it == warmup-1 {
				c.out.Warmup = warmup
				s.eps = da.final()
				c.out.StepSize = s.eps
				c.out.InvMetric = clone(s.metric.diag)
				c.out.InvMetricDense = s.metric.denseCopy()
			}
		} else {
			c.record(z, st)
		}
		c.done++
	}
	return nil
}

// initialPoint returns the chain's first state: the point Options.Init gives, or else the
// first of up to 100 points drawn uniformly in (−r, r)^dim where the density is positive and
// its gradient finite (as Stan initializes).
func (c *chainRun) initialPoint(s *nuts) (*state, error) {
	z := newState(c.t.dim)
	if c.o.init != nil {
		q := c.o.init(c.group, c.index)
		if len(q) != c.t.dim || !allFinite(q) {
			return nil, fmt.Errorf("initial point %v: need %d finite values", q, c.t.dim)
		}
		copy(z.q, q)
		if err := s.evaluate(z); err != nil {
			return nil, err
		}
		if math.IsInf(z.logp, -1) {
			return nil, fmt.Errorf("initial point %v has zero density or a gradient that is not finite", q)
		}
		return z, nil
	}
	const tries = 100
	for range tries {
		for i := range z.q {
			z.q[i] = c.o.initRadius * (2*c.rng.Float64() - 1)
		}
		if err := s.evaluate(z); err != nil {
			return nil, err
		}
		if !math.IsInf(z.logp, -1) {
			return z, nil
		}
	}
	return nil, fmt.Errorf("no point of positive density with a finite gradient in %d uniform draws in (−%g, %g)^%d",
		tries, c.o.initRadius, c.o.initRadius, c.t.dim)
}

func (c *chainRun) allocate(m *metric) {
	n := c.o.draws
	c.out.Draws = make([][]float64, 0, n)
	c.out.Scaled = make([][]float64, 0, n)
	c.out.LogP = make([]float64, 0, n)
	c.out.Divergent = make([]bool, 0, n)
	c.out.TreeDepth = make([]int, 0, n)
	c.out.NLeapfrog = make([]int, 0, n)
	c.out.Energy = make([]float64, 0, n)
	c.out.AcceptStat = make([]float64, 0, n)
	if c.o.warmup == 0 {
		c.out.StepSize = c.o.stepSize
		c.out.InvMetric, c.out.InvMetricDense = clone(m.diag), m.denseCopy()
	}
}

func (c *chainRun) record(z *state, st transitionStats) {
	c.out.Draws = append(c.out.Draws, clone(z.q))
	c.out.Scaled = append(c.out.Scaled, c.t.Scale(z.q))
	c.out.LogP = append(c.out.LogP, z.logp)
	c.out.Divergent = append(c.out.Divergent, st.divergent)
	c.out.TreeDepth = append(c.out.TreeDepth, st.depth)
	c.out.NLeapfrog = append(c.out.NLeapfrog, st.nLeapfrog)
	c.out.Energy = append(c.out.Energy, st.energy)
	c.out.AcceptStat = append(c.out.AcceptStat, st.acceptStat)
}
