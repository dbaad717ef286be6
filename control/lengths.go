package control

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// DrawLengths returns n trial lengths (steps) drawn uniformly from lo..hi, both included,
// by a generator seeded with seed (a stream apart from Simulate's noise).
func DrawLengths(lo, hi, n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 1<<63))
	out := make([]int, n)
	for i := range out {
		out[i] = lo + rng.IntN(hi-lo+1)
	}
	return out
}

// SimulateLengths simulates an agent with parameters theta (natural units) in trials of their
// own length: trial r of subject s has lengths[s][r] ≥ 1 steps, and its noise is that of
// trial r of a Simulate call seeded with seeds[s]. The agent plans as the task says
// (models.Horizon): with HorizonTrial over each trial's own length, one iLQG solution per
// length; with HorizonTask over the task's Steps, the trial being the first steps of it (no
// length may then exceed Steps). It returns the states [s][r][t][n] and the policies
// solved, by horizon (several horizons are solved together,
// each policy then of PadHorizon of the longest steps, its first h its plan:
// SolveEachHorizon). Like Simulate, it returns the trajectories with a *DivergedError if some
// diverged, its Problems the subjects (indices into lengths) with a diverging trial.
func SimulateLengths(m models.Model, theta []float64, lengths [][]int, seeds []uint64, b backends.Backend, sopts SolverOptions, opts SimOptions) ([][][][]float64, map[int]*Policy, error) {
	return simulateSubjects(m, [][]float64{theta}, lengths, seeds, b, sopts, opts)
}

// SimulateSubjects is SimulateLengths with parameters of each subject's own: subject s's
// agent has the parameters thetas[s] (natural units). The agents planning over a horizon are
// solved together, one batch of problems; the policy of a horizon has a problem per subject
// with a trial of that horizon, in the subjects' order. A subject's trajectories are those
// SimulateLengths gives it with its parameters alone. Where several horizons are solved
// together, every trial of every subject is simulated in one call (simulateTogether).
func SimulateSubjects(m models.Model, thetas [][]float64, lengths [][]int, seeds []uint64, b backends.Backend, sopts SolverOptions, opts SimOptions) ([][][][]float64, map[int]*Policy, error) {
	if len(thetas) != len(lengths) {
		return nil, nil, fmt.Errorf("%d parameter vectors for %d subjects", len(thetas), len(lengths))
	}
	return simulateSubjects(m, thetas, lengths, seeds, b, sopts, opts)
}

// simulateSubjects is SimulateSubjects, where a single parameter vector of thetas is every
// subject's (SimulateLengths: one problem solved per horizon).
func simulateSubjects(m models.Model, thetas [][]float64, lengths [][]int, seeds []uint64, b backends.Backend, sopts SolverOptions, opts SimOptions) ([][][][]float64, map[int]*Policy, error) {
	if len(seeds) != len(lengths) {
		return nil, nil, fmt.Errorf("%d seeds for %d subjects", len(seeds), len(lengths))
	}
	horizons, err := byHorizon(m.Spec(), lengths)
	if err != nil {
		return nil, nil, err
	}
	out := make([][][][]float64, len(lengths))
	for s, ls := range lengths {
		out[s] = make([][][]float64, len(ls))
	}
	hs := slices.Sorted(maps.Keys(horizons))
	groups := make([]horizonTrials, len(hs))
	for i, h := range hs {
		groups[i] = horizonTrials{h: h, trials: horizons[h], subjects: slices.Sorted(maps.Keys(horizons[h]))}
	}
	diverged := map[int]string{} // subject → where its first diverging trial diverged
	if opts.Replan {
		pols, err := replanAll(m, sopts, thetas, hs, groups, seeds, b, opts, out, lengths, diverged)
		if err != nil {
			return nil, nil, err
		}
		return out, pols, subjectsDiverged(diverged)
	}
	problems := make([][][]float64, len(groups)) // each horizon's: one for every subject planning over it
	for i, g := range groups {
		problems[i] = thetas
		if len(thetas) > 1 {
			problems[i] = make([][]float64, len(g.subjects))
			for k, s := range g.subjects {
				problems[i][k] = thetas[s]
			}
		}
	}
	pols, together, err := SolveEachHorizon(m, b, sopts, hs, func(i int) ([][]float64, [][]float64) { return problems[i], nil }, 0)
	if err != nil {
		return nil, nil, err
	}
	if together != nil && opts.Starts == nil {
		if err := simulateTogether(m, together, problems, groups, seeds, b, opts, out, lengths, diverged); err != nil {
			return nil, nil, err
		}
		return out, pols, subjectsDiverged(diverged)
	}
	for i, g := range groups {
		for k, s := range g.subjects {
			k := min(k, len(problems[i])-1)
			o := opts
			o.Seed, o.Trials, o.TrialIDs = seeds[s], len(g.trials[s]), g.trials[s]
			xs, err := Simulate(m, pols[g.h].Problem(k), problems[i][k:k+1], b, o)
			var div *DivergedError
			if errors.As(err, &div) {
				if _, ok := diverged[s]; !ok {
					diverged[s] = div.First
				}
			} else if err != nil {
				return nil, nil, err
			}
			for j, r := range g.trials[s] {
				out[s][r] = xs[0][j][:lengths[s][r]+1]
			}
		}
	}
	return out, pols, subjectsDiverged(diverged)
}

