package data

import (
	"errors"
	"io"
	"os"
)

// ErrImplausible is wrapped by the *Error of ReadBounded and ReadFromBounded about a value
// beyond the bound.
var ErrImplausible = errors.New("data: value beyond the plausible range")

// ReadBounded is Read with a plausible range of the state values: a finite value x with
// |x| > bound (such as 1e300 from a wrong unit or a corrupted export) is an *Error naming the
// file, line and column that wraps ErrImplausible. bound <= 0 means no bound, as Read.
func ReadBounded(path string, stateNames []string, bound float64) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, "cannot open file", err)
	}
	defer f.Close()
	return ReadFromBounded(f, path, stateNames, bound)
}

// ReadFromBounded is ReadFrom with a plausible range of the state values, as ReadBounded.
func ReadFromBounded(r io.Reader, name string, stateNames []string, bound float64) (*Set, error) {
	return readFrom(r, name, stateNames, max(bound, 0))
}
