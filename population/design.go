package population

// The input side of a population fit: the subjects table (one row per subject, its covariates
// by column), the population model's formula ("~ 1", "~ group", "~ group + age") and the
// design matrix that the formula makes of the table for the fitted subjects.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// SubjectColumn is the name of the subjects table's first column, the subject's ID as in the
// data file.
const SubjectColumn = "subject"

// Intercept is the name of the design matrix's first column.
const Intercept = "(intercept)"

// Subjects is a subjects table: one row per subject, its covariates by column.
type Subjects struct {
	Path    string
	Columns []string            // covariate columns in file order (not "subject")
	Rows    map[string][]string // subject ID → its cells, Columns' order
	Order   []string            // subject IDs in file order
	lines   map[string]int      // subject ID → its line in the file
}

// ReadSubjects reads a subjects table: a CSV file with a header whose first column is
// "subject", then one row per subject, its ID (as in the data file) and a value in every
// covariate column. Cells are trimmed of surrounding spaces. A missing subject column, a
// duplicate or empty column name, a row with another number of fields than the header, a
// subject given twice, an empty cell and a table without subjects are errors naming the
// file, its line and the column.
func ReadSubjects(path string) (*Subjects, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file; a subjects table has a header %q and a covariate column per covariate, then a row per subject", path, SubjectColumn+",group,...")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Subjects{Path: path, Rows: map[string][]string{}, lines: map[string]int{}}
	if s.Columns, err = subjectsHeader(path, header); err != nil {
		return nil, err
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if err := s.add(rec, line); err != nil {
			return nil, err
		}
	}
	if len(s.Order) == 0 {
		return nil, fmt.Errorf("%s: no subjects: the table has a header but no rows", path)
	}
	return s, nil
}

// subjectsHeader checks the header of the subjects table at path and returns its covariate
// columns.
func subjectsHeader(path string, header []string) ([]string, error) {
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff") // a byte-order mark of spreadsheet exports
	if header[0] != SubjectColumn {
		where := ""
		if i := slices.Index(header, SubjectColumn); i > 0 {
			where = fmt.Sprintf(" (it is column %d)", i+1)
		}
		return nil, fmt.Errorf("%s line 1: the first column must be %q, the subjects' IDs as in the data file%s; the header is %q",
			path, SubjectColumn, where, strings.Join(header, ","))
	}
	for i, c := range header {
		switch {
		case c == "":
			return nil, fmt.Errorf("%s line 1: column %d has no name", path, i+1)
		case slices.Index(header, c) < i:
			return nil, fmt.Errorf("%s line 1: column %q appears twice (columns %d and %d)", path, c, slices.Index(header, c)+1, i+1)
		}
	}
	return header[1:], nil
}

