package data

import (
	"fmt"
	"math"
	"strings"
	"unicode"
)

// Validate checks that s obeys the rules of the trajectory format, so that
// writing s and reading the file back gives s again. It returns nil or an
// *Error whose Where and Column locate the first problem found:
//
//   - there is at least one state name; state names are non-empty, distinct,
//     differ from "subject", "trial" and "t", and contain no commas, control
//     characters or surrounding whitespace;
//   - Steps >= 1, so that every trial has at least 2 time steps;
//   - there is at least one subject and every subject has at least one trial;
//   - subject IDs are non-empty, distinct, and contain no commas, control
//     characters or surrounding whitespace;
//   - trial IDs are non-negative and distinct within a subject;
//   - every trial has between 2 and Steps+1 states, at least one has Steps+1,
//     and every state has one value per state name;
//   - every value is finite.
func (s *Set) Validate() error {
	if s == nil {
		return &Error{Msg: "set is nil"}
	}
	if msg := checkStateNames(s.StateNames); msg != "" {
		return &Error{Msg: msg}
	}
	if s.Steps < 1 {
		return &Error{Msg: fmt.Sprintf("Steps is %d, but a trial needs at least 2 time steps (Steps >= 1)", s.Steps)}
	}
	if len(s.Subjects) == 0 {
		return &Error{Msg: "set has no subjects; a file needs at least one trial"}
	}
	nstate := len(s.StateNames)
	longest := false
	subjects := make(map[string]int, len(s.Subjects))
	for i, sub := range s.Subjects {
		where := fmt.Sprintf("subject %d (ID %q)", i+1, sub.ID)
		if msg := checkSubjectID(sub.ID); msg != "" {
			return &Error{Where: where, Column: SubjectColumn, Msg: msg}
		}
		if sub.ID != strings.TrimSpace(sub.ID) {
			return &Error{Where: where, Column: SubjectColumn, Msg: "subject ID has leading or trailing whitespace, which would be lost in a file"}
		}
		if j, ok := subjects[sub.ID]; ok {
			return &Error{Where: where, Column: SubjectColumn, Msg: fmt.Sprintf("subject ID %q is also the ID of subject %d; subject IDs must be distinct", sub.ID, j+1)}
		}
		subjects[sub.ID] = i
		where = fmt.Sprintf("subject %q", sub.ID)
		if len(sub.Trials) == 0 {
			return &Error{Where: where, Msg: "subject has no trials"}
		}
		trials := make(map[int]int, len(sub.Trials))
		for k, tr := range sub.Trials {
			where := fmt.Sprintf("subject %q, trial %d (number %d of the subject)", sub.ID, tr.ID, k+1)
			if tr.ID < 0 {
				return &Error{Where: where, Column: TrialColumn, Msg: fmt.Sprintf("trial ID %d is negative; trial IDs are non-negative integers", tr.ID)}
			}
			if j, ok := trials[tr.ID]; ok {
				return &Error{Where: where, Column: TrialColumn, Msg: fmt.Sprintf("trial ID %d is also the ID of trial number %d of the subject; trial IDs must be distinct within a subject", tr.ID, j+1)}
			}
			trials[tr.ID] = k
			where = fmt.Sprintf("subject %q, trial %d", sub.ID, tr.ID)
			switch {
			case len(tr.States) < 2:
				return &Error{Where: where, Column: TimeColumn, Msg: fmt.Sprintf("trial has %d time steps; a trial needs at least 2", len(tr.States))}
			case len(tr.States) > s.Steps+1:
				return &Error{Where: where, Column: TimeColumn, Msg: fmt.Sprintf("trial has %d time steps, but Steps is %d, so no trial may have more than %d (t = 0..%d)", len(tr.States), s.Steps, s.Steps+1, s.Steps)}
			}
			longest = longest || len(tr.States) == s.Steps+1
			for t, x := range tr.States {
				where := fmt.Sprintf("subject %q, trial %d, t = %d", sub.ID, tr.ID, t)
				if len(x) != nstate {
					return &Error{Where: where, Msg: fmt.Sprintf("state has %d values, but there are %d state names (%s)", len(x), nstate, strings.Join(s.StateNames, ","))}
				}
				for j, v := range x {
					if msg := checkFinite(v); msg != "" {
						return &Error{Where: where, Column: s.StateNames[j], Msg: msg}
					}
				}
			}
		}
	}
	if !longest {
		return &Error{Msg: fmt.Sprintf("Steps is %d, but no trial has %d time steps (t = 0..%d); Steps must be the longest trial's", s.Steps, s.Steps+1, s.Steps)}
	}
	return nil
}

// checkStateNames returns a description of the first problem with names, or
// "" if there is none.
func checkStateNames(names []string) string {
	if len(names) == 0 {
		return "there are no state names; a task has at least one state"
	}
	seen := make(map[string]int, len(names))
	for i, n := range names {
		switch {
		case n == "":
			return fmt.Sprintf("state name %d is empty", i+1)
		case n != strings.TrimSpace(n):
			return fmt.Sprintf("state name %q has leading or trailing whitespace", n)
		case strings.ContainsRune(n, ','):
			return fmt.Sprintf("state name %q contains a comma", n)
		case strings.IndexFunc(n, unicode.IsControl) >= 0:
			return fmt.Sprintf("state name %q contains a control character", n)
		case n == SubjectColumn || n == TrialColumn || n == TimeColumn:
			return fmt.Sprintf("state name %q is reserved for the column %q that precedes the states", n, n)
		}
		if j, ok := seen[n]; ok {
			return fmt.Sprintf("state name %q appears twice (state names %d and %d)", n, j+1, i+1)
		}
		seen[n] = i
	}
	return ""
}

// checkSubjectID returns a description of the problem with a subject ID,
// or "" if there is none. Surrounding whitespace is not checked.
func checkSubjectID(id string) string {
	switch {
	case strings.TrimSpace(id) == "":
		return "subject is empty; every row needs a subject ID"
	case strings.ContainsRune(id, ','):
		return fmt.Sprintf("subject %q contains a comma; subject IDs must not contain commas", id)
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return fmt.Sprintf("subject %q contains a control character such as a line break or tab", id)
	}
	return ""
}

// checkFinite returns a description of the problem with a non-finite value,
// or "" if v is finite.
func checkFinite(v float64) string {
	switch {
	case math.IsNaN(v):
		return "value is NaN (non-finite values are not allowed)"
	case math.IsInf(v, 1):
		return "value is +Inf (non-finite values are not allowed)"
	case math.IsInf(v, -1):
		return "value is -Inf (non-finite values are not allowed)"
	}
	return ""
}
