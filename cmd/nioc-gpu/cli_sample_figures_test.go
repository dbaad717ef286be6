package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliPNG asserts that path is a PNG image.
func cliPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	assert.NoError(t, err, path)
}

func TestCLISampleFigures(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--steps", "5", "--subjects", "2")

	t.Run("corner, trace and predictive check", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "post")
		truth := cliWriteFile(t, dir, "truth.csv", "set,action_cost,motor_noise,obs_noise\n1,0.1,0.05,0.2\n")
		r := cliSample(t, data, out, "--temperature", "fit", "--truth", "temperature=0.001", "--truth-file", truth, "--ppc", "3", "--ppc-draws", "4")
		assert.Contains(t, r.stderr, "--truth-file: "+truth+" has no set 2: no truth marked for those subjects")
		assert.Contains(t, r.stderr, "corner-SUBJECT.png, trace-SUBJECT.png, ppc-SUBJECT.png)")
		assert.NotContains(t, r.stderr, "figures:")
		for _, s := range []string{"1", "2"} {
			for _, kind := range []string{"corner", "trace", "ppc"} {
				cliPNG(t, filepath.Join(out, kind+"-"+s+".png"))
			}
		}
	})

	t.Run("--plots=false draws none", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "post")
		r := cliSample(t, data, out, "--plots=false")
		assert.NotContains(t, r.stderr, "corner-SUBJECT.png")
		matches, err := filepath.Glob(filepath.Join(out, "*.png"))
		require.NoError(t, err)
		assert.Empty(t, matches)
	})

	for _, tc := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"unknown --truth parameter", []string{"--truth", "noise=1"}, 2, []string{`--truth: task linear has no parameter "noise"`}},
		{"--truth of the temperature held", []string{"--truth", "temperature=0.1"}, 2, []string{`--truth: task linear has no parameter "temperature"`}},
		{"--truth not a number", []string{"--truth", "action_cost=x"}, 2, []string{`--truth: action_cost="x" is not a number`}},
		{"--truth negative", []string{"--truth", "action_cost=-1"}, 2, []string{"--truth: parameter action_cost = -1 is negative"}},
		{"--ppc negative", []string{"--ppc", "-1"}, 2, []string{"--ppc must be >= 0 trials, got -1"}},
		{"--ppc-draws 0", []string{"--ppc", "2", "--ppc-draws", "0"}, 2, []string{"--ppc-draws must be >= 1, got 0"}},
		{"--plots=false with --ppc", []string{"--plots=false", "--ppc", "2"}, 2, []string{"--plots=false draws no figures"}},
		{"--truth-file missing", []string{"--truth-file", filepath.Join(dir, "nope.csv")}, 1, []string{"nope.csv"}},
		{"--truth-file of another task", []string{"--truth-file", cliWriteFile(t, dir, "other.csv", "set,a,b\n1,1,2\n")}, 1,
			[]string{"header does not match task linear"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "post")
			a := append([]string{"sample"}, cliSampleArgs...)
			r := cliRun(t, append(append(a, "--data", data, "--out", out), tc.args...)...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			cliNoFile(t, out)
			// with --init fit, refused before the fit runs (it would write out/fit.jsonl)
			r = cliRun(t, append(append(a, "--data", data, "--out", out, "--init", "fit", "--fit-restarts", "2"), tc.args...)...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			cliNoFile(t, out)
		})
	}
}
