package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Read reads the trajectory file at path, whose state columns must be
// stateNames in this order. Errors name the path; see ReadFrom.
func Read(path string, stateNames []string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, "cannot open file", err)
	}
	defer f.Close()
	return ReadFrom(f, path, stateNames)
}

// ReadFrom reads a trajectory file from r, whose state columns must be
// stateNames in this order. name is the name of the input used in error
// messages, usually the file name.
//
// A problem with the input is reported as an *Error naming name, the
// 1-based line and, for a problem with a single field, the column. Read
// checks that
//
//   - the input is well-formed CSV with a header on line 1 and at least one
//     data row, no blank lines before or between rows, and as many fields
//     in every row as there are columns in the header;
//   - the header is subject,trial,t followed by stateNames, or the same
//     without the subject column;
//   - subjects are non-empty and contain no commas or control characters;
//   - trials are non-negative integers and t is an integer;
//   - state values are finite numbers;
//   - the rows of each subject, and of each trial within a subject, are
//     contiguous;
//   - within a trial t runs 0, 1, 2, ... without gaps or repeats;
//   - every trial has at least 2 time steps; trials may differ in length, and
//     the set's Steps is the longest trial's T.
//
// Invalid stateNames are reported as an error that is not an *Error.
func ReadFrom(r io.Reader, name string, stateNames []string) (*Set, error) {
	return readFrom(r, name, stateNames, 0)
}

// readFrom is ReadFrom with values beyond bound in magnitude refused (bound > 0).
func readFrom(r io.Reader, name string, stateNames []string, bound float64) (*Set, error) {
	if msg := checkStateNames(stateNames); msg != "" {
		return nil, fmt.Errorf("data: cannot read %s: invalid state names: %s", name, msg)
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	p := &parser{
		name:     name,
		states:   stateNames,
		cr:       cr,
		set:      &Set{StateNames: slices.Clone(stateNames)},
		subjects: make(map[string]span),
		bound:    bound,
	}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.set, nil
}

// span is a range of lines, first to last inclusive.
type span struct{ first, last int }

func (s span) String() string {
	if s.first == s.last {
		return fmt.Sprintf("line %d", s.first)
	}
	return fmt.Sprintf("lines %d-%d", s.first, s.last)
}

// parser holds the state of ReadFrom.
type parser struct {
	name   string
	states []string
	cr     *csv.Reader

	// end is the last line of the previous record, blank the first blank
	// line after it, if any.
	end, blank int
	headerRead bool

	columns    []string // trimmed header
	hasSubject bool

	set *Set

	// The current subject is the last of set.Subjects and the current trial
	// the last of its trials; started reports whether there is one.
	started  bool
	subject  string
	trial    int
	lastT    int
	subjects map[string]span // lines of every subject read so far
	trials   map[int]span    // lines of every trial of the current subject
	lines    span            // lines of the current trial

	bound float64 // the largest magnitude a value may have; 0 for none
}

// errorf returns an *Error about the input at line and column.
func (p *parser) errorf(line int, column, format string, args ...any) *Error {
	return &Error{File: p.name, Line: line, Column: column, Msg: fmt.Sprintf(format, args...)}
}

// parse reads the header and all rows into p.set.
func (p *parser) parse() error {
	rec, line, err := p.next()
	if err == io.EOF {
		return p.errorf(1, "", "file is empty; expected a header line %s", strings.Join(p.expected(true), ","))
	}
	if err != nil {
		return err
	}
	if err := p.header(rec, line); err != nil {
		return err
	}
	p.headerRead = true
	for {
		rec, line, err := p.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := p.row(rec, line); err != nil {
			return err
		}
	}
	if !p.started {
		return p.errorf(line+1, "", "file has a header but no data rows; it needs at least one trial of at least 2 time steps")
	}
	return p.endTrial()
}

// next returns the next record that is not blank and its line, or io.EOF at
// the end of the input. Blank lines are accepted only at the end.
func (p *parser) next() ([]string, int, error) {
	for {
		rec, err := p.cr.Read()
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		if err != nil {
			return nil, 0, p.readError(err)
		}
		line, _ := p.cr.FieldPos(0)
		if p.blank == 0 && line > p.end+1 {
			p.blank = p.end + 1 // csv.Reader skipped empty lines.
		}
		last, _ := p.cr.FieldPos(len(rec) - 1)
		p.end = last + strings.Count(rec[len(rec)-1], "\n")
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			if p.blank == 0 {
				p.blank = line
			}
			continue
		}
		if p.blank != 0 {
			if !p.headerRead {
				return nil, 0, p.errorf(p.blank, "", "line is blank; the header must be the first line of the file")
			}
			return nil, 0, p.errorf(p.blank, "", "line is blank; blank lines are allowed only at the end of the file")
		}
		return rec, line, nil
	}
}

