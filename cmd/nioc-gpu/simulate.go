package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "simulate", summary: "simulate an iLQG agent and write its state trajectories as CSV", run: runSimulate})
}

func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("simulate", "--task NAME [--observe partial|full] [--planner full|partial] [--timing act-then-see|see-then-act] [--params name=value,...] [--trials 50] [--subjects 1] [--steps T | --vary-length lo:hi] [--seed 1] [--temperature τ] [--planner-iterations N] [--delay 0|1] [--no-feedforward] [--start-sd state=sd,... [--replan]] [--population name=mean:sd,... [--groups control=20,patient=20] [--group-effect GROUP:name=shift,...] [--truth FILE.csv] [--subjects-out FILE.csv]] [--force] --out FILE.csv", stderr)
	var tf taskFlags
	tf.register(fs, false)
	params := fs.String("params", "", "parameter values name=value,... (others: the task's defaults; see `nioc-gpu tasks`)")
	trials := fs.Int("trials", 50, "trials per subject")
	subjects := fs.Int("subjects", 1, "subjects, each with the same parameters (or, with --population, its own) and its own noise")
	steps := fs.Int("steps", 0, "time steps T >= 1 (the trajectories have T+1 states); default: the task's")
	varyLength := fs.String("vary-length", "", "trials of their own length: each trial's steps drawn uniformly from lo..hi (lo:hi, 1 <= lo <= hi), from the seed")
	seed := fs.Uint64("seed", 1, "random seed")
	temperature := fs.Float64("temperature", -1, "maximum-causal-entropy policy noise of the agent (covariance temperature·H⁻¹); default: the task's (paper Table 1), as the likelihood assumes; 0 for none")
	iterations := fs.Int("planner-iterations", 0, "stop the agent's iLQG planner after N iterations (an agent that has not finished planning); default: until it converges (at most 100)")
	delay := fs.Int("delay", 0, "sensorimotor delay of the agent in steps, 0 or 1: with 1 it senses x_{t-1} at step t (the likelihood does not model this)")
	noFeedForward := fs.Bool("no-feedforward", false, "the agent acts on the noise-free optimum's controls, without the feed-forward correction for signal-dependent noise (as the JAX reference's agents; the likelihood does not model this)")
	startSD := fs.String("start-sd", "", "spread the trials' initial states, state=sd,...: each trial starts at the task's x0 plus a normal draw with that sd (natural units; see nioc-gpu tasks for the states), from the seed; the agent plans from x0 unless --replan")
	replan := fs.Bool("replan", false, "with --start-sd: the agent plans each trial from where that trial starts (one iLQG solution per trial) instead of once from the task's x0")
	var pf populationFlags
	pf.register(fs)
	out := fs.String("out", "", "output CSV file")
	force := fs.Bool("force", false, "replace --out (and the files written beside it) if it exists")
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
	sim := study.Simulation{Subjects: *subjects, Trials: *trials, Steps: spec.Steps, Seed: *seed}
	if sim.Theta, err = paramValues(spec, *params, "params"); err != nil {
		return err
	}
	pop, draws, err := pf.draw(fs, spec, &sim, *params, stderr)
	if err != nil {
		return err
	}
	if sim.Sim.Observe, err = tf.observeMode(); err != nil {
		return err
	}
	if sim.Solver.Planner, err = tf.plannerFor(spec); err != nil {
		return err
	}
	if isSet(fs, "steps") {
		sim.Steps = *steps
	}
	if sim.MinSteps, sim.MaxSteps, err = lengthRange(*varyLength, isSet(fs, "vary-length"), isSet(fs, "steps"), spec); err != nil {
		return err
	}
	sim.Solver.MaxIter, sim.Sim.Delay, sim.Sim.NoFeedForward = *iterations, *delay, *noFeedForward
	if sim.Sim.StartSD, err = startSpread(spec, *startSD); err != nil {
		return err
	}
	if *replan && sim.Sim.StartSD == nil {
		return usagef("--replan needs --start-sd: without a spread every trial starts at x0, where the agent plans from")
	}
	sim.Sim.Replan = *replan
	if sim.Sim.Temperature, err = checkSimulation(sim, *temperature, spec.Temperature); err != nil {
		return err
	}
	outs, err := simulateOutputs(*out, *force, &pf, pop != nil)
	if err != nil {
		return err
	}
	b, err := tf.backendOrErr()
	if err != nil {
		return err
	}
	set, byHorizon, err := study.Simulate(m, b, sim)
	if err != nil {
		return err
	}
	if sim.Solver.MaxIter == 0 {
		warnNotConverged(stderr, byHorizon, sim.Sim.Replan)
	}
	if err := writeSimulation(outs, set, spec, draws); err != nil {
		return err
	}
	reportSimulation(stderr, spec, sim, byHorizon, *out)
	if pop != nil {
		reportPopulation(stderr, spec, pop, draws, outs[1], outs[2])
	}
	return nil
}

