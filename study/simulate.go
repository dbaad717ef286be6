package study

import (
	"slices"
	"strconv"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Simulation says what Simulate simulates: subjects of one agent, each with its own noise.
type Simulation struct {
	Theta    []float64 // the agent's parameters, natural units, in the task's order
	Subjects int       // subjects, each with the same parameters and its own noise; at least 1
	Trials   int       // trials per subject; at least 1
	Steps    int       // steps T of every trial (T+1 states), unless MaxSteps > 0
	// With MaxSteps > 0, each trial's steps are drawn uniformly from MinSteps..MaxSteps
	// (control.DrawLengths) with its subject's seed.
	MinSteps, MaxSteps int
	// Seed is the first subject's seed; subject s (counted from 0) has Seed + s·1 000 003.
	Seed   uint64
	Solver control.SolverOptions // the agent's planner
	Sim    control.SimOptions    // its perception, policy noise and delay; Trials and Seed are ignored
}

// Lengths returns the steps of each subject's trials, [subject][trial], and each subject's
// seed.
func (s Simulation) Lengths() (lengths [][]int, seeds []uint64) {
	lengths = make([][]int, s.Subjects)
	seeds = make([]uint64, s.Subjects)
	for i := range lengths {
		seeds[i] = s.Seed + uint64(i)*1_000_003
		lengths[i] = slices.Repeat([]int{s.Steps}, s.Trials)
		if s.MaxSteps > 0 {
			lengths[i] = control.DrawLengths(s.MinSteps, s.MaxSteps, s.Trials, seeds[i])
		}
	}
	return lengths, seeds
}

// Simulate simulates the subjects of s acting as the agent of m, on b
// (control.SimulateLengths), and returns their trajectories as a data set, the subjects named
// "1", "2", … and the set's Steps the longest trial's, with the policies the agent planned,
// by planning horizon (steps). It returns control.SimulateLengths' errors, a
// *control.DivergedError where the agent diverged.
func Simulate(m models.Model, b backends.Backend, s Simulation) (*data.Set, map[int]*control.Policy, error) {
	lengths, seeds := s.Lengths()
	xs, byHorizon, err := control.SimulateLengths(m, s.Theta, lengths, seeds, b, s.Solver, s.Sim)
	if err != nil {
		return nil, nil, err
	}
	set := &data.Set{StateNames: m.Spec().States, Steps: longest(lengths)}
	for i := range xs {
		subj := data.Subject{ID: strconv.Itoa(i + 1)}
		for r, tr := range xs[i] {
			subj.Trials = append(subj.Trials, data.Trial{ID: r, States: tr})
		}
		set.Subjects = append(set.Subjects, subj)
	}
	return set, byHorizon, nil
}

// longest returns the most steps of any trial.
func longest(lengths [][]int) int {
	hi := 0
	for _, ls := range lengths {
		for _, T := range ls {
			hi = max(hi, T)
		}
	}
	return hi
}
