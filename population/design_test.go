package population

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTable writes content to a subjects table in a temporary directory and returns its path.
func writeSubjectsTable(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subjects.csv")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestReadSubjects(t *testing.T) {
	path := writeSubjectsTable(t, "\ufeffsubject, group ,age\ns2,patient,31\n s1 , control , 25\n\ns3,control,40\n")
	s, err := ReadSubjects(path)
	require.NoError(t, err)
	assert.Equal(t, path, s.Path)
	assert.Equal(t, []string{"group", "age"}, s.Columns)
	assert.Equal(t, []string{"s2", "s1", "s3"}, s.Order, "file order")
	assert.Equal(t, map[string][]string{"s1": {"control", "25"}, "s2": {"patient", "31"}, "s3": {"control", "40"}}, s.Rows, "cells trimmed")

	s, err = ReadSubjects(writeSubjectsTable(t, "subject\na\nb\n"))
	require.NoError(t, err, "a table of subjects without covariates")
	assert.Empty(t, s.Columns)
	assert.Equal(t, []string{"a", "b"}, s.Order)
}

func TestReadSubjectsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		msgs          []string
	}{
		{"empty file", "", []string{"empty file"}},
		{"no subject column", "id,group\na,x\n", []string{"line 1", `first column must be "subject"`}},
		{"subject column not first", "group,subject\nx,a\n", []string{"line 1", "it is column 2"}},
		{"unnamed column", "subject,,age\na,x,1\n", []string{"line 1", "column 2 has no name"}},
		{"duplicate column", "subject,age,age\na,1,2\n", []string{"line 1", `column "age" appears twice`}},
		{"no rows", "subject,group\n", []string{"no subjects"}},
		{"duplicate subject", "subject,group\na,x\nb,y\na,z\n", []string{"line 4", `subject "a" again`, "first on line 2"}},
		{"empty subject", "subject,group\n,x\n", []string{"line 2", `column "subject"`, "empty cell"}},
		{"empty cell", "subject,group,age\na,x,1\nb,y, \n", []string{"line 3", `column "age"`, `subject "b"`, "empty cell"}},
		{"ragged row", "subject,group\na,x\nb,y,3\n", []string{"line 3", "3 fields, the header has 2"}},
		{"bad quoting", "subject,group\na,\"x\n", []string{"subjects.csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSubjectsTable(t, tc.content)
			_, err := ReadSubjects(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path, "the error names the file")
			for _, m := range tc.msgs {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
	_, err := ReadSubjects(filepath.Join(t.TempDir(), "absent.csv"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestParseFormula(t *testing.T) {
	for _, tc := range []struct {
		in    string
		terms []string
		str   string
	}{
		{"", nil, "~ 1"},
		{"~ 1", nil, "~ 1"},
		{"~1", nil, "~ 1"},
		{"  ~ group ", []string{"group"}, "~ group"},
		{"~ group + age", []string{"group", "age"}, "~ group + age"},
		{"~group+age", []string{"group", "age"}, "~ group + age"},
		{"~ 1 + group", []string{"group"}, "~ group"},
		{"group", []string{"group"}, "~ group"},
		{"~ site_2.b", []string{"site_2.b"}, "~ site_2.b"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f, err := ParseFormula(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.terms, f.Terms)
			assert.Equal(t, tc.str, f.String())
			again, err := ParseFormula(f.String())
			require.NoError(t, err)
			assert.Equal(t, f, again, "String parses back")
		})
	}
}

func TestParseFormulaErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{"~ group +", "a term is missing"},
		{"+ group", "a term is missing"},
		{"~ group ++ age", "a term is missing"},
		{"~ group * age", "interactions (group * age) are not supported"},
		{"~ group:age", "interactions"},
		{"~ 0 + group", "removing the intercept"},
		{"~ group - 1", "not a column name"},
		{"~ log(age)", "transformations are not supported"},
		{"theta ~ group", "no left-hand side"},
		{"~ group age", "two names without +"},
		{"~ group + group", `term "group" twice`},
		{"~ ~ group", "not a column name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseFormula(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Contains(t, err.Error(), tc.in, "the error quotes the formula")
			if tc.in != "~ group + group" {
				assert.Contains(t, err.Error(), `"~ group + age"`, "the error says which syntax is read")
			}
		})
	}
}

const designTable = `subject,group,age,site,sex,age2,arm,const
s1,control,20,1,f,40,a,7
s2,control,30,2,m,60,a,7
s3,patient,40,1,f,80,b,7
s4,patient,50,2,m,100,b,7
s5,athlete,60,1,f,120,b,7
`

func TestDesign(t *testing.T) {
	s, err := ReadSubjects(writeSubjectsTable(t, designTable))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		formula string
		ids     []string
		names   []string
		X       [][]float64
	}{
		{"intercept only", "~ 1", []string{"s2", "s1"}, []string{"(intercept)"}, [][]float64{{1}, {1}}},
		{"two levels: reference first in sorted order", "~ group", []string{"s1", "s3", "s4"},
			[]string{"(intercept)", "group[patient]"}, [][]float64{{1, 0}, {1, 1}, {1, 1}}},
		{"three levels", "~ group", []string{"s1", "s2", "s3", "s5"},
			[]string{"(intercept)", "group[control]", "group[patient]"}, [][]float64{{1, 1, 0}, {1, 1, 0}, {1, 0, 1}, {1, 0, 0}}},
		{"numeric centred", "~ age", []string{"s1", "s2", "s3"},
			[]string{"(intercept)", "age"}, [][]float64{{1, -10}, {1, 0}, {1, 10}}},
		{"numbers are numeric", "~ site", []string{"s1", "s2", "s3", "s4"},
			[]string{"(intercept)", "site"}, [][]float64{{1, -0.5}, {1, 0.5}, {1, -0.5}, {1, 0.5}}},
		{"group and age, rows in ids' order", "~ group + age", []string{"s4", "s1", "s3", "s2"},
			[]string{"(intercept)", "group[patient]", "age"}, [][]float64{{1, 1, 15}, {1, 0, -15}, {1, 1, 5}, {1, 0, -5}}},
		{"levels among the ids only", "~ sex", []string{"s1", "s2"},
			[]string{"(intercept)", "sex[m]"}, [][]float64{{1, 0}, {1, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFormula(tc.formula)
			require.NoError(t, err)
			X, names, err := Design(s, f, tc.ids)
			require.NoError(t, err)
			assert.Equal(t, tc.names, names)
			require.Len(t, X, len(tc.ids))
			for i := range X {
				assert.InDeltaSlice(t, tc.X[i], X[i], 1e-12, "row %d (%s)", i, tc.ids[i])
			}
		})
	}
}

func TestDesignErrors(t *testing.T) {
	path := writeSubjectsTable(t, designTable+"s6,control,NA,1,f,1,a,7\n")
	s, err := ReadSubjects(path)
	require.NoError(t, err)
	all := []string{"s1", "s2", "s3", "s4", "s5"}
	for _, tc := range []struct {
		name, formula string
		ids           []string
		msgs          []string
	}{
		{"not a column", "~ grp", all, []string{`term "grp" is not a column`, "group, age, site"}},
		{"missing subject", "~ group", []string{"s1", "s9", "s2", "x"}, []string{`"s9", "x"`, "no row for subject"}},
		{"subject twice", "~ 1", []string{"s1", "s1"}, []string{`subject "s1" twice`}},
		{"no subjects", "~ 1", nil, []string{"no subjects"}},
		{"single level", "~ group", []string{"s1", "s2"}, []string{`categorical column "group" has a single level "control"`, "not estimable"}},
		{"constant numeric", "~ const", all, []string{`numeric column "const" has the same value 7`, "not estimable"}},
		{"collinear numeric", "~ age + age2", all, []string{"not of full rank", `column "age2" is a linear combination of "(intercept)", "age"`}},
		{"collinear categorical", "~ group + arm", all, []string{"not of full rank", `column "arm[b]"`}},
		{"more columns than subjects", "~ group + age", []string{"s1", "s3", "s5"}, []string{"4 design columns", "for 3 subjects"}},
		{"mixed numbers and text", "~ age", []string{"s1", "s6"}, []string{`column "age" mixes numbers (line 2, subject "s1": 20) and text (line 7, subject "s6": NA)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFormula(tc.formula)
			require.NoError(t, err)
			_, _, err = Design(s, f, tc.ids)
			require.Error(t, err)
			if tc.ids != nil && tc.name != "subject twice" {
				assert.Contains(t, err.Error(), path, "the error names the file")
			}
			for _, m := range tc.msgs {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}
