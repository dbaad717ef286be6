package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Trials of their own length (docs/guide.md, "Data format"): the notice on data whose trials' length
// differs from the task's horizon, and simulate's --vary-length.

// noteLengths says on w, once per data file, when the trials of set (read from path) have
// another length than the task's horizon, and what the agent then plans over. With
// models.HorizonTask a trial longer than the horizon is an error naming it.
func noteLengths(w io.Writer, set *data.Set, spec models.Spec, path string) error {
	lo, hi := set.StepRange()
	if lo == spec.Steps && hi == spec.Steps {
		return nil
	}
	if spec.PlanningHorizon() == models.HorizonTask && hi > spec.Steps {
		for _, sub := range set.Subjects {
			for _, tr := range sub.Trials {
				if T := len(tr.States) - 1; T > spec.Steps {
					return fmt.Errorf("%s: subject %s, trial %d has %d steps, more than the %d steps the agent of task %s plans over (its horizon is the task's, whatever the trial's length)",
						path, sub.ID, tr.ID, T, spec.Steps, spec.Name)
				}
			}
		}
	}
	steps := fmt.Sprintf("%d steps", lo)
	if lo != hi {
		steps = fmt.Sprintf("%d to %d steps", lo, hi)
	}
	fmt.Fprintf(w, "notice: the trials of %s have %s, the task %s's horizon is %d; its agent plans over %s\n",
		path, steps, spec.Name, spec.Steps, horizonText(spec))
	return nil
}

// horizonText says what the task's agent plans over in a trial of another length.
func horizonText(spec models.Spec) string {
	if spec.PlanningHorizon() == models.HorizonTask {
		return fmt.Sprintf("the task's %d steps, a trial being the first steps of such a plan", spec.Steps)
	}
	return "each trial's own length"
}

// lengthRange parses --vary-length lo:hi (set: the flag was given); 0, 0 without it.
func lengthRange(spec string, set, stepsSet bool, task models.Spec) (lo, hi int, err error) {
	if !set {
		return 0, 0, nil
	}
	if stepsSet {
		return 0, 0, usagef("--steps and --vary-length exclude each other: --vary-length lo:hi sets every trial's steps")
	}
	a, b, ok := strings.Cut(spec, ":")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, usagef("--vary-length must be lo:hi, two whole numbers of steps such as 30:50, got %q", spec)
	case lo < 1 || hi < lo:
		return 0, 0, usagef("--vary-length lo:hi needs 1 <= lo <= hi (a trial has at least 1 step, 2 states), got %q", spec)
	case task.PlanningHorizon() == models.HorizonTask && hi > task.Steps:
		return 0, 0, usagef("--vary-length %s: the agent of task %s plans over its %d steps, so no trial can be longer", spec, task.Name, task.Steps)
	}
	return lo, hi, nil
}
