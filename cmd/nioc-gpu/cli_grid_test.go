package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCLIGrid(t *testing.T) {
	dir := t.TempDir()
	lin := cliSimulate(t, dir, "lin.csv", "--task", "linear", "--trials", "3")
	lin2 := cliSimulate(t, dir, "lin2.csv", "--task", "linear", "--trials", "2", "--subjects", "2")
	ld := cliSimulate(t, dir, "ld.csv", "--task", "lightdark", "--trials", "2", "--steps", "10")

	for _, tc := range []struct {
		name     string
		task     string
		args     []string
		n        int
		x, y     string
		xlo, xhi float64
	}{
		{"linear", "linear", []string{"--data", lin, "--vary", "action_cost:0.01:1,obs_noise:0.05:1", "--n", "4"},
			4, "action_cost", "obs_noise", 0.01, 1},
		{"default n with truth and batches", "linear", []string{"--data", lin, "--vary", "motor_noise:0.01:0.2, action_cost:0.02:0.5",
			"--truth", "action_cost=0.1,motor_noise=0.05", "--batch", "7"}, 25, "motor_noise", "action_cost", 0.01, 0.2},
		{"one subject of two", "linear", []string{"--data", lin2, "--subject", "2", "--vary", "action_cost:0.01:1,obs_noise:0.05:1", "--n", "3"},
			3, "action_cost", "obs_noise", 0.01, 1},
		{"linear scale parameter", "lightdark", []string{"--data", ld, "--vary", "target_x:-1:1,sigma:0.05:1", "--n", "3"},
			3, "target_x", "sigma", -1, 1},
		{"baseline", "linear", []string{"--data", lin, "--method", "baseline", "--vary", "action_cost:0.01:1,motor_noise:0.01:0.2", "--n", "2"},
			2, "action_cost", "motor_noise", 0.01, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "grid.csv")
			r := cliOK(t, append([]string{"grid", "--task", tc.task, "--out", out}, tc.args...)...)
			assert.Contains(t, r.stderr, "maximum at")
			assert.Contains(t, r.stderr, out)
			rows := cliReadCSV(t, out)
			require.Len(t, rows, 1+tc.n*tc.n, "n×n grid points and a header")
			assert.Equal(t, []string{tc.x, tc.y, "loglik"}, rows[0])
			xs, ys := map[float64]bool{}, map[float64]bool{}
			minX, maxX := math.Inf(1), math.Inf(-1)
			for i, row := range rows[1:] {
				x := cliParseFloat(t, row[0], tc.x)
				y := cliParseFloat(t, row[1], tc.y)
				cliParseFloat(t, row[2], "loglik")
				xs[x], ys[y] = true, true
				minX, maxX = math.Min(minX, x), math.Max(maxX, x)
				// Row-major: the first parameter varies fastest.
				if i%tc.n == 0 && i > 0 {
					assert.NotEqual(t, rows[i][1], row[1], "the second parameter changes every n rows")
				}
			}
			assert.Len(t, xs, tc.n)
			assert.Len(t, ys, tc.n)
			assert.InDelta(t, tc.xlo, minX, 1e-9*math.Max(1, math.Abs(tc.xlo)), "grid starts at lo")
			assert.InDelta(t, tc.xhi, maxX, 1e-9*math.Max(1, math.Abs(tc.xhi)), "grid ends at hi")

			pngPath := filepath.Join(filepath.Dir(out), "grid.png")
			f, err := os.Open(pngPath)
			require.NoError(t, err, "the heat map is written beside the CSV")
			defer f.Close()
			img, err := png.Decode(f)
			require.NoError(t, err)
			assert.Greater(t, img.Bounds().Dx(), 100)
			assert.Greater(t, img.Bounds().Dy(), 100)
		})
	}
}

