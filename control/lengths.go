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
// solved, by horizon. Like Simulate, it returns the trajectories with a *DivergedError if
// some diverged.
func SimulateLengths(m models.Model, theta []float64, lengths [][]int, seeds []uint64, b backends.Backend, sopts SolverOptions, opts SimOptions) ([][][][]float64, map[int]*Policy, error) {
	spec := m.Spec()
	if len(seeds) != len(lengths) {
		return nil, nil, fmt.Errorf("%d seeds for %d subjects", len(seeds), len(lengths))
	}
	task := spec.PlanningHorizon() == models.HorizonTask
	horizons := map[int][][2]int{} // horizon → the (subject, trial) that plan over it
	for s, ls := range lengths {
		for r, T := range ls {
			switch {
			case T < 1:
				return nil, nil, fmt.Errorf("subject %d trial %d: a trial needs at least 1 step, got %d", s, r, T)
			case task && T > spec.Steps:
				return nil, nil, fmt.Errorf("subject %d trial %d: %d steps, more than the %d steps the agent of task %s plans over", s, r, T, spec.Steps, spec.Name)
			}
			h := T
			if task {
				h = spec.Steps
			}
			horizons[h] = append(horizons[h], [2]int{s, r})
		}
	}
	out := make([][][][]float64, len(lengths))
	for s, ls := range lengths {
		out[s] = make([][][]float64, len(ls))
	}
	pols := map[int]*Policy{}
	var diverged *DivergedError
	for _, h := range slices.Sorted(maps.Keys(horizons)) {
		sv, err := NewSolver(m, h, b, sopts)
		if err != nil {
			return nil, nil, err
		}
		pol, err := sv.Solve([][]float64{theta}, nil)
		if err != nil {
			return nil, nil, err
		}
		pols[h] = pol
		bySubject := map[int][]int{}
		for _, sr := range horizons[h] {
			bySubject[sr[0]] = append(bySubject[sr[0]], sr[1])
		}
		for _, s := range slices.Sorted(maps.Keys(bySubject)) {
			ids := bySubject[s]
			o := opts
			o.Seed, o.Trials, o.TrialIDs = seeds[s], len(ids), ids
			xs, err := Simulate(m, pol, [][]float64{theta}, b, o)
			var div *DivergedError
			if errors.As(err, &div) {
				if diverged == nil {
					diverged = div
				}
			} else if err != nil {
				return nil, nil, err
			}
			for i, r := range ids {
				out[s][r] = xs[0][i][:lengths[s][r]+1]
			}
		}
	}
	if diverged != nil {
		return out, pols, diverged
	}
	return out, pols, nil
}
