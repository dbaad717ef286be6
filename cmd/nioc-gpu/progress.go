package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nioc-gpu/nioc-gpu/fit"
)

// progressMode is how a progressBar shows progress.
type progressMode int

const (
	progressOff      progressMode = iota // --quiet, or a writer that is not a file
	progressTerminal                     // one status line redrawn in place
	progressLog                          // one line per minute (stderr is a file: Slurm logs)
)

// Intervals between two progress reports on a terminal and in a log.
const (
	progressTerminalEvery = 200 * time.Millisecond
	progressLogEvery      = time.Minute
)

// progressBar shows how a long command is going on stderr: on a terminal, one status line
// drawn over and over; when stderr is a file, one line per minute.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	mode  progressMode
	drawn bool
	last  time.Time
	now   func() time.Time
}

func newProgressBar(w io.Writer, quiet bool) *progressBar {
	mode := progressOff
	if f, ok := w.(*os.File); ok && !quiet {
		mode = progressLog
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			mode = progressTerminal
		}
	}
	return newProgressBarMode(w, mode, time.Now)
}

// newProgressBarMode returns a bar showing progress on w as mode says, by the clock now. In a
// log, the first line comes a minute after this call.
func newProgressBarMode(w io.Writer, mode progressMode, now func() time.Time) *progressBar {
	p := &progressBar{w: w, mode: mode, now: now}
	if mode == progressLog {
		p.last = now()
	}
	return p
}

// update shows the progress of a fit.
func (p *progressBar) update(pr fit.Progress) {
	if !p.due() {
		return
	}
	p.show(pr.Fraction, fitProgressText(pr))
}

// fitProgressText describes the progress of a fit in one line.
func fitProgressText(pr fit.Progress) string {
	rate := 0.0
	if s := pr.Elapsed.Seconds(); s > 0 {
		rate = float64(pr.Evaluations) / s
	}
	best := "—"
	if pr.SubjectsDone > 0 {
		best = strconv.FormatFloat(pr.BestLogLik, 'f', 2, 64)
	}
	eta := "—"
	if pr.ETA > 0 {
		eta = pr.ETA.Round(time.Second).String()
	}
	return fmt.Sprintf("%d/%d subjects  %d/%d restarts done (%d converged)  %d evals (%.1f/s)  best loglik %s  %s  ETA %s",
		pr.SubjectsDone, pr.Subjects, pr.RestartsDone, pr.Restarts, pr.RestartsConverged, pr.Evaluations, rate, best,
		pr.Elapsed.Round(time.Second), eta)
}

// due reports whether progress is shown and was last shown long enough ago to be shown again.
func (p *progressBar) due() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	every := progressTerminalEvery
	switch p.mode {
	case progressOff:
		return false
	case progressLog:
		every = progressLogEvery
	}
	now := p.now()
	if now.Sub(p.last) < every {
		return false
	}
	p.last = now
	return true
}

// show draws the bar filled to the fraction done, followed by text; in a log, one line with
// the percentage done.
func (p *progressBar) show(done float64, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case progressLog:
		fmt.Fprintf(p.w, "progress %3.0f%%  %s\n", 100*min(1, max(0, done)), text)
	case progressTerminal:
		width := 24
		filled := min(width, max(0, int(float64(width)*done)))
		fmt.Fprintf(p.w, "\r[%s%s] %s ", strings.Repeat("#", filled), strings.Repeat(".", width-filled), text)
		p.drawn = true
	}
}

// println prints a line of its own, clearing the bar first.
func (p *progressBar) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintln(p.w, s)
}

// finish ends the bar's line.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
