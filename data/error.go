package data

import (
	"fmt"
	"strings"
)

// Error is a problem with a trajectory file or with a Set built in memory.
//
// For a file, File is the file name, Line the 1-based line number (0 when the
// problem concerns the whole file, such as a failure to open it) and Column
// the name of the column when the problem is about a single field.
//
// For a Set built in memory (see Set.Validate), File is empty, Line is 0 and
// Where locates the problem, for example `subject "S1", trial 3, t = 4`.
type Error struct {
	File   string
	Line   int
	Column string
	Where  string
	Msg    string
	// Err is the underlying error, if any, for example the error from
	// the operating system when a file cannot be opened.
	Err error
}

// Error returns the message prefixed with its location, for example
//
//	data.csv line 17, column "omega": "abc" is not a number
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" || e.Line > 0:
		b.WriteString(e.File)
		if e.Line > 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "line %d", e.Line)
		}
	case e.Where != "":
		b.WriteString("invalid set: ")
		b.WriteString(e.Where)
	default:
		b.WriteString("invalid set")
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ", column %q", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }
