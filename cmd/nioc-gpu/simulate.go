package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
)

func init() {
	register(command{name: "simulate", summary: "simulate an iLQG agent and write its state trajectories as CSV", run: runSimulate})
}

func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("simulate", "--task NAME [--observe partial|full] [--planner full|partial] [--params name=value,...] [--trials 50] [--steps T | --vary-length lo:hi] [--seed 1] [--temperature τ] [--planner-iterations N] [--delay 0|1] [--force] --out FILE.csv", stderr)
	var tf taskFlags
	tf.register(fs, false)
	params := fs.String("params", "", "parameter values name=value,... (others: the task's defaults; see `nioc-gpu tasks`)")
	trials := fs.Int("trials", 50, "trials per subject")
	subjects := fs.Int("subjects", 1, "subjects, each with the same parameters and its own noise")
	steps := fs.Int("steps", 0, "time steps T >= 1 (the trajectories have T+1 states); default: the task's")
	varyLength := fs.String("vary-length", "", "trials of their own length: each trial's steps drawn uniformly from lo..hi (lo:hi, 1 <= lo <= hi), from the seed")
	seed := fs.Uint64("seed", 1, "random seed")
	temperature := fs.Float64("temperature", -1, "maximum-causal-entropy policy noise of the agent (covariance temperature·H⁻¹); default: the task's (paper Table 1), as the likelihood assumes; 0 for none")
	iterations := fs.Int("planner-iterations", 0, "stop the agent's iLQG planner after N iterations (an agent that has not finished planning); default: until it converges (at most 100)")
	delay := fs.Int("delay", 0, "sensorimotor delay of the agent in steps, 0 or 1: with 1 it senses x_{t-1} at step t (the likelihood does not model this)")
	out := fs.String("out", "", "output CSV file")
	force := fs.Bool("force", false, "replace --out if it exists")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	spec := m.Spec()
	if err := required(fs, "out"); err != nil {
		return err
	}
	if err := refuseDir("out", *out); err != nil {
		return err
	}
	theta, err := paramValues(spec, *params, "params")
	if err != nil {
		return err
	}
	warnParamsOutsideBox(stderr, spec, *params, "params", theta)
	observe, err := tf.observeMode()
	if err != nil {
		return err
	}
	planner, err := tf.plannerFor(spec)
	if err != nil {
		return err
	}
	T := spec.Steps
	if isSet(fs, "steps") {
		T = *steps
	}
	lo, hi, err := lengthRange(*varyLength, isSet(fs, "vary-length"), isSet(fs, "steps"), spec)
	if err != nil {
		return err
	}
	switch {
	case T < 1:
		return usagef("--steps must be >= 1, got %d", T)
	case *trials < 1:
		return usagef("--trials must be >= 1, got %d", *trials)
	case *subjects < 1:
		return usagef("--subjects must be >= 1, got %d", *subjects)
	case *iterations < 0:
		return usagef("--planner-iterations must be >= 1, got %d", *iterations)
	case *delay != 0 && *delay != 1:
		return usagef("--delay must be 0 or 1 (steps), got %d", *delay)
	}
	switch {
	case math.IsNaN(*temperature) || math.IsInf(*temperature, 0):
		return usagef("--temperature must be a finite number >= 0, got %g", *temperature)
	case *temperature == -1:
		*temperature = spec.Temperature
	case *temperature < 0:
		return usagef("--temperature must be >= 0, got %g", *temperature)
	}
	if !*force {
		if err := refuseExisting(forceHint, *out); err != nil {
			return err
		}
	}
	if err := checkWritable(*out); err != nil {
		return err
	}
	b, err := tf.backendOrErr()
	if err != nil {
		return err
	}
	lengths := make([][]int, *subjects)
	seeds := make([]uint64, *subjects)
	for s := range lengths {
		seeds[s] = *seed + uint64(s)*1_000_003
		lengths[s] = slices.Repeat([]int{T}, *trials)
		if hi > 0 {
			lengths[s] = control.DrawLengths(lo, hi, *trials, seeds[s])
		}
	}
	xs, byHorizon, err := control.SimulateLengths(m, theta, lengths, seeds,
		b, control.SolverOptions{Planner: planner, MaxIter: *iterations},
		control.SimOptions{Observe: observe, Temperature: *temperature, Delay: *delay})
	if err != nil {
		return err
	}
	pols := slices.Collect(maps.Values(byHorizon))
	if *iterations == 0 {
		for _, h := range slices.Sorted(maps.Keys(byHorizon)) {
			pol, which := byHorizon[h], ""
			if len(pols) > 1 {
				which = fmt.Sprintf(" (horizon %d)", h)
			}
			if !pol.Converged[0] {
				fmt.Fprintf(stderr, "warning: iLQG did not converge in %d iterations%s\n", pol.Iterations, which)
			}
		}
	}
	set := &data.Set{StateNames: spec.States, Steps: longest(lengths)}
	for s := range xs {
		subj := data.Subject{ID: strconv.Itoa(s + 1)}
		for r, tr := range xs[s] {
			subj.Trials = append(subj.Trials, data.Trial{ID: r, States: tr})
		}
		set.Subjects = append(set.Subjects, subj)
	}
	if err := data.Write(*out, set); err != nil {
		return err
	}
	stepsText := fmt.Sprintf("%d steps", T)
	if hi > 0 {
		stepsText = fmt.Sprintf("%d..%d steps (drawn uniformly; the agent plans over %s)", lo, hi, horizonText(spec))
	}
	fmt.Fprintf(stderr, "wrote %d subject(s) × %d trials × %s of %s (%s observability, %s planner) to %s\n",
		*subjects, *trials, stepsText, spec.Name, observe, planner, *out)
	fmt.Fprintf(stderr, "agent: %s; %s; %s\n", policyNoiseText(*temperature), plannerText(pols), delayText(*delay))
	return nil
}

// policyNoiseText says whether the simulated agent has policy noise (docs/method.md, "Our
// simulated agent has policy noise by default").
func policyNoiseText(temperature float64) string {
	if temperature == 0 {
		return "no policy noise (acts deterministically on its belief)"
	}
	return fmt.Sprintf("maximum-causal-entropy policy noise at temperature %g (covariance temperature·H⁻¹)", temperature)
}

// plannerText says whether the agent's planner converged, for its policies (one per horizon).
func plannerText(pols []*control.Policy) string {
	most, failed := 0, 0
	for _, pol := range pols {
		most = max(most, pol.Iterations)
		if !pol.Converged[0] {
			failed++
		}
	}
	switch {
	case len(pols) == 1 && failed == 0:
		return fmt.Sprintf("iLQG converged in %d iterations", most)
	case len(pols) == 1:
		return fmt.Sprintf("iLQG stopped after %d iterations, not converged", most)
	case failed == 0:
		return fmt.Sprintf("iLQG converged for each of %d horizons in at most %d iterations", len(pols), most)
	}
	return fmt.Sprintf("iLQG stopped after at most %d iterations, not converged for %d of %d horizons", most, failed, len(pols))
}

func delayText(delay int) string {
	if delay == 0 {
		return "no sensorimotor delay"
	}
	return fmt.Sprintf("sensorimotor delay of %d step", delay)
}
