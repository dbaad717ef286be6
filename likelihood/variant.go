package likelihood

import (
	"fmt"
	"strconv"
	"strings"
)

// AgentVariant is an agent that departs from the one the likelihood describes in a way a
// real subject, or another lab's simulator, plausibly does. fit's bootstrap over agents
// simulates data from such agents at a subject's estimate and refits them
// (docs/intervals.md); bench/jaxref/robustness.py measures recovery from them under the same
// names. The zero value is the likelihood's own agent.
type AgentVariant struct {
	// NoPolicyNoise: the agent acts without the maximum-causal-entropy policy noise
	// (temperature 0), whatever the likelihood's temperature.
	NoPolicyNoise bool
	// PlannerIterations > 0: the agent's iLQG planner stopped after this many iterations,
	// from the zero-control nominal (an agent that has not finished planning).
	PlannerIterations int
	// Delay is a sensorimotor delay in steps, 0 or 1 (control.SimOptions.Delay).
	Delay int
	// NoFeedForward: the agent acts on the noise-free optimum's controls, without the
	// feed-forward correction for signal-dependent noise (control.SimOptions.NoFeedForward),
	// as the JAX reference's agents do.
	NoFeedForward bool
}

// ParseAgentVariant reads a variant's name: "ours" (the likelihood's agent), "ours-nonoise"
// (no policy noise), "iterN" (the planner stopped after N ≥ 1 iterations), "delay1" (a
// sensorimotor delay of one step) or "nofeedforward" (the noise-free optimum's controls), or
// several of the departures joined with "+" (e.g. "ours-nonoise+iter10+nofeedforward", an
// agent like the JAX reference's), as String writes them. It returns an error naming the
// accepted forms otherwise.
func ParseAgentVariant(name string) (AgentVariant, error) {
	if strings.Contains(name, "+") {
		var v AgentVariant
		for _, part := range strings.Split(name, "+") {
			p, err := ParseAgentVariant(part)
			if err != nil {
				return AgentVariant{}, fmt.Errorf("agent %q: %w", name, err)
			}
			if p == (AgentVariant{}) || p.NoPolicyNoise && v.NoPolicyNoise || p.PlannerIterations > 0 && v.PlannerIterations > 0 ||
				p.Delay > 0 && v.Delay > 0 || p.NoFeedForward && v.NoFeedForward {
				return AgentVariant{}, fmt.Errorf("agent %q: %q joins nothing new (each of ours-nonoise, iterN, delay1 and nofeedforward at most once, without ours)", name, part)
			}
			v.NoPolicyNoise = v.NoPolicyNoise || p.NoPolicyNoise
			v.PlannerIterations = max(v.PlannerIterations, p.PlannerIterations)
			v.Delay = max(v.Delay, p.Delay)
			v.NoFeedForward = v.NoFeedForward || p.NoFeedForward
		}
		return v, nil
	}
	switch {
	case name == "ours":
		return AgentVariant{}, nil
	case name == "ours-nonoise":
		return AgentVariant{NoPolicyNoise: true}, nil
	case strings.HasPrefix(name, "iter"):
		n, err := strconv.Atoi(name[len("iter"):])
		if err != nil || n < 1 {
			return AgentVariant{}, fmt.Errorf("agent %q: iterN needs a number of iterations N >= 1, e.g. iter3", name)
		}
		return AgentVariant{PlannerIterations: n}, nil
	case name == "delay1":
		return AgentVariant{Delay: 1}, nil
	case name == "nofeedforward":
		return AgentVariant{NoFeedForward: true}, nil
	}
	return AgentVariant{}, fmt.Errorf("unknown agent %q: use ours, ours-nonoise, iterN (N >= 1), delay1 or nofeedforward, or several joined with +", name)
}

// ParseAgentVariants reads a comma-separated list of ParseAgentVariant's names, each at most
// once.
func ParseAgentVariants(list string) ([]AgentVariant, error) {
	var out []AgentVariant
	seen := map[AgentVariant]bool{}
	for _, name := range strings.Split(list, ",") {
		v, err := ParseAgentVariant(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if seen[v] {
			return nil, fmt.Errorf("agent %q named twice", name)
		}
		seen[v] = true
		out = append(out, v)
	}
	return out, nil
}

// String returns the variant's name as ParseAgentVariant reads it; a variant that combines
// departures joins their names with "+".
func (v AgentVariant) String() string {
	var parts []string
	if v.NoPolicyNoise {
		parts = append(parts, "ours-nonoise")
	}
	if v.PlannerIterations > 0 {
		parts = append(parts, "iter"+strconv.Itoa(v.PlannerIterations))
	}
	if v.Delay > 0 {
		parts = append(parts, "delay"+strconv.Itoa(v.Delay))
	}
	if v.NoFeedForward {
		parts = append(parts, "nofeedforward")
	}
	if len(parts) == 0 {
		return "ours"
	}
	return strings.Join(parts, "+")
}
