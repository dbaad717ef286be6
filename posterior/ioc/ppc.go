package ioc

import (
	"fmt"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// DefaultPPCDraws is the number of posterior draws a predictive check simulates at, unless
// PPCOptions.Draws says otherwise.
const DefaultPPCDraws = 10

// PPCOptions configure a posterior predictive check (Sampler.Predictive).
type PPCOptions struct {
	Model  models.Model // the task the sampler's evaluator was made for
	Trials int          // trials simulated at each picked draw; must be ≥ 1
	Draws  int          // posterior draws picked per subject; 0 means DefaultPPCDraws
	Seed   uint64       // with each subject's ID, the seed of the simulations' noise
}

// Predictive simulates the agent at posterior draws: the agent the likelihood describes, with
// its observation mode (an agent that sees the state for the MCE baseline, which has no
// observation model), planner and policy noise (at each draw's own temperature when the
// temperature is sampled). It is safe for concurrent use.
type Predictive struct {
	s       *Sampler
	opts    PPCOptions
	observe control.Observe
}

// Predictive returns the posterior predictive check of the sampler's subjects with opts.
func (s *Sampler) Predictive(opts PPCOptions) (*Predictive, error) {
	if opts.Draws == 0 {
		opts.Draws = DefaultPPCDraws
	}
	switch {
	case opts.Model == nil:
		return nil, fmt.Errorf("predictive check: no model")
	case opts.Model.Spec().Name != s.sel.Spec().Name:
		return nil, fmt.Errorf("predictive check: model %s, but the sampler's task is %s", opts.Model.Spec().Name, s.sel.Spec().Name)
	case opts.Trials < 1:
		return nil, fmt.Errorf("--ppc must be >= 1 trials, got %d", opts.Trials)
	case opts.Draws < 1:
		return nil, fmt.Errorf("--ppc-draws must be >= 1, got %d", opts.Draws)
	}
	o := s.e.Options()
	observe := o.Observe
	if o.Method == likelihood.MCEBaseline {
		observe = control.ObserveFull
	}
	return &Predictive{s: s, opts: opts, observe: observe}, nil
}

// Options returns the check's options, defaults filled in.
func (p *Predictive) Options() PPCOptions { return p.opts }

// Check is the posterior predictive check of one subject.
type Check struct {
	Subject string
	// Picked are the indices of the picked draws among the subject's pooled draws (those of
	// chain 1, then chain 2, …).
	Picked []int
	// Thetas are the picked draws: every parameter of the sampler's spec (Selection().Spec(),
	// the temperature last when it is sampled), natural units.
	Thetas [][]float64
	// Simulated holds the trials simulated at each picked draw, [draw][trial][t][state];
	// trials whose states became infinite are left out (Diverged counts them).
	Simulated [][][][]float64
	Diverged  int
}

// Check simulates, at Options().Draws draws of r evenly spread over its pooled chains,
// Options().Trials trials each: trial j as long as the subject's trial j mod len(trials),
// from that trial's initial state (planned from their mean, as the likelihood's agent), its
// noise from Options().Seed and the subject's ID.
func (p *Predictive) Check(r Result, trials [][][]float64) (*Check, error) {
	if r.Err != "" {
		return nil, fmt.Errorf("subject %s has no draws: %s", r.Subject, r.Err)
	}
	if len(trials) == 0 {
		return nil, fmt.Errorf("subject %s has no trials", r.Subject)
	}
	var pooled [][]float64
	for _, ch := range r.Chains {
		pooled = append(pooled, ch.Scaled...)
	}
	if len(pooled) == 0 {
		return nil, fmt.Errorf("subject %s has no draws", r.Subject)
	}
	spec := p.s.sel.Spec()
	c := &Check{Subject: r.Subject, Picked: pickDraws(len(pooled), p.opts.Draws)}
	for _, k := range c.Picked {
		full := p.s.sel.Full(pooled[k])
		th := make([]float64, len(full))
		for i, v := range full {
			th[i] = spec.Params[i].FromScale(v)
		}
		c.Thetas = append(c.Thetas, th)
	}
	lengths, starts := make([]int, p.opts.Trials), make([][]float64, p.opts.Trials)
	for j := range lengths {
		tr := trials[j%len(trials)]
		lengths[j], starts[j] = len(tr)-1, tr[0]
	}
	sims, diverged, err := p.s.e.SimulateAgent(c.Thetas, lengths, starts, subjectSeed(p.opts.Seed, r.Subject))
	if err != nil {
		return nil, fmt.Errorf("subject %s: %w", r.Subject, err)
	}
	c.Simulated, c.Diverged = sims, diverged
	return c, nil
}

// pickDraws returns k indices of 0..n−1 evenly spread, the middles of k equal parts; all of
// them when k ≥ n.
func pickDraws(n, k int) []int {
	if k >= n {
		k = n
	}
	out := make([]int, k)
	for i := range out {
		out[i] = int((float64(i) + 0.5) * float64(n) / float64(k))
	}
	return out
}
