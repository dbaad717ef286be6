package data

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var pendulum = []string{"theta", "omega"}

func TestReadFromValid(t *testing.T) {
	twoSubjects := &Set{
		StateNames: pendulum,
		Steps:      2,
		Subjects: []Subject{
			{ID: "A", Trials: []Trial{
				{ID: 0, States: [][]float64{{0.1, 0}, {0.2, 1.5}, {0.3, -2e-3}}},
				{ID: 5, States: [][]float64{{1, 2}, {3, 4}, {5, 6}}},
			}},
			{ID: "B 2", Trials: []Trial{
				{ID: 0, States: [][]float64{{-1, -2}, {-3, -4}, {-5, -6}}},
			}},
		},
	}
	varying := &Set{
		StateNames: pendulum,
		Steps:      3,
		Subjects: []Subject{
			{ID: "A", Trials: []Trial{
				{ID: 0, States: [][]float64{{1, 2}, {3, 4}}},
				{ID: 1, States: [][]float64{{1, 2}, {3, 4}, {5, 6}, {7, 8}}},
			}},
			{ID: "B", Trials: []Trial{
				{ID: 0, States: [][]float64{{1, 2}, {3, 4}, {5, 6}}},
			}},
		},
	}
	oneSubject := &Set{
		StateNames: pendulum,
		Steps:      1,
		Subjects: []Subject{
			{ID: DefaultSubject, Trials: []Trial{
				{ID: 3, States: [][]float64{{1, 2}, {3, 4}}},
				{ID: 1, States: [][]float64{{5, 6}, {7, 8}}},
			}},
		},
	}
	tests := []struct {
		name string
		in   string
		want *Set
	}{
		{
			name: "plain",
			in: "subject,trial,t,theta,omega\n" +
				"A,0,0,0.1,0\nA,0,1,0.2,1.5\nA,0,2,0.3,-2e-3\n" +
				"A,5,0,1,2\nA,5,1,3,4\nA,5,2,5,6\n" +
				"B 2,0,0,-1,-2\nB 2,0,1,-3,-4\nB 2,0,2,-5,-6\n",
			want: twoSubjects,
		},
		{
			name: "no trailing newline",
			in: "subject,trial,t,theta,omega\n" +
				"A,0,0,0.1,0\nA,0,1,0.2,1.5\nA,0,2,0.3,-2e-3\n" +
				"A,5,0,1,2\nA,5,1,3,4\nA,5,2,5,6\n" +
				"B 2,0,0,-1,-2\nB 2,0,1,-3,-4\nB 2,0,2,-5,-6",
			want: twoSubjects,
		},
		{
			name: "CRLF",
			in: "subject,trial,t,theta,omega\r\n" +
				"A,0,0,0.1,0\r\nA,0,1,0.2,1.5\r\nA,0,2,0.3,-2e-3\r\n" +
				"A,5,0,1,2\r\nA,5,1,3,4\r\nA,5,2,5,6\r\n" +
				"B 2,0,0,-1,-2\r\nB 2,0,1,-3,-4\r\nB 2,0,2,-5,-6\r\n",
			want: twoSubjects,
		},
		{
			name: "whitespace, quotes and trailing blank lines",
			in: " subject , trial,\tt ,theta , omega\n" +
				"A , 0,0 , 0.1,0\n  A,0,1,0.2 ,\t1.5\nA,0,2,0.3,-2e-3 \n" +
				"\"A\",5,0,1,2\nA,5,1,\"3\",4\nA,5,2,5,6\n" +
				"B 2,0,0,-1,-2\n B 2 ,0,1,-3,-4\nB 2,0,2,-5,-6\n\n  \n\n",
			want: twoSubjects,
		},
		{
			name: "byte order mark",
			in: "\uFEFFsubject,trial,t,theta,omega\n" +
				"A,0,0,0.1,0\nA,0,1,0.2,1.5\nA,0,2,0.3,-2e-3\n" +
				"A,5,0,1,2\nA,5,1,3,4\nA,5,2,5,6\n" +
				"B 2,0,0,-1,-2\nB 2,0,1,-3,-4\nB 2,0,2,-5,-6\n",
			want: twoSubjects,
		},
		{
			name: "trials of different lengths",
			in: "subject,trial,t,theta,omega\n" +
				"A,0,0,1,2\nA,0,1,3,4\n" +
				"A,1,0,1,2\nA,1,1,3,4\nA,1,2,5,6\nA,1,3,7,8\n" +
				"B,0,0,1,2\nB,0,1,3,4\nB,0,2,5,6\n",
			want: varying,
		},
		{
			name: "subject column omitted",
			in:   "trial,t,theta,omega\n3,0,1,2\n3,1,3,4\n1,0,5,6\n1,1,7,8\n",
			want: oneSubject,
		},
		{
			name: "subject column omitted, CRLF and whitespace",
			in:   "trial , t,theta,omega\r\n 3,0,1,2\r\n3, 1 ,3,4\r\n1,0,5,6 \r\n1,1,7,8",
			want: oneSubject,
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got, err := ReadFrom(strings.NewReader(test.in), "data.csv", pendulum)
			require.NoError(t, err)
			assert.Equal(t, test.want, got)
			assert.NoError(t, got.Validate())
		})
	}
}

