package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/models"
	"gonum.org/v1/gonum/mat"
)

// The values of --belief-prior and --temperature.

// beliefPriorFlag is --belief-prior: a variance (the same in every state coordinate, no
// correlations) or a full covariance matrix written by rows, "a,b;c,d".
type beliefPriorFlag struct {
	variance float64
	matrix   [][]float64
}

func (b *beliefPriorFlag) String() string {
	if b == nil || b.matrix == nil {
		if b == nil || b.variance == 0 {
			return ""
		}
		return strconv.FormatFloat(b.variance, 'g', -1, 64)
	}
	rows := make([]string, len(b.matrix))
	for i, r := range b.matrix {
		cells := make([]string, len(r))
		for j, v := range r {
			cells[j] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		rows[i] = strings.Join(cells, ",")
	}
	return strings.Join(rows, ";")
}

func (b *beliefPriorFlag) Set(s string) error {
	if !strings.ContainsAny(s, ",;") {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("want a finite variance >= 0 or a covariance matrix by rows, \"a,b;c,d\", got %q", s)
		}
		b.variance, b.matrix = v, nil
		return nil
	}
	var m [][]float64
	for i, row := range strings.Split(s, ";") {
		var r []float64
		for j, cell := range strings.Split(row, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("row %d, column %d of the covariance matrix: want a finite number, got %q", i+1, j+1, strings.TrimSpace(cell))
			}
			r = append(r, v)
		}
		m = append(m, r)
	}
	if err := checkCovariance(m); err != nil {
		return err
	}
	b.matrix = m
	return nil
}

// checkCovariance reports whether m is square, symmetric and positive semi-definite (its
// eigenvalues >= −1e-12 times the largest).
func checkCovariance(m [][]float64) error {
	n := len(m)
	for i, r := range m {
		if len(r) != n {
			return fmt.Errorf("the covariance matrix has %d rows but row %d has %d values: it must be square", n, i+1, len(r))
		}
		for j := range i {
			if math.Abs(r[j]-m[j][i]) > 1e-12*math.Max(math.Abs(r[j]), math.Abs(m[j][i])) {
				return fmt.Errorf("the covariance matrix is not symmetric: row %d, column %d is %g, row %d, column %d is %g", i+1, j+1, r[j], j+1, i+1, m[j][i])
			}
		}
	}
	sym := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, m[i][j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, false) {
		return fmt.Errorf("the covariance matrix's eigenvalues could not be computed")
	}
	vals := eig.Values(nil)
	if vals[0] < -1e-12*math.Max(math.Abs(vals[n-1]), 1) {
		return fmt.Errorf("the covariance matrix is not positive semi-definite (smallest eigenvalue %g)", vals[0])
	}
	return nil
}

// prior returns the covariance the flag gives for a task of n states: nil for none.
func (b *beliefPriorFlag) prior(n int) ([][]float64, error) {
	if b.matrix != nil {
		if len(b.matrix) != n {
			return nil, usagef("--belief-prior is a %d×%d matrix; the task has %d states", len(b.matrix), len(b.matrix), n)
		}
		return b.matrix, nil
	}
	if b.variance == 0 {
		return nil, nil
	}
	out := models.Identity(n)
	for i := range out {
		out[i][i] = b.variance
	}
	return out, nil
}

// temperatureFlag is --temperature: a number >= 0, "task" for the task's temperature (paper
// Table 1), or "fit" for the fitted nuisance parameter; unset means the default (fit for our
// likelihood, the task's for the baseline; docs/results.md, "Robust to how the agent was computed").
type temperatureFlag struct {
	set, fit, task bool
	value          float64
}

func (t *temperatureFlag) String() string {
	switch {
	case t == nil || !t.set:
		return ""
	case t.fit:
		return "fit"
	case t.task:
		return "task"
	}
	return strconv.FormatFloat(t.value, 'g', -1, 64)
}

func (t *temperatureFlag) Set(s string) error {
	t.set, t.fit, t.task = true, s == "fit", s == "task"
	if t.fit || t.task {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want fit, task or a finite number >= 0, got %q", s)
	}
	t.value = v
	return nil
}
