package study

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Simulation says what Simulate simulates: subjects of one agent, each with its own noise, or
// (Thetas) each with parameters of its own.
type Simulation struct {
	Theta    []float64 // the agent's parameters, natural units, in the task's order
	Subjects int       // subjects, each with the same parameters and its own noise; at least 1
	// Thetas, if set, are each subject's parameters ([subject][param], natural units, the
	// task's order; Subjects of them), in place of Theta: a population's subjects
	// (Population.Draw).
	Thetas [][]float64
	// IDs, if set, are the subjects' IDs in the data (Subjects of them); nil means "1", "2", ….
	IDs    []string
	Trials int // trials per subject; at least 1
	Steps  int // steps T of every trial (T+1 states), unless MaxSteps > 0
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
// (control.SimulateLengths, or control.SimulateSubjects with s.Thetas), and returns their
// trajectories as a data set, the subjects named s.IDs or "1", "2", … and the set's Steps the
// longest trial's, with the policies the agent planned, by planning horizon (steps; with
// s.Thetas a problem per subject planning over it). It returns control.SimulateLengths'
// errors, and an error wrapping a *control.DivergedError naming the subjects whose agent
// diverged.
func Simulate(m models.Model, b backends.Backend, s Simulation) (*data.Set, map[int]*control.Policy, error) {
	switch {
	case s.Thetas != nil && len(s.Thetas) != s.Subjects:
		return nil, nil, fmt.Errorf("%d parameter vectors for %d subjects", len(s.Thetas), s.Subjects)
	case s.IDs != nil && len(s.IDs) != s.Subjects:
		return nil, nil, fmt.Errorf("%d subject IDs for %d subjects", len(s.IDs), s.Subjects)
	}
	lengths, seeds := s.Lengths()
	var xs [][][][]float64
	var byHorizon map[int]*control.Policy
	var err error
	if s.Thetas != nil {
		xs, byHorizon, err = control.SimulateSubjects(m, s.Thetas, lengths, seeds, b, s.Solver, s.Sim)
	} else {
		xs, byHorizon, err = control.SimulateLengths(m, s.Theta, lengths, seeds, b, s.Solver, s.Sim)
	}
	if div := (*control.DivergedError)(nil); errors.As(err, &div) {
		return nil, nil, fmt.Errorf("the agent of subject(s) %s diverged in simulation (its states became infinite): %w", s.names(div.Problems), err)
	}
	if err != nil {
		return nil, nil, err
	}
	set := &data.Set{StateNames: m.Spec().States, Steps: longest(lengths)}
	for i := range xs {
		subj := data.Subject{ID: s.id(i)}
		for r, tr := range xs[i] {
			subj.Trials = append(subj.Trials, data.Trial{ID: r, States: tr})
		}
		set.Subjects = append(set.Subjects, subj)
	}
	return set, byHorizon, nil
}

// id returns the ID of subject i (counted from 0).
func (s Simulation) id(i int) string {
	if s.IDs != nil {
		return s.IDs[i]
	}
	return strconv.Itoa(i + 1)
}

// names returns the IDs of the subjects (counted from 0), at most 10 of them, joined by commas.
func (s Simulation) names(subjects []int) string {
	var ids []string
	for _, i := range subjects[:min(len(subjects), 10)] {
		ids = append(ids, s.id(i))
	}
	if len(subjects) > 10 {
		ids = append(ids, fmt.Sprintf("… (%d in all)", len(subjects)))
	}
	return strings.Join(ids, ", ")
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
