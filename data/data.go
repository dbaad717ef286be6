// Package data reads and writes observed state trajectories in the
// trajectory CSV format shared by every command of nioc-gpu.
//
// A trajectory file is a comma-separated file whose first line is the header
//
//	subject,trial,t,<state names>
//
// where the state names are those of the task, in the task's order. The
// subject column may be omitted on input; all rows then belong to a single
// subject with ID "1" (DefaultSubject). Each following line is one row: the
// state of one subject in one trial at one time step t.
//
// The rows of a subject are contiguous, and within a subject the rows of a
// trial are contiguous. Within a trial, t runs 0, 1, ..., T without gaps or
// repeats, T >= 1 (at least two time steps); trials may have different T. A
// trial is a non-negative integer, a subject is any
// non-empty string without commas or control characters, and state values
// are finite float64 numbers.
//
// Surrounding whitespace in fields, \r\n line endings and blank lines at the
// end of the file are accepted; anything else that is malformed is rejected
// with an *Error that names the file, the 1-based line and, where the problem
// is about a field, the column.
package data

// Names of the columns that precede the state columns.
const (
	SubjectColumn = "subject"
	TrialColumn   = "trial"
	TimeColumn    = "t"
)

// DefaultSubject is the subject ID of every row of a file read without a
// subject column.
const DefaultSubject = "1"

// Trial is one observed trajectory: States[t][i] is state i at time t,
// t = 0, ..., T.
type Trial struct {
	ID     int
	States [][]float64
}

// Subject is one agent's trials, in file order.
type Subject struct {
	ID     string
	Trials []Trial
}

// Set is a data file: subjects in file order, each with its trials.
type Set struct {
	// StateNames are the names of the state columns, in order.
	StateNames []string
	// Steps is the longest trial's T: each trial has between 2 and T+1 states, at
	// t = 0, 1, ..., and at least one has T+1.
	Steps int
	// Subjects are the subjects in file order.
	Subjects []Subject
}

// NumTrials returns the total number of trials of all subjects in s.
func (s *Set) NumTrials() int {
	n := 0
	for _, sub := range s.Subjects {
		n += len(sub.Trials)
	}
	return n
}

// StepRange returns the least and the most steps T of any trial of s (a trial
// has T+1 states); both are 0 for a set without trials.
func (s *Set) StepRange() (lo, hi int) {
	for _, sub := range s.Subjects {
		for _, tr := range sub.Trials {
			T := len(tr.States) - 1
			if hi == 0 || T < lo {
				lo = T
			}
			hi = max(hi, T)
		}
	}
	return lo, hi
}

// Subject returns the subject of s with the given ID and true, or nil and
// false if s has no such subject. The returned pointer refers to the element
// of s.Subjects, so changes through it change s.
func (s *Set) Subject(id string) (*Subject, bool) {
	for i := range s.Subjects {
		if s.Subjects[i].ID == id {
			return &s.Subjects[i], true
		}
	}
	return nil, false
}

// StateIndex returns the index of the state column with the given name and
// true, or -1 and false if s has no such state.
func (s *Set) StateIndex(name string) (int, bool) {
	for i, n := range s.StateNames {
		if n == name {
			return i, true
		}
	}
	return -1, false
}

// Trial returns the trial of sub with the given ID and true, or nil and false
// if sub has no such trial. The returned pointer refers to the element of
// sub.Trials.
func (sub *Subject) Trial(id int) (*Trial, bool) {
	for i := range sub.Trials {
		if sub.Trials[i].ID == id {
			return &sub.Trials[i], true
		}
	}
	return nil, false
}