func TestReadFromValues(t *testing.T) {
	in := "subject,trial,t,x\n" +
		"s,0,0,1e-400\n" + // Underflows to 0: accepted.
		"s,0,1,-0\n" +
		"s,0,2,1.7976931348623157e308\n" +
		"s,0,3,+4.5E-3\n" +
		"s,0,4,5e-324\n"
	got, err := ReadFrom(strings.NewReader(in), "v.csv", []string{"x"})
	require.NoError(t, err)
	require.Len(t, got.Subjects, 1)
	st := got.Subjects[0].Trials[0].States
	assert.Equal(t, 4, got.Steps)
	assert.Equal(t, 0.0, st[0][0])
	assert.True(t, math.Signbit(st[1][0]))
	assert.Equal(t, math.MaxFloat64, st[2][0])
	assert.Equal(t, 4.5e-3, st[3][0])
	assert.Equal(t, math.SmallestNonzeroFloat64, st[4][0])
}

func TestReadFromErrors(t *testing.T) {
	const head = "subject,trial,t,theta,omega\n"
	tests := []struct {
		name   string
		in     string
		line   int
		column string
		msg    []string // substrings of the message
	}{
		// Empty input and header.
		{name: "empty file", in: "", line: 1,
			msg: []string{"file is empty", "subject,trial,t,theta,omega"}},
		{name: "only blank lines", in: "\n\n  \n", line: 1,
			msg: []string{"file is empty"}},
		{name: "header only", in: head, line: 2,
			msg: []string{"header but no data rows"}},
		{name: "header only, no newline", in: "subject,trial,t,theta,omega", line: 2,
			msg: []string{"header but no data rows"}},
		{name: "blank line before header", in: "\n" + head + "A,0,0,1,2\nA,0,1,1,2\n", line: 1,
			msg: []string{"line is blank", "header must be the first line"}},
		{name: "wrong state columns", in: "subject,trial,t,x,y\nA,0,0,1,2\n", line: 1,
			msg: []string{"header has columns [subject trial t x y]", "expects subject,trial,t followed by the state columns theta,omega", `missing "theta", "omega"`, `unexpected "x", "y"`}},
		{name: "missing state column", in: "subject,trial,t,theta\nA,0,0,1\n", line: 1,
			msg: []string{"header has columns [subject trial t theta]", `missing "omega"`}},
		{name: "extra column", in: "subject,trial,t,theta,omega,phi\nA,0,0,1,2,3\n", line: 1,
			msg: []string{`unexpected "phi"`}},
		{name: "missing t column", in: "subject,trial,theta,omega\nA,0,1,2\n", line: 1,
			msg: []string{`missing "t"`}},
		{name: "wrong order", in: "subject,trial,t,omega,theta\nA,0,0,1,2\n", line: 1,
			msg: []string{"wrong order", "expected subject,trial,t,theta,omega"}},
		{name: "subject not first", in: "trial,subject,t,theta,omega\n0,A,0,1,2\n", line: 1,
			msg: []string{"wrong order"}},
		{name: "case", in: "subject,trial,t,Theta,omega\nA,0,0,1,2\n", line: 1,
			msg: []string{`"Theta" meant to be "theta"`, "case-sensitive"}},
		{name: "duplicate column", in: "subject,trial,t,theta,omega,theta\n", line: 1, column: "theta",
			msg: []string{"appears twice", "columns 4 and 6"}},
		{name: "empty header column", in: "subject,trial,,theta,omega\n", line: 1,
			msg: []string{"header column 3 is empty"}},
		{name: "header trailing comma", in: "subject,trial,t,theta,omega,\n", line: 1,
			msg: []string{"header column 6 is empty", "trailing comma"}},
		{name: "semicolon separator", in: "subject;trial;t;theta;omega\nA;0;0;1;2\n", line: 1,
			msg: []string{`";"`, "separated by commas"}},

		// Malformed CSV and rows.
		{name: "bare quote", in: head + "A,0,0,1\"2,3\n", line: 2,
			msg: []string{"malformed CSV", "bare"}},
		{name: "unclosed quote", in: head + "A,0,0,\"1,2\nA,0,1,1,2\n", line: 2,
			msg: []string{"malformed CSV", "quoted field starts on this line but is not closed", "gave up on line 3"}},
		{name: "too few fields", in: head + "A,0,0,1,2\nA,0,1,1\n", line: 3,
			msg: []string{"row has 4 fields but the header has 5 columns"}},
		{name: "too many fields", in: head + "A,0,0,1,2\nA,0,1,1,5,2\n", line: 3,
			msg: []string{"row has 6 fields but the header has 5 columns", "decimal separator"}},
		{name: "blank line between rows", in: head + "A,0,0,1,2\n\nA,0,1,1,2\n", line: 3,
			msg: []string{"line is blank", "only at the end"}},
		{name: "whitespace line between rows", in: head + "A,0,0,1,2\nA,0,1,1,2\n  \nB,0,0,1,2\nB,0,1,1,2\n", line: 4,
			msg: []string{"line is blank"}},

		// Fields.
		{name: "not a number", in: head + "A,0,0,1,2\nA,0,1,1,abc\n", line: 3, column: "omega",
			msg: []string{`"abc" is not a number`}},
		{name: "decimal comma", in: head + "A,0,0,1,2\nA,0,1,\"1,5\",2\n", line: 3, column: "theta",
			msg: []string{`"1,5" is not a number`, "decimal separator"}},
		{name: "hex float", in: head + "A,0,0,0x1p-2,2\nA,0,1,1,2\n", line: 2, column: "theta",
			msg: []string{`"0x1p-2" is not a number`}},
		{name: "underscore", in: head + "A,0,0,1_000,2\nA,0,1,1,2\n", line: 2, column: "theta",
			msg: []string{`"1_000" is not a number`}},
		{name: "NaN", in: head + "A,0,0,1,2\nA,0,1,NaN,2\n", line: 3, column: "theta",
			msg: []string{"value is NaN (non-finite values are not allowed)"}},
		{name: "Inf", in: head + "A,0,0,1,+Inf\nA,0,1,1,2\n", line: 2, column: "omega",
			msg: []string{"value is +Inf (non-finite values are not allowed)"}},
		{name: "-inf", in: head + "A,0,0,1,2\nA,0,1,-inf,2\n", line: 3, column: "theta",
			msg: []string{"value is -Inf"}},
		{name: "overflow", in: head + "A,0,0,1,2\nA,0,1,1,-1e400\n", line: 3, column: "omega",
			msg: []string{`"-1e400" is too large`}},
		{name: "missing value", in: head + "A,0,0,1,2\nA,0,1,1, \n", line: 3, column: "omega",
			msg: []string{"value is missing"}},
		{name: "empty subject", in: head + "A,0,0,1,2\n ,0,1,1,2\n", line: 3, column: "subject",
			msg: []string{"subject is empty"}},
		{name: "subject with comma", in: head + "\"A,B\",0,0,1,2\n", line: 2, column: "subject",
			msg: []string{`subject "A,B" contains a comma`}},
		{name: "subject with line break", in: head + "\"A\nB\",0,0,1,2\n", line: 2, column: "subject",
			msg: []string{"control character"}},
		{name: "negative trial", in: head + "A,-1,0,1,2\n", line: 2, column: "trial",
			msg: []string{"trial -1 is negative", "non-negative integer"}},
		{name: "non-integer trial", in: head + "A,1.5,0,1,2\n", line: 2, column: "trial",
			msg: []string{`"1.5" is not a valid trial`, "non-negative integer"}},
		{name: "trial not a number", in: head + "A,one,0,1,2\n", line: 2, column: "trial",
			msg: []string{`"one" is not a valid trial`}},
		{name: "huge trial", in: head + "A,99999999999999999999,0,1,2\n", line: 2, column: "trial",
			msg: []string{"too large"}},
		{name: "huge negative trial", in: head + "A,-99999999999999999999,0,1,2\n", line: 2, column: "trial",
			msg: []string{"is negative"}},
		{name: "empty trial", in: head + "A,,0,1,2\n", line: 2, column: "trial",
			msg: []string{"trial is missing"}},
		{name: "non-integer t", in: head + "A,0,0.0,1,2\n", line: 2, column: "t",
			msg: []string{`"0.0" is not a valid time step t`}},
		{name: "negative t", in: head + "A,0,-1,1,2\n", line: 2, column: "t",
			msg: []string{"time step t -1 is negative"}},
		{name: "empty t", in: head + "A,0,,1,2\n", line: 2, column: "t",
			msg: []string{"time step t is missing"}},

		// Time steps.
		{name: "first trial starts at 1", in: head + "A,0,1,1,2\nA,0,2,1,2\n", line: 2, column: "t",
			msg: []string{`trial 0 of subject "A" starts at t = 1`, "must start at t = 0"}},
		{name: "later trial starts at 1", in: head + "A,0,0,1,2\nA,0,1,1,2\nA,1,1,1,2\n", line: 4, column: "t",
			msg: []string{`trial 1 of subject "A" starts at t = 1`}},
		{name: "new subject starts at 2", in: head + "A,0,0,1,2\nA,0,1,1,2\nB,0,2,1,2\n", line: 4, column: "t",
			msg: []string{`trial 0 of subject "B" starts at t = 2`}},
		{name: "skips a step", in: head + "A,0,0,1,2\nA,0,1,1,2\nA,0,3,1,2\n", line: 4, column: "t",
			msg: []string{`trial 0 of subject "A" skips t = 2`}},
		{name: "skips steps", in: head + "A,0,0,1,2\nA,0,4,1,2\n", line: 3, column: "t",
			msg: []string{"skips t = 1..3", "t = 0 is followed by t = 4"}},
		{name: "repeats a step", in: head + "A,0,0,1,2\nA,0,1,1,2\nA,0,1,1,2\n", line: 4, column: "t",
			msg: []string{"repeats t = 1", "also on line 3"}},
		{name: "goes back", in: head + "A,0,0,1,2\nA,0,1,1,2\nA,0,2,1,2\nA,0,0,1,2\n", line: 5, column: "t",
			msg: []string{"goes back from t = 2 to t = 0", "expected t = 3"}},
		{name: "no subject column, skip", in: "trial,t,theta,omega\n0,0,1,2\n0,2,1,2\n", line: 3, column: "t",
			msg: []string{"trial 0 skips t = 1"}},

		// Trial lengths.
		{name: "single time step", in: head + "A,0,0,1,2\n", line: 2, column: "t",
			msg: []string{`trial 0 of subject "A" has a single time step`, "needs at least 2 time steps"}},
		{name: "single time step before another trial", in: head + "A,0,0,1,2\nA,1,0,1,2\nA,1,1,1,2\n", line: 2, column: "t",
			msg: []string{"needs at least 2 time steps"}},
		{name: "later single time step", in: head + "A,0,0,1,2\nA,0,1,1,2\nB,7,0,1,2\n", line: 4, column: "t",
			msg: []string{`trial 7 of subject "B" has a single time step`}},

		// Ordering.
		{name: "subject again", in: head + "A,0,0,1,2\nA,0,1,1,2\nB,0,0,1,2\nB,0,1,1,2\nA,1,0,1,2\nA,1,1,1,2\n", line: 6, column: "subject",
			msg: []string{`subject "A" appears again after subject "B"`, "lines 2-3", "contiguous"}},
		{name: "trial again", in: head + "A,0,0,1,2\nA,0,1,1,2\nA,1,0,1,2\nA,1,1,1,2\nA,0,2,1,2\n", line: 6, column: "trial",
			msg: []string{`trial 0 of subject "A" appears again after trial 1`, "lines 2-3", "contiguous"}},
		{name: "trial again, no subject column", in: "trial,t,theta,omega\n0,0,1,2\n0,1,1,2\n1,0,1,2\n1,1,1,2\n0,0,1,2\n0,1,1,2\n", line: 6, column: "trial",
			msg: []string{"trial 0 appears again after trial 1"}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			set, err := ReadFrom(strings.NewReader(test.in), "data.csv", pendulum)
			require.Error(t, err)
			assert.Nil(t, set)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "data.csv", e.File)
			assert.Equal(t, test.line, e.Line, "line")
			assert.Equal(t, test.column, e.Column, "column")
			msg := err.Error()
			prefix := "data.csv line " + strconv.Itoa(test.line)
			if test.column != "" {
				prefix += `, column "` + test.column + `"`
			}
			assert.True(t, strings.HasPrefix(msg, prefix+": "), "message %q should start with %q", msg, prefix)
			for _, s := range test.msg {
				assert.Contains(t, msg, s)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := ReadFrom(strings.NewReader("subject,trial,t,theta,omega\nA,0,0,1,2\nA,0,1,1,abc\n"), "data.csv", pendulum)
	assert.EqualError(t, err, `data.csv line 3, column "omega": "abc" is not a number`)
	_, err = ReadFrom(strings.NewReader("subject,trial,t,theta,omega\nA,0,0,NaN,2\n"), "data.csv", pendulum)
	assert.EqualError(t, err, `data.csv line 2, column "theta": value is NaN (non-finite values are not allowed)`)
}

func TestReadFromBadStateNames(t *testing.T) {
	for _, names := range [][]string{nil, {}, {""}, {"x", "x"}, {"t"}, {"a,b"}, {" x"}} {
		_, err := ReadFrom(strings.NewReader("trial,t,x\n0,0,1\n0,1,2\n"), "data.csv", names)
		require.Error(t, err, "%q", names)
		assert.Contains(t, err.Error(), "data.csv")
		assert.Contains(t, err.Error(), "invalid state names")
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.csv")
	require.NoError(t, os.WriteFile(path, []byte("trial,t,theta,omega\n0,0,1,2\n0,1,3,x\n"), 0o644))
	_, err := Read(path, pendulum)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, path, e.File)
	assert.Equal(t, 3, e.Line)
	assert.Equal(t, "omega", e.Column)
	assert.Contains(t, err.Error(), path)

	missing := filepath.Join(dir, "missing.csv")
	_, err = Read(missing, pendulum)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, missing, e.File)
	assert.Equal(t, 0, e.Line)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.Equal(t, missing+": cannot open file: no such file or directory", err.Error())
}

func TestReadFromIOError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader("trial,t,theta,omega\n0,0,1,2\n"), iotest.ErrReader(boom))
	_, err := ReadFrom(r, "data.csv", pendulum)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, errors.Is(err, boom))
	assert.Equal(t, "data.csv", e.File)
	assert.Equal(t, 3, e.Line)
	assert.Contains(t, err.Error(), "disk on fire")
}
