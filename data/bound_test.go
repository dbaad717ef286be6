package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadFromBounded: a finite value beyond the bound is an error naming the line and the
// column; values within it, and any value without a bound, are read.
func TestReadFromBounded(t *testing.T) {
	const ok = "subject,trial,t,theta,omega\nA,0,0,0.1,-1e6\nA,0,1,0.2,1e6\n"
	tests := []struct {
		name  string
		in    string
		bound float64
		want  string // the error, "" for none
	}{
		{"within", ok, 1e6, ""},
		{"no bound", "subject,trial,t,theta,omega\nA,0,0,0.1,0\nA,0,1,1e300,0\n", 0, ""},
		{"negative bound is none", "subject,trial,t,theta,omega\nA,0,0,0.1,0\nA,0,1,1e300,0\n", -1, ""},
		{"absurd", "subject,trial,t,theta,omega\nA,0,0,0.1,0\nA,0,1,1e300,0\n", 1e6,
			`d.csv line 3, column "theta": value 1e300 is beyond the plausible range of the states, |x| <= 1e+06`},
		{"absurd negative", "subject,trial,t,theta,omega\nA,0,0,0.1,0\nA,0,1,0.2,-2e6\n", 1e6,
			`d.csv line 3, column "omega": value -2e6 is beyond the plausible range`},
		{"tighter bound", ok, 10, `d.csv line 2, column "omega": value -1e6 is beyond the plausible range of the states, |x| <= 10`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ReadFromBounded(strings.NewReader(tc.in), "d.csv", pendulum, tc.bound)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Len(t, set.Subjects, 1)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var e *Error
			require.True(t, errors.As(err, &e), "an *Error")
			assert.True(t, errors.Is(err, ErrImplausible))
		})
	}
}

func TestReadBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	require.NoError(t, os.WriteFile(path, []byte("trial,t,theta,omega\n0,0,0,0\n0,1,0,5e300\n"), 0o644))
	_, err := ReadBounded(path, pendulum, 1e6)
	require.ErrorIs(t, err, ErrImplausible)
	assert.Contains(t, err.Error(), path+` line 3, column "omega": value 5e300`)
	_, err = Read(path, pendulum)
	assert.NoError(t, err, "Read has no bound")
}
