package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// Write writes s to the file at path in the trajectory CSV format, replacing
// any existing file. The directory of path must exist. If writing fails,
// the partly written file is removed. s is validated with
// Validate first, and no file is created if s is invalid; the error then
// wraps the *Error from Validate. The header always
// includes the subject column.
func Write(path string, s *Set) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("not writing %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fileError(path, "cannot create file", err)
	}
	err = write(f, s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Do not leave a truncated file behind that might read as valid,
		// but never remove anything other than a regular file.
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode().IsRegular() {
			os.Remove(path)
		}
		return fileError(path, "cannot write file", err)
	}
	return nil
}

// WriteTo writes s to w in the trajectory CSV format. s is validated with
// Validate first, and nothing is written if s is invalid. The header always
// includes the subject column, and values are written in the shortest form
// that reads back as the same float64, so reading the output gives s again.
func WriteTo(w io.Writer, s *Set) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return write(w, s)
}

// write writes the valid set s to w.
func write(w io.Writer, s *Set) error {
	cw := csv.NewWriter(w)
	rec := make([]string, 3+len(s.StateNames))
	rec[0], rec[1], rec[2] = SubjectColumn, TrialColumn, TimeColumn
	copy(rec[3:], s.StateNames)
	if err := cw.Write(rec); err != nil {
		return err
	}
	for _, sub := range s.Subjects {
		rec[0] = sub.ID
		for _, tr := range sub.Trials {
			rec[1] = strconv.Itoa(tr.ID)
			for t, x := range tr.States {
				rec[2] = strconv.Itoa(t)
				for i, v := range x {
					rec[3+i] = strconv.FormatFloat(v, 'g', -1, 64)
				}
				if err := cw.Write(rec); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// fileError returns an *Error for a failure to open, create or write the
// file at path; the path is not repeated in the message.
func fileError(path, what string, err error) *Error {
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	return &Error{File: path, Msg: what + ": " + cause.Error(), Err: err}
}
