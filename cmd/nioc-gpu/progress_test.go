package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgressBar(t *testing.T) {
	pr := fit.Progress{SubjectsDone: 1, Subjects: 4, Restarts: 200, RestartsDone: 60, RestartsConverged: 55,
		BestLogLik: -12.345, Evaluations: 3000, Elapsed: 100 * time.Second, Fraction: 0.4, ETA: 150 * time.Second}
	text := "1/4 subjects  60/200 restarts done (55 converged)  3000 evals (30.0/s)  best loglik -12.35  1m40s  ETA 2m30s"
	tests := []struct {
		name string
		mode progressMode
		// updates at these seconds after the start
		at   []float64
		want string
	}{
		{"off", progressOff, []float64{0, 61, 200}, ""},
		{"terminal: redrawn, at most 5 times a second", progressTerminal, []float64{0, 0.1, 0.3},
			"\r[#########...............] " + text + " \r[#########...............] " + text + " \n"},
		{"log: one line a minute, the first after a minute", progressLog, []float64{1, 59, 61, 90, 122},
			"progress  40%  " + text + "\nprogress  40%  " + text + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			now := start
			var w bytes.Buffer
			bar := newProgressBarMode(&w, tc.mode, func() time.Time { return now })
			for _, s := range tc.at {
				now = start.Add(time.Duration(s * float64(time.Second)))
				bar.update(pr)
			}
			bar.finish()
			assert.Equal(t, tc.want, w.String())
		})
	}

	t.Run("unknown ETA", func(t *testing.T) {
		p := pr
		p.ETA, p.SubjectsDone = 0, 0
		s := fitProgressText(p)
		assert.True(t, strings.HasSuffix(s, "ETA —"), s)
		assert.Contains(t, s, "best loglik —")
	})
	t.Run("a line of its own clears the bar", func(t *testing.T) {
		var w bytes.Buffer
		bar := newProgressBarMode(&w, progressTerminal, time.Now)
		bar.show(0.5, "x")
		bar.println("subject 1: failed")
		bar.finish()
		assert.Equal(t, "\r[############............] x \r\033[Ksubject 1: failed\n", w.String())
	})
	t.Run("a file is a log, other writers and --quiet show nothing", func(t *testing.T) {
		f, err := os.CreateTemp(t.TempDir(), "stderr")
		require.NoError(t, err)
		defer f.Close()
		assert.Equal(t, progressLog, newProgressBar(f, false).mode)
		assert.Equal(t, progressOff, newProgressBar(f, true).mode)
		assert.Equal(t, progressOff, newProgressBar(&bytes.Buffer{}, false).mode)
	})
}

// TestReportFitWarnings: a fit's fallbacks are printed as warnings that say which intervals the
// record holds.
func TestReportFitWarnings(t *testing.T) {
	for _, c := range []struct {
		name string
		res  fit.Result
		want string
	}{
		{"robust fell back", fit.Result{Subject: "s1", Uncertainty: fit.UncertaintyHessian, RobustErr: "a trial's score for the robust intervals is not finite"},
			"warning: subject s1: a trial's score for the robust intervals is not finite; its intervals are the inverse Hessian's"},
		{"bootstrap failed", fit.Result{Subject: "s2", Uncertainty: fit.UncertaintyRobust, BootstrapErr: "bootstrap: no refit converged"},
			"warning: subject s2: bootstrap: no refit converged; its intervals are the robust ones"},
		{"bootstrap failed after the robust ones", fit.Result{Subject: "s3", Uncertainty: fit.UncertaintyHessian, RobustErr: "x", BootstrapErr: "bootstrap: no refit converged"},
			"warning: subject s3: bootstrap: no refit converged; its intervals are the inverse Hessian's"},
		{"none", fit.Result{Subject: "s4", Uncertainty: fit.UncertaintyRobust}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			reportFit(newProgressBarMode(&w, progressOff, time.Now), c.res)
			if c.want == "" {
				assert.Empty(t, w.String())
				return
			}
			assert.Contains(t, w.String(), c.want)
		})
	}
}