// simulateTogether is simulateSubjects' simulation where its horizons were solved together
// (together, every horizon's problems in order: SolveEachHorizon): every trial of every
// subject is one problem of a single simulation (PerProblem; Simulate runs it in chunks of
// problems), with the noises and start it has in its subject's simulation of its horizon's
// trials, the same bits on the Go backend (TestSimulateSubjectsTogether), where a simulation
// per subject and horizon makes a call each (10 reaching subjects of 20 lengths: 200 calls).
// problems[i] are group i's parameter vectors, one per subject planning over it or one for
// all. It writes the trajectories into out and the subjects with a diverging trial into
// diverged.
func simulateTogether(m models.Model, together *Policy, problems [][][]float64, groups []horizonTrials, seeds []uint64, b backends.Backend, opts SimOptions, out [][][][]float64, lengths [][]int, diverged map[int]string) error {
	spec := m.Spec()
	if err := opts.checkStartSD(spec); err != nil {
		return err
	}
	var (
		idx       []int
		picked    [][]float64
		who       []ProblemTrial
		subjectOf []int
	)
	first := 0 // group i's first problem in together
	for i, g := range groups {
		for k, s := range g.subjects {
			k := min(k, len(problems[i])-1)
			x0s := DrawStarts(spec.X0, opts.StartSD, seeds[s], g.trials[s])
			for j, r := range g.trials[s] {
				idx, picked = append(idx, first+k), append(picked, problems[i][k])
				who = append(who, ProblemTrial{Seed: seeds[s], Trial: r, X0: x0s[j]})
				subjectOf = append(subjectOf, s)
			}
		}
		first += len(problems[i])
	}
	o := opts
	o.Trials, o.TrialIDs, o.StartSD, o.PerProblem = 1, nil, nil, who
	xs, err := Simulate(m, together.Subset(idx), picked, b, o)
	var div *DivergedError
	if errors.As(err, &div) {
		for _, q := range div.Problems {
			if s := subjectOf[q]; diverged[s] == "" {
				diverged[s] = fmt.Sprintf("trial %d diverged", who[q].Trial)
			}
		}
	} else if err != nil {
		return err
	}
	for q, s := range subjectOf {
		out[s][who[q].Trial] = xs[q][0][:lengths[s][who[q].Trial]+1]
	}
	return nil
}

// horizonTrials are the trials an agent plans over horizon h: subject → its trials, and the
// subjects that have one, ascending.
type horizonTrials struct {
	h        int
	subjects []int
	trials   map[int][]int
}

