package likelihood

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// SimulateAgent simulates the agent this likelihood describes — its observation mode (an
// agent that sees the state for the MCE baseline, which has no observation model), planner
// and policy noise (at each θ's own temperature when the temperature is fitted) — at each of
// thetas (every parameter of Spec(), natural units), trial j of lengths[j] steps from
// starts[j], its noise from seed and j. As the likelihood's agent (LinearizeILQG), it plans
// once from the trials' mean initial state and each trial starts at its own; starts nil means
// every trial at the task's initial state, planned from there. It returns the trials
// [theta][trial][t][state] without those whose states became infinite, and how many did.
// Posterior predictive checks (posterior/ioc) use it, with the subject's trials' starts.
// The agent plans and acts on graph.AgentBackend of the evaluator's backend (the Go backend
// where that is XLA's CPU plugin).
func (e *Evaluator) SimulateAgent(thetas [][]float64, lengths []int, starts [][]float64, seed uint64) ([][][][]float64, int, error) {
	out, err := e.SimulateAgentTrials(thetas, lengths, starts, seed)
	if err != nil {
		return nil, 0, err
	}
	diverged := 0
	for i := range out {
		out[i] = slices.DeleteFunc(out[i], func(tr [][]float64) bool {
			if tr == nil {
				diverged++
			}
			return tr == nil
		})
	}
	return out, diverged, nil
}

// SimulateAgentTrials is SimulateAgent with every trial kept in its place: nil where its
// states became infinite. fit's goodness-of-fit check and bootstrap split one problem's
// trials into data sets with it (one iLQG solve for all of them).
func (e *Evaluator) SimulateAgentTrials(thetas [][]float64, lengths []int, starts [][]float64, seed uint64) ([][][][]float64, error) {
	return e.SimulateVariantTrials(thetas, lengths, starts, seed, AgentVariant{})
}

// SimulateVariantTrials is SimulateAgentTrials for an agent that departs from the
// likelihood's as v says: without policy noise, with its planner stopped early, sensing with a
// delay, or without the feed-forward correction for signal-dependent noise. fit's bootstrap over agents uses it.
func (e *Evaluator) SimulateVariantTrials(thetas [][]float64, lengths []int, starts [][]float64, seed uint64, v AgentVariant) ([][][][]float64, error) {
	if v.Delay != 0 && v.Delay != 1 {
		return nil, fmt.Errorf("agent %s: a delay of 0 or 1 steps, got %d", v, v.Delay)
	}
	if starts != nil && len(starts) != len(lengths) {
		return nil, fmt.Errorf("%d initial states for %d trials", len(starts), len(lengths))
	}
	m := e.sym.Model
	spec := m.Spec()
	np := len(spec.Params)
	observe := e.opts.Observe
	if e.opts.Method == MCEBaseline {
		observe = control.ObserveFull
	}
	model := make([][]float64, len(thetas)) // the planner's parameters: no temperature
	for i, th := range thetas {
		model[i] = th[:np]
	}
	horizons := map[int][]int{} // horizon → the trials planned over it
	for j, T := range lengths {
		h := T
		if spec.PlanningHorizon() == models.HorizonTask {
			if T > spec.Steps {
				return nil, fmt.Errorf("a trial of %d steps, more than the %d the agent of task %s plans over", T, spec.Steps, spec.Name)
			}
			h = spec.Steps
		}
		if T < 1 {
			return nil, fmt.Errorf("a trial of %d steps: need at least 1", T)
		}
		horizons[h] = append(horizons[h], j)
	}
	out := make([][][][]float64, len(thetas))
	for i := range out {
		out[i] = make([][][]float64, len(lengths))
	}
	var from [][]float64 // the plan's initial state, per θ: nil for the task's
	if starts != nil {
		mean := meanStart(starts)
		for range thetas {
			from = append(from, mean)
		}
	}
	hs := slices.Sorted(maps.Keys(horizons))
	temperature := e.opts.Temperature // the simulation's (scaleNoise under FitTemperature)
	switch {
	case v.NoPolicyNoise:
		temperature = 0
	case e.opts.FitTemperature:
		temperature = 1
	}
	// The simulation's programs compile (or load from XLA's cache) beside the planning instead
	// of after it (control.PrepareSimulation), one horizon's after another: trials of many
	// lengths would otherwise compile as many programs at once. Horizons planned together
	// are simulated together (simulateJointly): a trial per problem, in chunks of one shape.
	var prepared sync.WaitGroup
	prepared.Go(func() {
		so := control.SimOptions{Observe: observe, Temperature: temperature, Delay: v.Delay}
		if control.SolvesTogether(e.opts.Solver, len(hs)) && jointSimulation {
			_ = control.PrepareProblemSimulation(m, e.agent, len(thetas)*len(lengths), control.PadHorizon(hs[len(hs)-1]), so)
			return
		}
		for _, h := range hs {
			_ = control.PrepareSimulation(m, e.agent, len(thetas), h, len(horizons[h]), so)
		}
	})
	pols, joint, err := e.agentPlans(model, from, hs, v)
	prepared.Wait()
	if err != nil {
		return nil, err
	}
	so := control.SimOptions{Observe: observe, Seed: seed, Temperature: temperature, Delay: v.Delay, NoFeedForward: v.NoFeedForward}
	scale := e.opts.FitTemperature && !v.NoPolicyNoise // each θ's own policy noise (scaleNoise)
	if joint != nil && jointSimulation {
		err = e.simulateJointly(joint, thetas, model, hs, horizons, lengths, starts, so, scale, out)
	} else {
		err = e.simulateByHorizon(pols, thetas, model, hs, horizons, lengths, starts, so, scale, out)
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		for j, tr := range out[i] {
			if !finite(tr) {
				out[i][j] = nil
			}
		}
	}
	return out, nil
}

