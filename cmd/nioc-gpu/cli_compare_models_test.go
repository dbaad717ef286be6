package main

// Tests of compare-models (issue 30, "Model comparison across subjects"): a small light-dark
// study fitted under the planner that generated it and under the other, and the errors.

import (
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLICompareModelsStudy: light-dark subjects simulated with one planner and fitted under
// both, partially and fully observable iLQG: compare-models finds the planner that generated
// the data (most probable for every subject, the larger expected frequency, exceedance
// probability above 0.9 with 4 subjects), prints its table and writes bms.json, subjects.csv
// and bms.png; --evidence bic compares −BIC/2 of the same fits.
func TestCLICompareModelsStudy(t *testing.T) {
	for _, truth := range []string{"partial", "full"} {
		t.Run(truth, func(t *testing.T) {
			dir := t.TempDir()
			data := cliSimulate(t, dir, "d.csv", "--task", "lightdark", "--planner", truth, "--subjects", "4", "--trials", "10", "--seed", "3")
			fits := map[string]string{}
			for _, planner := range []string{"partial", "full"} {
				fits[planner] = filepath.Join(dir, planner+".jsonl")
				cliOK(t, "fit", "--task", "lightdark", "--planner", planner, "--data", data, "--restarts", "4", "--check-draws", "0",
					"--quiet", "--out", fits[planner])
			}
			out := filepath.Join(dir, "bms")
			r := cliOK(t, "compare-models", "--names", "partial,full", "--out", out, fits["partial"], fits["full"])
			assert.Contains(t, r.stdout, "random-effects Bayesian model selection")
			assert.Contains(t, r.stdout, "protected exceedance")
			assert.Contains(t, r.stdout, "Bayesian omnibus risk")
			assert.Contains(t, r.stderr, "model partial: "+fits["partial"])

			rep := cliReadBMS(t, filepath.Join(out, "bms.json"))
			require.Len(t, rep.Models, 2)
			assert.Equal(t, "laplace", rep.Evidence)
			require.GreaterOrEqual(t, rep.Subjects, 3, "left out: %v", rep.LeftOut)
			win, lose := rep.Models[0], rep.Models[1]
			if truth == "full" {
				win, lose = lose, win
			}
			assert.Equal(t, truth, win.Name)
			assert.Equal(t, truth, win.Planner, "the record's planner")
			assert.Greater(t, win.Frequency, lose.Frequency)
			assert.Greater(t, win.Exceedance, 0.9)
			assert.Greater(t, win.ProtectedExceedance, lose.ProtectedExceedance)
			assert.Equal(t, rep.Subjects, win.BestFor)
			assert.Equal(t, fits[truth], win.File)
			assert.InDelta(t, 1, win.Exceedance+lose.Exceedance, 1e-12)
			assert.InDelta(t, 1, win.ProtectedExceedance+lose.ProtectedExceedance, 1e-12)
			require.Len(t, rep.PerSubject, rep.Subjects)
			for _, s := range rep.PerSubject {
				assert.Equal(t, truth, s.MostProbable, "subject %s", s.Subject)
				assert.InDelta(t, 1, s.Posterior["partial"]+s.Posterior["full"], 1e-12)
				assert.Equal(t, *s.Laplace["full"], s.LogEvidence["full"], "the compared evidence is the Laplace one")
			}

			rows := cliReadCSV(t, filepath.Join(out, "subjects.csv"))
			assert.Equal(t, []string{"subject", "partial_log_evidence", "partial_bic", "full_log_evidence", "full_bic",
				"partial_posterior", "full_posterior", "most_probable"}, rows[0])
			require.Len(t, rows, rep.Subjects+1)
			for _, row := range rows[1:] {
				assert.Equal(t, truth, row[7])
			}
			f, err := os.Open(filepath.Join(out, "bms.png"))
			require.NoError(t, err)
			_, err = png.Decode(f)
			f.Close()
			require.NoError(t, err, "bms.png is a PNG")

			cliRequireFail(t, cliRun(t, "compare-models", "--out", out, fits["partial"], fits["full"]), 2, "bms.json exists", "--force")
			bic := filepath.Join(dir, "bic")
			cliOK(t, "compare-models", "--evidence", "bic", "--out", bic, fits["partial"], fits["full"])
			rb := cliReadBMS(t, filepath.Join(bic, "bms.json"))
			assert.Equal(t, "bic", rb.Evidence)
			assert.Equal(t, []string{"partial", "full"}, []string{rb.Models[0].Name, rb.Models[1].Name}, "names from the files")
			for _, s := range rb.PerSubject {
				assert.Equal(t, -*s.BIC["partial"]/2, s.LogEvidence["partial"])
				assert.Equal(t, truth, s.MostProbable)
			}
		})
	}
}

// cliReadBMS reads compare-models' bms.json.
func cliReadBMS(t *testing.T, path string) bmsReport {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep bmsReport
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}

// bmsRecord is a results record with what compare-models reads.
func bmsRecord(subject, digest string, logEv, bic float64) string {
	return fmt.Sprintf(`{"subject":%q,"data_digest":%q,"task":"linear","method":"ours","observe":"full","loglik":%g,"bic":%g,"log_evidence":%g,"hessian_pd":true,"restarts_at_best":1,"restarts":1,"evaluations":1,"converged":true,"trials":5,"seconds":0.1}`,
		subject, digest, logEv+2, bic, logEv)
}

// cliWriteLines writes the lines to dir/name and returns its path.
func cliWriteLines(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

// TestCLICompareModelsErrors: what compare-models refuses, and what it leaves out with a
// warning, each said in words that name the file, subject or flag.
func TestCLICompareModelsErrors(t *testing.T) {
	dir := t.TempDir()
	a := cliWriteLines(t, dir, "a.jsonl", bmsRecord("1", "sha256:1", -10, 24), bmsRecord("2", "sha256:2", -12, 28), bmsRecord("3", "sha256:3", -9, 22))
	b := cliWriteLines(t, dir, "b.jsonl", bmsRecord("1", "sha256:1", -14, 30), bmsRecord("2", "sha256:2", -15, 33), bmsRecord("3", "sha256:3", -13, 29))
	other := cliWriteLines(t, dir, "other.jsonl", bmsRecord("1", "sha256:1", -14, 30), bmsRecord("2", "sha256:99", -15, 33))
	noEvidence := cliWriteLines(t, dir, "old.jsonl",
		`{"subject":"1","task":"linear","method":"ours","observe":"full","loglik":-8,"bic":20,"hessian_pd":true,"restarts_at_best":1,"restarts":1,"evaluations":1,"converged":true,"trials":5,"seconds":0.1}`)
	partial := cliWriteLines(t, dir, "partial.jsonl", bmsRecord("1", "sha256:1", -11, 26),
		`{"subject":"2","data_digest":"sha256:2","task":"linear","method":"ours","observe":"full","hessian_pd":false,"restarts_at_best":0,"restarts":1,"evaluations":1,"converged":false,"trials":5,"seconds":0.1,"error":"every restart failed"}`)
	notPD := cliWriteLines(t, dir, "notpd.jsonl", bmsRecord("1", "sha256:1", -11, 26), bmsRecord("2", "sha256:2", -11, 26),
		`{"subject":"3","data_digest":"sha256:3","task":"linear","method":"ours","observe":"full","loglik":-9,"bic":22,"hessian_pd":false,"restarts_at_best":1,"restarts":1,"evaluations":1,"converged":true,"trials":5,"seconds":0.1}`)
	empty := cliWriteLines(t, dir, "empty.jsonl")
	file := cliWriteLines(t, dir, "file")

	for _, c := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"no file", nil, 2, []string{"give two or more results files"}},
		{"one file", []string{a}, 2, []string{"give two or more results files", "got 1"}},
		{"unknown evidence", []string{"--evidence", "aic", a, b}, 2, []string{`unknown --evidence "aic": use laplace or bic`}},
		{"names count", []string{"--names", "x", a, b}, 2, []string{"--names gives 1 name(s) for 2 results files"}},
		{"names twice", []string{"--names", "x,x", a, b}, 2, []string{"--names: x is given twice"}},
		{"same file", []string{a, a}, 2, []string{a + " is given twice"}},
		{"negative samples", []string{"--samples", "-1", a, b}, 2, []string{"--samples must be >= 0"}},
		{"out is a file", []string{"--out", file, a, b}, 2, []string{"is a file, not a directory"}},
		{"missing file", []string{a, filepath.Join(dir, "none.jsonl")}, 1, []string{"none.jsonl"}},
		{"empty file", []string{a, empty}, 1, []string{empty + " holds no results"}},
		{"different data", []string{a, other}, 1, []string{"fits of different data", "subject 2: " + a + " fitted data sha256:2, " + other + " fitted data sha256:99"}},
		{"no evidence", []string{a, noEvidence}, 1, []string{noEvidence + ": no record has a log_evidence", "--evidence bic"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cliRequireFail(t, cliRun(t, append([]string{"compare-models"}, c.args...)...), c.code, c.msgs...)
		})
	}

	t.Run("left out with a warning", func(t *testing.T) {
		out := filepath.Join(dir, "left")
		r := cliOK(t, "compare-models", "--out", out, a, b, partial, notPD)
		for _, m := range []string{
			"warning: 2 of 3 subject(s) left out",
			"subject 2: partial: the fit failed (every restart failed)",
			"subject 3: partial: not in " + partial,
			"notpd: no log_evidence (the Hessian at the estimate is not positive definite",
		} {
			assert.Contains(t, r.stderr, m)
		}
		rep := cliReadBMS(t, filepath.Join(out, "bms.json"))
		assert.Equal(t, 1, rep.Subjects)
		require.Len(t, rep.LeftOut, 2)
		assert.Equal(t, "2", rep.LeftOut[0].Subject)
		assert.Len(t, rep.PerSubject, 1)
		names := []string{}
		for _, m := range rep.Models {
			names = append(names, m.Name)
		}
		assert.Equal(t, []string{"a", "b", "partial", "notpd"}, names)
		// --evidence bic does not need the Hessian: subject 3 is compared.
		r = cliOK(t, "compare-models", "--evidence", "bic", a, b, notPD)
		assert.NotContains(t, r.stderr, "left out")
		assert.Contains(t, r.stdout, "3 subject(s), −BIC/2")
	})

	t.Run("subjects in natural order", func(t *testing.T) {
		ids := []string{"s10", "s2", "s1"}
		var la, lb []string
		for _, id := range ids {
			la = append(la, bmsRecord(id, "sha256:"+id, -10, 24))
			lb = append(lb, bmsRecord(id, "sha256:"+id, -12, 28))
		}
		out := filepath.Join(dir, "order")
		cliOK(t, "compare-models", "--out", out, cliWriteLines(t, dir, "oa.jsonl", la...), cliWriteLines(t, dir, "ob.jsonl", lb...))
		rows := cliReadCSV(t, filepath.Join(out, "subjects.csv"))
		require.Len(t, rows, 4)
		assert.Equal(t, []string{"s1", "s2", "s10"}, []string{rows[1][0], rows[2][0], rows[3][0]})
		for _, c := range []struct {
			a, b string
			want int
		}{{"2", "10", -1}, {"s002", "s10", -1}, {"a", "b", -1}, {"s1", "s1", 0}, {"s1x", "s1", 1}, {"x9", "x09", 0}} {
			assert.Equal(t, c.want, naturalCompare(c.a, c.b), "%s, %s", c.a, c.b)
		}
	})

	t.Run("no subject under every model", func(t *testing.T) {
		only3 := cliWriteLines(t, dir, "only3.jsonl", bmsRecord("3", "sha256:3", -9, 22))
		cliRequireFail(t, cliRun(t, "compare-models", partial, only3), 1, "no subject has an evidence under every model")
	})

	t.Run("names from paths where files share a name", func(t *testing.T) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "x"), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "y"), 0o755))
		x := cliWriteLines(t, filepath.Join(dir, "x"), "fit.jsonl", bmsRecord("1", "sha256:1", -10, 24))
		y := cliWriteLines(t, filepath.Join(dir, "y"), "fit.jsonl", bmsRecord("1", "sha256:1", -12, 28))
		out := filepath.Join(dir, "xy")
		cliOK(t, "compare-models", "--samples", "1000", "--seed", "4", "--out", out, x, y)
		rep := cliReadBMS(t, filepath.Join(out, "bms.json"))
		assert.True(t, slices.Equal([]string{filepath.Join(dir, "x", "fit"), filepath.Join(dir, "y", "fit")},
			[]string{rep.Models[0].Name, rep.Models[1].Name}), "%s, %s", rep.Models[0].Name, rep.Models[1].Name)
		assert.Equal(t, "monte carlo", rep.ExceedanceMethod)
		assert.Equal(t, 1000, rep.Samples)
	})
}
