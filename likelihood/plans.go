package likelihood

import (
	"encoding/binary"
	"math"
	"slices"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/control"
)

// Agents' plans, solved once.
//
// A subject's default fit simulates its agent at the estimate six times: the bootstrap's five
// agents (the likelihood's own, without policy noise, stopped after 10 iterations, without the
// feed-forward term, and all three at once) and the goodness-of-fit check's. Policy noise, the
// feed-forward term and a sensing delay change the simulation, not the plan, so those six
// simulations need two iLQG solutions, not six: the solve to convergence and the one stopped
// early. planCache keeps the last few solutions by what determines them (θ, the plan's initial
// state, the horizons and the planner's iterations) and solves each once, however many
// simulations ask for it at the same time.

// planCacheSize is how many solutions a planCache keeps: a few subjects' worth, as a fit's
// subjects finish their bootstraps and checks in the order they finish their restarts.
const planCacheSize = 16

// planCache holds the agents' solutions of recent simulations (Evaluator.agentPlans).
type planCache struct {
	mu      sync.Mutex
	entries map[string]*planEntry
	order   []string // keys, oldest first
	solves  int      // solutions computed (not found): what the cache saves is visible in tests
}

// planEntry is one solution once done is closed: pols by horizon, and joint, every horizon's
// problems in one policy where they were solved together (control.SolveEachHorizon); or err.
type planEntry struct {
	done  chan struct{}
	pols  map[int]*control.Policy
	joint *control.Policy
	err   error
}

// get returns the solution of key, calling solve for it if no other call has or is (the
// callers of one key in flight wait for the first). A failed solve is not kept.
func (c *planCache) get(key string, solve func() (map[int]*control.Policy, *control.Policy, error)) (map[int]*control.Policy, *control.Policy, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*planEntry{}
	}
	if en, ok := c.entries[key]; ok {
		c.mu.Unlock()
		<-en.done
		return en.pols, en.joint, en.err
	}
	en := &planEntry{done: make(chan struct{})}
	c.entries[key] = en
	c.solves++
	c.order = append(c.order, key)
	if len(c.order) > planCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.mu.Unlock()
	en.pols, en.joint, en.err = solve()
	close(en.done)
	if en.err != nil {
		c.mu.Lock()
		if c.entries[key] == en {
			delete(c.entries, key)
			c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
		}
		c.mu.Unlock()
	}
	return en.pols, en.joint, en.err
}

// planKey is what determines the agents' solutions of SimulateVariantTrials: the planner's
// parameters of each problem, its initial state (none: the task's), the horizons and the
// planner's iterations (0: to convergence), exactly, as bits.
func planKey(model, from [][]float64, hs []int, iterations int) string {
	var b []byte
	put := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	rows := func(xs [][]float64) {
		put(uint64(len(xs)))
		for _, x := range xs {
			put(uint64(len(x)))
			for _, v := range x {
				put(math.Float64bits(v))
			}
		}
	}
	rows(model)
	rows(from)
	put(uint64(len(hs)))
	for _, h := range hs {
		put(uint64(h))
	}
	put(uint64(iterations))
	return string(b)
}

// agentPlans returns the iLQG solutions of the agents of model (one problem per θ) planning
// from from (nil: the task's x0) over each horizon of hs, stopped after v.PlannerIterations
// if set: by horizon, each a copy of its own that the caller may change, and where several
// horizons were solved together (control.SolveEachHorizon) their joint policy, every
// horizon's problems in order (for horizon hs[i], problem i·len(model) + p is model[p]'s),
// which the caller may not change (nil otherwise). Each distinct solution is solved once
// among the evaluator's recent ones (planCache).
func (e *Evaluator) agentPlans(model, from [][]float64, hs []int, v AgentVariant) (map[int]*control.Policy, *control.Policy, error) {
	pols, joint, err := e.plans.get(planKey(model, from, hs, v.PlannerIterations), func() (map[int]*control.Policy, *control.Policy, error) {
		return control.SolveEachHorizon(e.sym.Model, e.agent, e.opts.Solver, hs,
			func(int) ([][]float64, [][]float64) { return model, from }, v.PlannerIterations)
	})
	if err != nil {
		return nil, nil, err
	}
	out := make(map[int]*control.Policy, len(pols))
	for h, p := range pols {
		all := make([]int, p.Problems)
		for i := range all {
			all[i] = i
		}
		out[h] = p.Subset(all)
	}
	return out, joint, nil
}