// readError converts an error from the csv.Reader into an *Error.
func (p *parser) readError(err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: p.name, Line: p.end + 1, Msg: "cannot read: " + err.Error(), Err: err}
	}
	if errors.Is(pe.Err, csv.ErrQuote) && pe.StartLine != pe.Line {
		msg := fmt.Sprintf("malformed CSV: a quoted field starts on this line but is not closed properly (the reader gave up on line %d, character %d: %v)", pe.Line, pe.Column, pe.Err)
		return &Error{File: p.name, Line: pe.StartLine, Msg: msg, Err: err}
	}
	msg := fmt.Sprintf("malformed CSV at character %d: %v", pe.Column, pe.Err)
	if errors.Is(pe.Err, csv.ErrBareQuote) {
		msg += ` (a " may appear only in a field enclosed in quotes, written as "")`
	}
	return &Error{File: p.name, Line: pe.Line, Msg: msg, Err: err}
}

// expected returns the expected header.
func (p *parser) expected(subject bool) []string {
	var cols []string
	if subject {
		cols = append(cols, SubjectColumn)
	}
	cols = append(cols, TrialColumn, TimeColumn)
	return append(cols, p.states...)
}

// header checks the header record rec on the given line.
func (p *parser) header(rec []string, line int) error {
	cols := make([]string, len(rec))
	for i, f := range rec {
		if i == 0 {
			f = strings.TrimPrefix(f, "\uFEFF") // Byte order mark written by some spreadsheets.
		}
		cols[i] = strings.TrimSpace(f)
	}
	if len(cols) == 1 {
		for _, sep := range []string{";", "\t", "|"} {
			if strings.Contains(cols[0], sep) {
				return p.errorf(line, "", "header %q has a single column; the file seems to use %q as separator, but columns must be separated by commas", cols[0], sep)
			}
		}
	}
	seen := make(map[string]int, len(cols))
	for i, c := range cols {
		if c == "" {
			msg := fmt.Sprintf("header column %d is empty", i+1)
			if i == len(cols)-1 {
				msg += " (is there a trailing comma?)"
			}
			return p.errorf(line, "", "%s", msg)
		}
		if j, ok := seen[c]; ok {
			return p.errorf(line, c, "column appears twice in the header (columns %d and %d)", j+1, i+1)
		}
		seen[c] = i
	}
	_, p.hasSubject = seen[SubjectColumn]
	want := p.expected(p.hasSubject)
	if slices.Equal(cols, want) {
		p.columns = cols
		return nil
	}

	var missing, extra []string
	for _, c := range want {
		if _, ok := seen[c]; !ok {
			missing = append(missing, c)
		}
	}
	for _, c := range cols {
		if !slices.Contains(want, c) {
			extra = append(extra, c)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "header has columns %v but expects %s,%s,%s followed by the state columns %s (the subject column may be omitted)",
		cols, SubjectColumn, TrialColumn, TimeColumn, strings.Join(p.states, ","))
	if len(missing) == 0 && len(extra) == 0 {
		fmt.Fprintf(&b, "; the columns are in the wrong order, expected %s", strings.Join(want, ","))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "; missing %s", quoteList(missing))
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, "; unexpected %s", quoteList(extra))
		for _, c := range extra {
			for _, m := range missing {
				if strings.EqualFold(c, m) {
					fmt.Fprintf(&b, " (column names are case-sensitive: is %q meant to be %q?)", c, m)
				}
			}
		}
	}
	return p.errorf(line, "", "%s", b.String())
}

// quoteList returns the quoted, comma-separated elements of list.
func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// desc describes a trial of a subject for error messages.
func (p *parser) desc(subject string, trial int) string {
	if p.hasSubject {
		return fmt.Sprintf("trial %d of subject %q", trial, subject)
	}
	return fmt.Sprintf("trial %d", trial)
}