// simulateByHorizon is SimulateVariantTrials' simulation of each horizon h of hs under its
// policy pols[h] (which it changes where scale gives each θ its policy noise, scaleNoise), a
// call for the trials horizons[h] of every θ, with so's options. Its trials, cut to their
// lengths, go into out[θ][trial].
func (e *Evaluator) simulateByHorizon(pols map[int]*control.Policy, thetas, model [][]float64, hs []int, horizons map[int][]int, lengths []int, starts [][]float64, so control.SimOptions, scale bool, out [][][][]float64) error {
	m := e.sym.Model
	for _, h := range hs {
		pol := pols[h]
		so.Trials, so.TrialIDs, so.Starts = len(horizons[h]), horizons[h], nil
		if starts != nil {
			for _, j := range horizons[h] {
				so.Starts = append(so.Starts, starts[j])
			}
		}
		if scale {
			scaleNoise(pol, thetas, len(m.Spec().Params))
		}
		xs, err := control.Simulate(m, pol, model, e.agent, so)
		if div := (*control.DivergedError)(nil); err != nil && !errors.As(err, &div) {
			return err
		}
		for i := range thetas {
			for r, j := range horizons[h] {
				out[i][j] = xs[i][r][:lengths[j]+1]
			}
		}
	}
	return nil
}

// simulateJointly is SimulateVariantTrials' simulation where its horizons hs were solved
// together (joint, every horizon's problems in order: agentPlans): every trial of every θ is
// one problem of a single simulation (control.SimOptions.PerProblem; on XLA in chunks of
// problems of one shape), with the noises and start it has among its own horizon's trials,
// the same bits on the Go backend (TestSimulateJointly), where a simulation per horizon makes
// as many calls (and on the Go backend as many graphs, of different trial counts) as there
// are lengths.
// scale gives each problem its θ's policy noise (scaleNoise). Its trials, cut to their
// lengths, go into out[θ][trial].
func (e *Evaluator) simulateJointly(joint *control.Policy, thetas, model [][]float64, hs []int, horizons map[int][]int, lengths []int, starts [][]float64, so control.SimOptions, scale bool, out [][][][]float64) error {
	spec := e.sym.Model.Spec()
	P := len(thetas)
	type at struct{ theta, trial int }
	var (
		idx          []int
		picked, full [][]float64 // each problem's planner parameters and θ
		who          []at
	)
	for i, h := range hs {
		for _, j := range horizons[h] {
			x0 := spec.X0
			if starts != nil {
				x0 = starts[j]
			}
			for p := range P {
				idx = append(idx, i*P+p)
				picked, full = append(picked, model[p]), append(full, thetas[p])
				who = append(who, at{p, j})
				so.PerProblem = append(so.PerProblem, control.ProblemTrial{Seed: so.Seed, Problem: p, Trial: j, X0: x0})
			}
		}
	}
	pol := joint.Subset(idx)
	if scale {
		scaleNoise(pol, full, len(spec.Params))
	}
	so.Trials = 1
	xs, err := control.Simulate(e.sym.Model, pol, picked, e.agent, so)
	if div := (*control.DivergedError)(nil); err != nil && !errors.As(err, &div) {
		return err
	}
	for q, w := range who {
		out[w.theta][w.trial] = xs[q][0][:lengths[w.trial]+1]
	}
	return nil
}

// jointSimulation lets tests compare simulateJointly with a simulation per horizon.
var jointSimulation = true

func finite(tr [][]float64) bool {
	for _, x := range tr {
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// scaleNoise gives problem q of pol the policy noise of temperature thetas[q][np] (the
// fitted temperature) when simulated at temperature 1: the noise's covariance τ·H̃⁻¹ is
// (H̃/τ)⁻¹, so H̃, which the simulation uses for nothing else, is divided by τ. One
// simulation then serves parameter vectors of different temperatures.
func scaleNoise(pol *control.Policy, thetas [][]float64, np int) {
	P := pol.Problems
	for t := range len(pol.Hessian) / P {
		for q := range P {
			pol.Hessian[t*P+q] /= thetas[q][np]
		}
	}
}