func TestCLIGridErrors(t *testing.T) {
	dir := t.TempDir()
	lin := cliSimulate(t, dir, "lin.csv", "--task", "linear", "--trials", "2", "--steps", "5")
	lin2 := cliSimulate(t, dir, "lin2.csv", "--task", "linear", "--trials", "2", "--steps", "5", "--subjects", "2")
	vary := "action_cost:0.01:1,obs_noise:0.05:1"
	for _, tc := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"one parameter", []string{"--data", lin, "--vary", "action_cost:0.01:1"}, 2, []string{"--vary needs exactly two parameters"}},
		{"three parameters", []string{"--data", lin, "--vary", vary + ",motor_noise:0.01:1"}, 2, []string{"--vary needs exactly two parameters"}},
		{"unknown name", []string{"--data", lin, "--vary", "action_cost:0.01:1,noise:0.05:1"}, 2,
			[]string{`no parameter "noise"`, "action_cost, motor_noise, obs_noise"}},
		{"same parameter twice", []string{"--data", lin, "--vary", "action_cost:0.01:1,action_cost:0.05:1"}, 2, []string{"action_cost given twice"}},
		{"temperature held", []string{"--data", lin, "--temperature", "task", "--vary", "action_cost:0.01:1,temperature:1e-4:1e-2"}, 2,
			[]string{"--vary temperature", "only with --temperature fit"}},
		{"lo > hi", []string{"--data", lin, "--vary", "action_cost:1:0.01,obs_noise:0.05:1"}, 2, []string{"--vary action_cost", "lo < hi"}},
		{"lo = hi", []string{"--data", lin, "--vary", "action_cost:0.01:1,obs_noise:1:1"}, 2, []string{"--vary obs_noise", "lo < hi"}},
		{"not a number", []string{"--data", lin, "--vary", "action_cost:a:1,obs_noise:0.05:1"}, 2, []string{"--vary action_cost", "numbers"}},
		{"not name:lo:hi", []string{"--data", lin, "--vary", "action_cost:0.01,obs_noise:0.05:1"}, 2, []string{`"action_cost:0.01" is not name:lo:hi`}},
		{"log scale lo = 0", []string{"--data", lin, "--vary", "action_cost:0:1,obs_noise:0.05:1"}, 2, []string{"--vary action_cost", "log10-scale", "lo > 0"}},
		{"log scale lo < 0", []string{"--data", lin, "--vary", "action_cost:-1:1,obs_noise:0.05:1"}, 2, []string{"action_cost", "negative"}},
		{"n 1", []string{"--data", lin, "--vary", vary, "--n", "1"}, 2, []string{"--n must be >= 2"}},
		{"batch 0", []string{"--data", lin, "--vary", vary, "--batch", "0"}, 2, []string{"--batch must be >= 1, got 0"}},
		{"varied parameter the likelihood ignores", []string{"--data", lin, "--vary", vary, "--observe", "full"}, 2,
			[]string{"--vary obs_noise: the likelihood (method ours, observe full, planner full) does not depend on it"}},
		{"varied parameter the baseline ignores", []string{"--data", lin, "--vary", vary, "--method", "baseline"}, 2,
			[]string{"--vary obs_noise: the likelihood (method baseline, observe partial, planner full) does not depend on it"}},
		{"missing --vary", []string{"--data", lin}, 2, []string{"--vary is required"}},
		{"missing --data", []string{"--vary", vary}, 2, []string{"--data is required"}},
		{"bad --params", []string{"--data", lin, "--vary", vary, "--params", "motor_noise"}, 2, []string{"--params", "not name=value"}},
		{"multi-subject file without --subject", []string{"--data", lin2, "--vary", vary}, 2, []string{lin2, "2 subjects", "--subject"}},
		{"unknown subject", []string{"--data", lin2, "--subject", "7", "--vary", vary}, 1, []string{lin2, `no subject "7"`}},
		{"data file missing", []string{"--data", filepath.Join(dir, "nope.csv"), "--vary", vary}, 1, []string{"nope.csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "grid.csv")
			r := cliRun(t, append([]string{"grid", "--task", "linear", "--out", out}, tc.args...)...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			entries, err := os.ReadDir(outDir)
			require.NoError(t, err)
			assert.Empty(t, entries, "a failed grid writes nothing")
		})
	}

	t.Run("missing --out", func(t *testing.T) {
		cliRequireFail(t, cliRun(t, "grid", "--task", "linear", "--data", lin, "--vary", vary), 2, "--out is required")
	})
	t.Run("out directory missing", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "no", "grid.csv")
		cliRequireFail(t, cliRun(t, "grid", "--task", "linear", "--data", lin, "--vary", vary, "--out", out), 1, "cannot write")
	})
	// --truth is checked only after the grid was computed: the CSV is written, then the
	// command fails with a usage error.
	t.Run("truth without both parameters", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "grid.csv")
		r := cliRun(t, "grid", "--task", "linear", "--data", lin, "--vary", vary, "--n", "2", "--truth", "action_cost=0.1", "--out", out)
		cliRequireFail(t, r, 2, "--truth must give both action_cost and obs_noise")
	})
}