// add adds the record rec, line line of the file, to s.
func (s *Subjects) add(rec []string, line int) error {
	if len(rec) != len(s.Columns)+1 {
		return fmt.Errorf("%s line %d: %d fields, the header has %d (%s)",
			s.Path, line, len(rec), len(s.Columns)+1, strings.Join(append([]string{SubjectColumn}, s.Columns...), ","))
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	id := rec[0]
	if id == "" {
		return fmt.Errorf("%s line %d, column %q: empty cell; every row names its subject", s.Path, line, SubjectColumn)
	}
	if first, ok := s.lines[id]; ok {
		return fmt.Errorf("%s line %d: subject %q again (first on line %d); a subject has one row", s.Path, line, id, first)
	}
	for j, c := range rec[1:] {
		if c == "" {
			return fmt.Errorf("%s line %d, column %q (subject %q): empty cell; missing values are not supported, so give a value or leave the subject out",
				s.Path, line, s.Columns[j], id)
		}
	}
	s.Rows[id], s.lines[id] = rec[1:], line
	s.Order = append(s.Order, id)
	return nil
}

// where names subject id and its line in the file (none for a table built in memory).
func (s *Subjects) where(id string) string {
	if l, ok := s.lines[id]; ok {
		return fmt.Sprintf("line %d, subject %q", l, id)
	}
	return fmt.Sprintf("subject %q", id)
}

// Formula is a population model "~ 1", "~ group", "~ group + age", ...
type Formula struct{ Terms []string } // covariate column names; none: intercept only

// String returns the formula as ParseFormula reads it: "~ 1" or "~ group + age".
func (f Formula) String() string {
	if len(f.Terms) == 0 {
		return "~ 1"
	}
	return "~ " + strings.Join(f.Terms, " + ")
}

// formulaSyntax is what ParseFormula reads, for its errors.
const formulaSyntax = `write "~ 1" (one population) or covariate columns joined by +, e.g. "~ group" or "~ group + age"`

// ParseFormula parses a population model: "~", then "1" or covariate columns of the subjects
// table joined by "+" ("~ group + age"; a "1" among them is the intercept, always included).
// "" means "~ 1"; the "~" may be left out. Interactions, transformations, removing the
// intercept, a left-hand side and a term given twice are errors saying which syntax is read.
func ParseFormula(s string) (Formula, error) {
	rhs := strings.TrimSpace(s)
	if lhs, r, ok := strings.Cut(rhs, "~"); ok {
		if strings.TrimSpace(lhs) != "" {
			return Formula{}, fmt.Errorf("formula %q: no left-hand side: the formula is the model of every fitted parameter; %s", s, formulaSyntax)
		}
		rhs = strings.TrimSpace(r)
	}
	if rhs == "" {
		return Formula{}, nil
	}
	var f Formula
	for _, t := range strings.Split(rhs, "+") {
		t = strings.TrimSpace(t)
		if err := checkTerm(s, t); err != nil {
			return Formula{}, err
		}
		switch {
		case t == "1":
		case slices.Contains(f.Terms, t):
			return Formula{}, fmt.Errorf("formula %q: term %q twice", s, t)
		default:
			f.Terms = append(f.Terms, t)
		}
	}
	return f, nil
}

// checkTerm returns an error if t is no term of the formula s: empty, an operator that is not
// supported or two names without + between them.
func checkTerm(s, t string) error {
	switch {
	case t == "":
		return fmt.Errorf("formula %q: a term is missing before or after a +; %s", s, formulaSyntax)
	case t == "0" || t == "-1" || strings.HasPrefix(t, "-"):
		return fmt.Errorf("formula %q: removing the intercept (%s) is not supported: the model always has one; %s", s, t, formulaSyntax)
	case strings.ContainsAny(t, "*:"):
		return fmt.Errorf("formula %q: interactions (%s) are not supported; %s", s, t, formulaSyntax)
	case strings.ContainsAny(t, "~-/^|()[]{}=<>,"):
		return fmt.Errorf("formula %q: %q is not a column name: operators and transformations are not supported; %s", s, t, formulaSyntax)
	case strings.ContainsAny(t, " \t"):
		return fmt.Errorf("formula %q: %q is two names without + between them; %s", s, t, formulaSyntax)
	}
	return nil
}

// Design returns the design matrix of the subjects ids (rows in ids' order): an intercept
// column and, per term, treatment-coded indicator columns for a categorical column or the
// centred values of a numeric column; and the columns' names ("(intercept)",
// "group[patient]", "age").
//
// A column is numeric when every cell of the subjects ids parses as a finite number, and
// categorical when none does; one that mixes both is an error. A categorical column of L
// levels (among ids) has L−1 columns named "column[level]", 1 for a subject of that level:
// the reference level, the first in sorted (byte-wise) order, has none, so the intercept is
// the reference level's mean and each column a level's difference from it. A numeric column
// is centred at its mean over ids, so the intercept is the mean at the average covariate.
// A term that is not a column, a subject of ids missing from the table, a subject given twice,
// a column with a single level or value among ids (its effect is not estimable) and a matrix
// not of full rank (collinear terms, or more columns than subjects) are errors.
func Design(s *Subjects, f Formula, ids []string) (X [][]float64, names []string, err error) {
	if err := s.checkIDs(ids); err != nil {
		return nil, nil, err
	}
	X = make([][]float64, len(ids))
	for i := range X {
		X[i] = []float64{1}
	}
	names = []string{Intercept}
	for _, term := range f.Terms {
		cols, colNames, err := s.termColumns(term, ids)
		if err != nil {
			return nil, nil, err
		}
		for i := range X {
			X[i] = append(X[i], cols[i]...)
		}
		names = append(names, colNames...)
	}
	if err := fullRank(s.Path, f, X, names); err != nil {
		return nil, nil, err
	}
	return X, names, nil
}

// checkIDs returns an error naming the subjects of ids that are not in the table, or that
// ids gives twice.
func (s *Subjects) checkIDs(ids []string) error {
	if len(ids) == 0 {
		return fmt.Errorf("%s: no subjects to fit", s.Path)
	}
	var missing []string
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			return fmt.Errorf("subject %q twice among the subjects to fit", id)
		}
		seen[id] = true
		if _, ok := s.Rows[id]; !ok {
			missing = append(missing, strconv.Quote(id))
		}
	}
	if len(missing) > 0 {
		if len(missing) > 10 {
			missing = append(missing[:10], fmt.Sprintf("… (%d in all)", len(missing)))
		}
		return fmt.Errorf("%s: no row for subject(s) %s of the data; the table needs a row for every subject fitted",
			s.Path, strings.Join(missing, ", "))
	}
	return nil
}