// row checks and adds the data record rec on the given line.
func (p *parser) row(rec []string, line int) error {
	if len(rec) != len(p.columns) {
		msg := fmt.Sprintf("row has %d fields but the header has %d columns (%s)", len(rec), len(p.columns), strings.Join(p.columns, ","))
		if len(rec) > len(p.columns) {
			msg += "; is there a trailing comma, or a comma used as decimal separator?"
		}
		return p.errorf(line, "", "%s", msg)
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}

	col := 0
	subject := DefaultSubject
	if p.hasSubject {
		subject = rec[0]
		if msg := checkSubjectID(subject); msg != "" {
			return p.errorf(line, SubjectColumn, "%s", msg)
		}
		col++
	}
	trial, err := p.integer(rec[col], line, TrialColumn, "trial")
	if err != nil {
		return err
	}
	t, err := p.integer(rec[col+1], line, TimeColumn, "time step t")
	if err != nil {
		return err
	}
	col += 2
	x := make([]float64, len(p.states))
	for i, name := range p.states {
		v, err := p.float(rec[col+i], line, name)
		if err != nil {
			return err
		}
		x[i] = v
	}

	newSubject := !p.started || subject != p.subject
	if newSubject {
		if p.started {
			if err := p.endTrial(); err != nil {
				return err
			}
		}
		if lines, ok := p.subjects[subject]; ok {
			return p.errorf(line, SubjectColumn, "subject %q appears again after subject %q; it already appeared on %s, but the rows of a subject must be contiguous (sort the rows by subject, trial and t)", subject, p.subject, lines)
		}
		p.set.Subjects = append(p.set.Subjects, Subject{ID: subject})
		p.subject = subject
		p.trials = make(map[int]span)
		p.subjects[subject] = span{line, line}
	}
	sub := &p.set.Subjects[len(p.set.Subjects)-1]

	if newSubject || trial != p.trial {
		if !newSubject {
			if err := p.endTrial(); err != nil {
				return err
			}
		}
		if lines, ok := p.trials[trial]; ok {
			return p.errorf(line, TrialColumn, "%s appears again after trial %d; it already appeared on %s, but the rows of a trial must be contiguous (sort the rows by subject, trial and t)", p.desc(subject, trial), p.trial, lines)
		}
		if t != 0 {
			return p.errorf(line, TimeColumn, "%s starts at t = %d; every trial must start at t = 0", p.desc(subject, trial), t)
		}
		sub.Trials = append(sub.Trials, Trial{ID: trial})
		p.trial = trial
		p.lines = span{line, line}
		p.started = true
	} else if t != p.lastT+1 {
		d := p.desc(subject, trial)
		switch {
		case t == p.lastT:
			return p.errorf(line, TimeColumn, "%s repeats t = %d (also on line %d); t must increase by 1 from row to row", d, t, p.lines.last)
		case t < p.lastT:
			return p.errorf(line, TimeColumn, "%s goes back from t = %d to t = %d; t must increase by 1 from row to row (expected t = %d)", d, p.lastT, t, p.lastT+1)
		case t == p.lastT+2:
			return p.errorf(line, TimeColumn, "%s skips t = %d (t = %d is followed by t = %d); t must increase by 1 from row to row", d, p.lastT+1, p.lastT, t)
		default:
			return p.errorf(line, TimeColumn, "%s skips t = %d..%d (t = %d is followed by t = %d); t must increase by 1 from row to row", d, p.lastT+1, t-1, p.lastT, t)
		}
	}
	tr := &sub.Trials[len(sub.Trials)-1]
	tr.States = append(tr.States, x)
	p.lastT = t
	p.lines.last = line
	p.trials[trial] = p.lines
	p.subjects[subject] = span{p.subjects[subject].first, line}
	return nil
}

// endTrial checks the length of the current trial when it is complete.
func (p *parser) endTrial() error {
	if p.lastT == 0 {
		return p.errorf(p.lines.last, TimeColumn, "%s has a single time step (t = 0); a trial needs at least 2 time steps (t = 0, 1, ...)", p.desc(p.subject, p.trial))
	}
	p.set.Steps = max(p.set.Steps, p.lastT)
	return nil
}

// integer parses the non-negative integer field s of the given column.
// what names the quantity in messages.
func (p *parser) integer(s string, line int, column, what string) (int, error) {
	if s == "" {
		return 0, p.errorf(line, column, "%s is missing (empty field)", what)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			if strings.HasPrefix(s, "-") {
				return 0, p.errorf(line, column, "%s %s is negative; it must be a non-negative integer", what, s)
			}
			return 0, p.errorf(line, column, "%s %s is too large", what, s)
		}
		return 0, p.errorf(line, column, "%q is not a valid %s; it must be a non-negative integer such as 0, 1 or 2", s, what)
	}
	if n < 0 {
		return 0, p.errorf(line, column, "%s %d is negative; it must be a non-negative integer", what, n)
	}
	return n, nil
}

// float parses the state value field s of the given column.
func (p *parser) float(s string, line int, column string) (float64, error) {
	if s == "" {
		return 0, p.errorf(line, column, "value is missing (empty field); missing values are not allowed")
	}
	if strings.ContainsAny(s, "_xXpP") {
		// Go syntax accepted by strconv.ParseFloat but not by the format.
		return 0, p.errorf(line, column, "%q is not a number (write numbers in decimal, like 1.5 or -2e-3)", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0) {
			return 0, p.errorf(line, column, "%q is too large in magnitude for a float64 (non-finite values are not allowed)", s)
		}
		if strings.Contains(s, ",") {
			return 0, p.errorf(line, column, "%q is not a number (use '.' as the decimal separator)", s)
		}
		return 0, p.errorf(line, column, "%q is not a number", s)
	}
	if msg := checkFinite(v); msg != "" {
		return 0, p.errorf(line, column, "%s", msg)
	}
	if p.bound > 0 && math.Abs(v) > p.bound {
		e := p.errorf(line, column, "value %s is beyond the plausible range of the states, |x| <= %g (a wrong unit, or a corrupted or mis-exported value?)", s, p.bound)
		e.Err = ErrImplausible
		return 0, e
	}
	return v, nil
}