// simulateOutputs returns the files simulate writes: the data file out and, for a population,
// its truth file and subjects table (populationFlags.paths). Without force it refuses
// existing ones; it refuses files it cannot write.
func simulateOutputs(out string, force bool, pf *populationFlags, population bool) ([]string, error) {
	outs := []string{out}
	if population {
		truth, subjects, err := pf.paths(out)
		if err != nil {
			return nil, err
		}
		outs = append(outs, truth, subjects)
	}
	if !force {
		if err := refuseExisting(forceHint, outs...); err != nil {
			return nil, err
		}
	}
	for _, o := range outs {
		if err := checkWritable(o); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// writeSimulation writes the data set to outs[0] and, for a population's subjects draws of the
// task of spec, their truths to outs[1] and subjects table to outs[2].
func writeSimulation(outs []string, set *data.Set, spec models.Spec, draws *study.Draws) error {
	if err := data.Write(outs[0], set); err != nil {
		return err
	}
	if draws == nil {
		return nil
	}
	if err := draws.WriteTruth(outs[1], spec); err != nil {
		return err
	}
	return draws.WriteSubjects(outs[2])
}

// reportSimulation says on stderr what simulate wrote to out: the simulation sim of the task
// of spec, whose agent planned the policies byHorizon.
func reportSimulation(stderr io.Writer, spec models.Spec, sim study.Simulation, byHorizon map[int]*control.Policy, out string) {
	stepsText := fmt.Sprintf("%d steps", sim.Steps)
	if sim.MaxSteps > 0 {
		stepsText = fmt.Sprintf("%d..%d steps (drawn uniformly; the agent plans over %s)", sim.MinSteps, sim.MaxSteps, horizonText(spec))
	}
	fmt.Fprintf(stderr, "wrote %d subject(s) × %d trials × %s of %s (%s observability, %s planner) to %s\n",
		sim.Subjects, sim.Trials, stepsText, spec.Name, sim.Sim.Observe, sim.Solver.Planner, out)
	ff := ""
	if sim.Sim.NoFeedForward {
		ff = "; controls without the feed-forward term (the noise-free optimum's)"
	}
	fmt.Fprintf(stderr, "agent: %s; %s; %s%s\n", policyNoiseText(sim.Sim.Temperature), plannerText(slices.Collect(maps.Values(byHorizon))), delayText(sim.Sim.Delay), ff)
	if sim.Sim.StartSD != nil {
		var parts []string
		for i, sd := range sim.Sim.StartSD {
			if sd > 0 {
				parts = append(parts, fmt.Sprintf("%s sd %g", spec.States[i], sd))
			}
		}
		from := "the agent plans from the task's x0"
		if sim.Sim.Replan {
			from = "the agent plans each trial from its own start"
		}
		fmt.Fprintf(stderr, "trials start spread around the task's x0 (%s); %s\n", strings.Join(parts, ", "), from)
	}
}

// checkSimulation returns a usage error for a value of simulate's flags out of its range, and
// the agent's temperature: --temperature's, or the task's (taskTemperature) when it is -1,
// its default.
func checkSimulation(sim study.Simulation, temperature, taskTemperature float64) (float64, error) {
	switch {
	case sim.Steps < 1:
		return 0, usagef("--steps must be >= 1, got %d", sim.Steps)
	case sim.Trials < 1:
		return 0, usagef("--trials must be >= 1, got %d", sim.Trials)
	case sim.Subjects < 1:
		return 0, usagef("--subjects must be >= 1, got %d", sim.Subjects)
	case sim.Solver.MaxIter < 0:
		return 0, usagef("--planner-iterations must be >= 1, got %d", sim.Solver.MaxIter)
	case sim.Sim.Delay != 0 && sim.Sim.Delay != 1:
		return 0, usagef("--delay must be 0 or 1 (steps), got %d", sim.Sim.Delay)
	}
	switch {
	case math.IsNaN(temperature) || math.IsInf(temperature, 0):
		return 0, usagef("--temperature must be a finite number >= 0, got %g", temperature)
	case temperature == -1:
		return taskTemperature, nil
	case temperature < 0:
		return 0, usagef("--temperature must be >= 0, got %g", temperature)
	}
	return temperature, nil
}

// startSpread returns the spread of the trials' initial states that --start-sd's value s
// gives ("state=sd,...", natural units; one value per state of the task of spec, 0 where not
// named), nil for none. Unknown states and negative or non-finite spreads are errors.
func startSpread(spec models.Spec, s string) ([]float64, error) {
	names, vals, err := parseAssignments(s, "start-sd")
	if err != nil || names == nil {
		return nil, err
	}
	sd := make([]float64, len(spec.States))
	for j, name := range names {
		i := slices.Index(spec.States, name)
		if i < 0 {
			return nil, usagef("--start-sd: task %s has no state %q; its states are %s", spec.Name, name, strings.Join(spec.States, ", "))
		}
		if !(vals[j] >= 0) || math.IsInf(vals[j], 0) {
			return nil, usagef("--start-sd: %s=%g: a spread must be finite and >= 0", name, vals[j])
		}
		sd[i] = vals[j]
	}
	return sd, nil
}

// warnNotConverged warns on stderr of each planning horizon whose iLQG solution did not
// converge (with parameters of each subject's own, for how many subjects; with replan, a
// solution per trial, for how many trials).
func warnNotConverged(stderr io.Writer, byHorizon map[int]*control.Policy, replan bool) {
	agents := "subjects' agents"
	if replan {
		agents = "trials' plans"
	}
	for _, h := range slices.Sorted(maps.Keys(byHorizon)) {
		pol, which := byHorizon[h], ""
		if len(byHorizon) > 1 {
			which = fmt.Sprintf(" (horizon %d)", h)
		}
		switch n := notConverged(pol); {
		case n > 0 && pol.Problems == 1:
			fmt.Fprintf(stderr, "warning: iLQG did not converge in %d iterations%s\n", pol.Iterations, which)
		case n > 0:
			fmt.Fprintf(stderr, "warning: iLQG did not converge in %d iterations for %d of %d %s%s\n", pol.Iterations, n, pol.Problems, agents, which)
		}
	}
}

// notConverged returns how many of pol's problems did not converge.
func notConverged(pol *control.Policy) int {
	n := 0
	for _, c := range pol.Converged {
		if !c {
			n++
		}
	}
	return n
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
		if notConverged(pol) > 0 {
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