// termColumns returns the design columns of the covariate column term for the subjects ids,
// [subject][column], and their names.
func (s *Subjects) termColumns(term string, ids []string) ([][]float64, []string, error) {
	j := slices.Index(s.Columns, term)
	if j < 0 {
		cols := "none besides " + SubjectColumn
		if len(s.Columns) > 0 {
			cols = strings.Join(s.Columns, ", ")
		}
		return nil, nil, fmt.Errorf("%s: the formula's term %q is not a column of the subjects table (its columns: %s)", s.Path, term, cols)
	}
	cells := make([]string, len(ids))
	for i, id := range ids {
		cells[i] = s.Rows[id][j]
	}
	values, numeric, err := s.numeric(term, ids, cells)
	if err != nil {
		return nil, nil, err
	}
	if numeric {
		return s.centred(term, ids, values)
	}
	return s.indicators(term, cells)
}

// numeric returns the cells of column term (of subjects ids) as numbers and true when every
// one is a finite number, false when none is, and an error naming a cell of each kind when
// the column mixes them.
func (s *Subjects) numeric(term string, ids, cells []string) ([]float64, bool, error) {
	values := make([]float64, len(cells))
	num, text := -1, -1
	for i, c := range cells {
		v, err := strconv.ParseFloat(c, 64)
		if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			values[i], num = v, i
		} else {
			text = i
		}
	}
	if num >= 0 && text >= 0 {
		return nil, false, fmt.Errorf("%s: column %q mixes numbers (%s: %s) and text (%s: %s): a numeric column needs a number in every cell (missing values are not supported), a categorical one names its levels (write e.g. \"site%s\" for a level that looks like a number)",
			s.Path, term, s.where(ids[num]), cells[num], s.where(ids[text]), cells[text], cells[num])
	}
	return values, text < 0, nil
}

// centred returns the numeric column term's values minus their mean, one column named term.
func (s *Subjects) centred(term string, ids []string, values []float64) ([][]float64, []string, error) {
	mean := 0.0
	for _, v := range values {
		mean += v / float64(len(values))
	}
	out := make([][]float64, len(values))
	constant := true
	for i, v := range values {
		out[i] = []float64{v - mean}
		constant = constant && v == values[0]
	}
	if constant {
		return nil, nil, fmt.Errorf("%s: numeric column %q has the same value %s for all %d subjects fitted: its effect is not estimable; leave it out of the formula",
			s.Path, term, strconv.FormatFloat(values[0], 'g', -1, 64), len(ids))
	}
	return out, []string{term}, nil
}

// indicators returns the treatment-coded columns of the categorical column term: one per level
// of cells but the first in sorted order, named term[level].
func (s *Subjects) indicators(term string, cells []string) ([][]float64, []string, error) {
	levels := slices.Clone(cells)
	sort.Strings(levels)
	levels = slices.Compact(levels)
	if len(levels) < 2 {
		return nil, nil, fmt.Errorf("%s: categorical column %q has a single level %q among the %d subjects fitted: its effect is not estimable; leave it out of the formula",
			s.Path, term, levels[0], len(cells))
	}
	names := make([]string, len(levels)-1)
	for k, l := range levels[1:] {
		names[k] = term + "[" + l + "]"
	}
	out := make([][]float64, len(cells))
	for i, c := range cells {
		out[i] = make([]float64, len(levels)-1)
		if k := slices.Index(levels, c); k > 0 {
			out[i][k-1] = 1
		}
	}
	return out, names, nil
}

// fullRank returns an error if the design X (of formula f, from the table at path) is not of
// full column rank, naming the first column that is a linear combination of the ones before
// it (modified Gram–Schmidt, relative tolerance 1e-9).
func fullRank(path string, f Formula, X [][]float64, names []string) error {
	n, p := len(X), len(names)
	if p > n {
		return fmt.Errorf("%s: the formula %s makes %d design columns (%s) for %d subjects: a population model needs more subjects than columns",
			path, f, p, strings.Join(names, ", "), n)
	}
	var basis [][]float64
	for j := range p {
		v := make([]float64, n)
		for i := range n {
			v[i] = X[i][j]
		}
		norm0 := designNorm(v)
		for _, q := range basis {
			d := designDot(q, v)
			for i := range v {
				v[i] -= d * q[i]
			}
		}
		norm := designNorm(v)
		if norm <= 1e-9*norm0 || norm0 == 0 {
			return fmt.Errorf("%s: the formula %s makes a design matrix that is not of full rank: column %q is a linear combination of %s among the subjects fitted (collinear terms); leave one of them out",
				path, f, names[j], strings.Join(quotedAll(names[:j]), ", "))
		}
		for i := range v {
			v[i] /= norm
		}
		basis = append(basis, v)
	}
	return nil
}

func designDot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func designNorm(v []float64) float64 { return math.Sqrt(designDot(v, v)) }

func quotedAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