// replanAll is simulateSubjects for agents that plan each trial from its own initial state
// (SimOptions.Replan): every trial is a problem, subject s's parameters thetas[s] (thetas[0]
// if there is one) and its trial r's start that of DrawStarts with seeds[s] (or Starts[r]),
// planned over its group's horizon (groups[i].h = hs[i]; SolveEachHorizon) and simulated, a
// trial per problem, each with the noises it has without replanning (one simulation for
// every horizon when they are solved together, else one for each). It writes the
// trajectories into out, the subjects with a diverging trial into diverged, and returns the
// policy of each horizon (a problem per trial, in the subjects' order and then the trials').
func replanAll(m models.Model, sopts SolverOptions, thetas [][]float64, hs []int, groups []horizonTrials, seeds []uint64, b backends.Backend, opts SimOptions, out [][][][]float64, lengths [][]int, diverged map[int]string) (map[int]*Policy, error) {
	spec := m.Spec()
	problems, starts := make([][][]float64, len(groups)), make([][][]float64, len(groups))
	who := make([][]ProblemTrial, len(groups))
	subjectOf := make([][]int, len(groups))
	for i, g := range groups {
		for _, s := range g.subjects {
			theta := thetas[min(s, len(thetas)-1)]
			x0s := DrawStarts(spec.X0, opts.StartSD, seeds[s], g.trials[s])
			for j, r := range g.trials[s] {
				if opts.Starts != nil {
					x0s[j] = opts.Starts[r]
				}
				problems[i] = append(problems[i], theta)
				starts[i] = append(starts[i], x0s[j])
				who[i] = append(who[i], ProblemTrial{Seed: seeds[s], Trial: r, X0: x0s[j]})
				subjectOf[i] = append(subjectOf[i], s)
			}
		}
	}
	pols, together, err := SolveEachHorizon(m, b, sopts, hs, func(i int) ([][]float64, [][]float64) { return problems[i], starts[i] }, 0)
	if err != nil {
		return nil, err
	}
	type run struct {
		pol       *Policy
		problems  [][]float64
		who       []ProblemTrial
		subjectOf []int
	}
	var runs []run
	if together != nil {
		runs = []run{{pol: together, problems: slices.Concat(problems...), who: slices.Concat(who...), subjectOf: slices.Concat(subjectOf...)}}
	} else {
		for i, g := range groups {
			runs = append(runs, run{pols[g.h], problems[i], who[i], subjectOf[i]})
		}
	}
	for _, r := range runs {
		o := opts
		o.Trials, o.TrialIDs, o.Starts, o.StartSD, o.PerProblem = 1, nil, nil, nil, r.who
		xs, err := Simulate(m, r.pol, r.problems, b, o)
		var div *DivergedError
		if errors.As(err, &div) {
			for _, k := range div.Problems {
				if s := r.subjectOf[k]; diverged[s] == "" {
					diverged[s] = fmt.Sprintf("trial %d diverged", r.who[k].Trial)
				}
			}
		} else if err != nil {
			return nil, err
		}
		for k, s := range r.subjectOf {
			out[s][r.who[k].Trial] = xs[k][0][:lengths[s][r.who[k].Trial]+1]
		}
	}
	return pols, nil
}

// byHorizon returns the trials of lengths (steps, [subject][trial]) by the horizon the agent
// of the task of spec plans them over, and by subject: horizon → subject → trials, ascending.
// A trial of less than 1 step, or of a task horizon longer than the task's Steps, is an error.
func byHorizon(spec models.Spec, lengths [][]int) (map[int]map[int][]int, error) {
	task := spec.PlanningHorizon() == models.HorizonTask
	horizons := map[int]map[int][]int{}
	for s, ls := range lengths {
		for r, T := range ls {
			switch {
			case T < 1:
				return nil, fmt.Errorf("subject %d trial %d: a trial needs at least 1 step, got %d", s, r, T)
			case task && T > spec.Steps:
				return nil, fmt.Errorf("subject %d trial %d: %d steps, more than the %d steps the agent of task %s plans over", s, r, T, spec.Steps, spec.Name)
			}
			h := T
			if task {
				h = spec.Steps
			}
			if horizons[h] == nil {
				horizons[h] = map[int][]int{}
			}
			horizons[h][s] = append(horizons[h][s], r)
		}
	}
	return horizons, nil
}

// subjectsDiverged returns a *DivergedError naming the subjects of diverged (subject → where
// its trial diverged), nil if there are none.
func subjectsDiverged(diverged map[int]string) error {
	if len(diverged) == 0 {
		return nil
	}
	subjects := slices.Sorted(maps.Keys(diverged))
	return &DivergedError{Problems: subjects, First: fmt.Sprintf("subject %d: %s", subjects[0], diverged[subjects[0]])}
}
