package data

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSet returns a valid set with awkward values and IDs.
func testSet() *Set {
	return &Set{
		StateNames: []string{"theta", "omega", "x y"},
		Steps:      2,
		Subjects: []Subject{
			{ID: "S 1", Trials: []Trial{
				{ID: 4, States: [][]float64{
					{0.1, 1.0 / 3, math.Pi},
					{math.Copysign(0, -1), math.MaxFloat64, -math.SmallestNonzeroFloat64},
					{1e21, 1e-7, 123456789.123456789},
				}},
				{ID: 0, States: [][]float64{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}},
			}},
			{ID: `q"uote`, Trials: []Trial{
				{ID: 12, States: [][]float64{{-1, -2, -3}, {-4, -5, -6}, {-7, -8, 2.5e-300}}},
			}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	want := testSet()
	var buf bytes.Buffer
	require.NoError(t, WriteTo(&buf, want))
	got, err := ReadFrom(&buf, "buf", want.StateNames)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.True(t, math.Signbit(got.Subjects[0].Trials[0].States[1][0]), "-0 must round-trip")

	path := filepath.Join(t.TempDir(), "set.csv")
	require.NoError(t, Write(path, want))
	got, err = Read(path, want.StateNames)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestRoundTripVaryingLengths(t *testing.T) {
	want := testSet()
	want.Subjects[0].Trials[1].States = want.Subjects[0].Trials[1].States[:2]
	lo, hi := want.StepRange()
	assert.Equal(t, []int{1, 2}, []int{lo, hi})
	var buf bytes.Buffer
	require.NoError(t, WriteTo(&buf, want))
	got, err := ReadFrom(&buf, "buf", want.StateNames)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestRoundTripRandom(t *testing.T) {
	// Values spanning many magnitudes, as bit patterns of finite floats.
	x := uint64(0x9E3779B97F4A7C15)
	next := func() float64 {
		for {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			v := math.Float64frombits(x)
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				return v
			}
		}
	}
	want := &Set{StateNames: []string{"a", "b"}, Steps: 50}
	for s := range 3 {
		sub := Subject{ID: string(rune('A' + s))}
		for k := range 4 {
			tr := Trial{ID: k}
			for range want.Steps + 1 {
				tr.States = append(tr.States, []float64{next(), next()})
			}
			sub.Trials = append(sub.Trials, tr)
		}
		want.Subjects = append(want.Subjects, sub)
	}
	var buf bytes.Buffer
	require.NoError(t, WriteTo(&buf, want))
	got, err := ReadFrom(&buf, "buf", want.StateNames)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestWriteToFormat(t *testing.T) {
	s := &Set{
		StateNames: []string{"theta", "omega"},
		Steps:      1,
		Subjects: []Subject{{ID: "1", Trials: []Trial{
			{ID: 0, States: [][]float64{{0.5, -1}, {1e-9, 2}}},
		}}},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteTo(&buf, s))
	assert.Equal(t, "subject,trial,t,theta,omega\n1,0,0,0.5,-1\n1,0,1,1e-09,2\n", buf.String())
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()

	// Missing directory.
	path := filepath.Join(dir, "no", "such", "dir", "set.csv")
	err := Write(path, testSet())
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, path, e.File)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "cannot create file")

	// Invalid set: no file is created.
	bad := testSet()
	bad.Subjects[1].Trials[0].States[2][1] = math.NaN()
	path = filepath.Join(dir, "bad.csv")
	err = Write(path, bad)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "omega", e.Column)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "value is NaN")
	_, statErr := os.Stat(path)
	assert.True(t, errors.Is(statErr, fs.ErrNotExist), "no file must be written for an invalid set")

	var buf bytes.Buffer
	require.Error(t, WriteTo(&buf, bad))
	assert.Zero(t, buf.Len(), "nothing must be written for an invalid set")
}

func TestValidate(t *testing.T) {
	require.NoError(t, testSet().Validate())
	tests := []struct {
		name   string
		modify func(s *Set)
		column string
		msg    []string // substrings of the message
	}{
		{name: "no state names", modify: func(s *Set) { s.StateNames = nil },
			msg: []string{"no state names"}},
		{name: "empty state name", modify: func(s *Set) { s.StateNames[1] = "" },
			msg: []string{"state name 2 is empty"}},
		{name: "duplicate state name", modify: func(s *Set) { s.StateNames[2] = "theta" },
			msg: []string{`state name "theta" appears twice`}},
		{name: "reserved state name", modify: func(s *Set) { s.StateNames[0] = "trial" },
			msg: []string{`"trial" is reserved`}},
		{name: "state name with comma", modify: func(s *Set) { s.StateNames[0] = "a,b" },
			msg: []string{"contains a comma"}},
		{name: "state name with space around", modify: func(s *Set) { s.StateNames[0] = "a " },
			msg: []string{"whitespace"}},
		{name: "state name with newline", modify: func(s *Set) { s.StateNames[0] = "a\nb" },
			msg: []string{"control character"}},
		{name: "zero steps", modify: func(s *Set) { s.Steps = 0 },
			msg: []string{"Steps is 0", "at least 2 time steps"}},
		{name: "no subjects", modify: func(s *Set) { s.Subjects = nil },
			msg: []string{"no subjects"}},
		{name: "empty subject", modify: func(s *Set) { s.Subjects[1].ID = "" }, column: "subject",
			msg: []string{"subject 2", "subject is empty"}},
		{name: "subject with comma", modify: func(s *Set) { s.Subjects[1].ID = "a,b" }, column: "subject",
			msg: []string{"contains a comma"}},
		{name: "subject with space around", modify: func(s *Set) { s.Subjects[1].ID = " a" }, column: "subject",
			msg: []string{"whitespace"}},
		{name: "subject with tab", modify: func(s *Set) { s.Subjects[1].ID = "a\tb" }, column: "subject",
			msg: []string{"control character"}},
		{name: "duplicate subject", modify: func(s *Set) { s.Subjects[1].ID = "S 1" }, column: "subject",
			msg: []string{`subject ID "S 1" is also the ID of subject 1`}},
		{name: "subject without trials", modify: func(s *Set) { s.Subjects[1].Trials = nil },
			msg: []string{`subject "q\"uote": subject has no trials`}},
		{name: "negative trial", modify: func(s *Set) { s.Subjects[0].Trials[1].ID = -1 }, column: "trial",
			msg: []string{"trial ID -1 is negative"}},
		{name: "duplicate trial", modify: func(s *Set) { s.Subjects[0].Trials[1].ID = 4 }, column: "trial",
			msg: []string{`subject "S 1", trial 4 (number 2 of the subject)`, "also the ID of trial number 1"}},
		{name: "single time step", modify: func(s *Set) { s.Subjects[0].Trials[1].States = s.Subjects[0].Trials[1].States[:1] }, column: "t",
			msg: []string{`subject "S 1", trial 0`, "trial has 1 time steps; a trial needs at least 2"}},
		{name: "long trial", modify: func(s *Set) { s.Steps = 1 }, column: "t",
			msg: []string{`subject "S 1", trial 4`, "trial has 3 time steps, but Steps is 1, so no trial may have more than 2"}},
		{name: "no longest trial", modify: func(s *Set) { s.Steps = 3 },
			msg: []string{"Steps is 3, but no trial has 4 time steps", "longest trial's"}},
		{name: "short state", modify: func(s *Set) { s.Subjects[1].Trials[0].States[1] = []float64{1, 2} },
			msg: []string{`subject "q\"uote", trial 12, t = 1`, "state has 2 values, but there are 3 state names"}},
		{name: "infinite value", modify: func(s *Set) { s.Subjects[0].Trials[0].States[2][2] = math.Inf(-1) }, column: "x y",
			msg: []string{`invalid set: subject "S 1", trial 4, t = 2, column "x y": value is -Inf (non-finite values are not allowed)`}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			s := testSet()
			test.modify(s)
			err := s.Validate()
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, test.column, e.Column)
			assert.Empty(t, e.File)
			assert.Zero(t, e.Line)
			assert.True(t, strings.HasPrefix(err.Error(), "invalid set"), err.Error())
			for _, m := range test.msg {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
	var nilSet *Set
	assert.Error(t, nilSet.Validate())
}

func TestSetAccessors(t *testing.T) {
	s := testSet()
	assert.Equal(t, 3, s.NumTrials())

	sub, ok := s.Subject(`q"uote`)
	require.True(t, ok)
	assert.Equal(t, 12, sub.Trials[0].ID)
	sub.Trials[0].ID = 13
	assert.Equal(t, 13, s.Subjects[1].Trials[0].ID, "Subject must return a pointer into the set")
	_, ok = s.Subject("nobody")
	assert.False(t, ok)

	tr, ok := s.Subjects[0].Trial(0)
	require.True(t, ok)
	assert.Equal(t, 7.0, tr.States[2][0])
	_, ok = s.Subjects[0].Trial(99)
	assert.False(t, ok)

	i, ok := s.StateIndex("omega")
	assert.True(t, ok)
	assert.Equal(t, 1, i)
	i, ok = s.StateIndex("phi")
	assert.False(t, ok)
	assert.Equal(t, -1, i)
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("device full")
	}
	return len(p), nil
}

func TestWriteToIOError(t *testing.T) {
	err := WriteTo(&failWriter{n: 10}, testSet())
	assert.EqualError(t, err, "device full")
}

func TestWriteDeviceFull(t *testing.T) {
	const path = "/dev/full"
	if fi, err := os.Stat(path); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Skip("no /dev/full")
	}
	err := Write(path, testSet())
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, path, e.File)
	assert.Contains(t, err.Error(), "/dev/full: cannot write file")
	_, err = os.Stat(path)
	assert.NoError(t, err, "Write must not remove a device")
}
