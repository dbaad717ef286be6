package fit

// Checkpoints: the optimizer state of every restart of a fit in progress, written to a file
// now and then so that a fit that was killed continues (FitFrom) where it stood, with the
// results of an uninterrupted fit.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/internal/atomicfile"
)

// CheckpointFormat is the version of the checkpoint file format.
const CheckpointFormat = 1

// Checkpoint is the state of an unfinished fit: for every subject not yet emitted, each
// restart's progress, with what identifies the fit.
type Checkpoint struct {
	Format   int                `json:"format"`
	Run      Run                `json:"run"` // what produced it; set by the caller, not compared by FitFrom
	Restarts int                `json:"restarts"`
	Fitted   []string           `json:"fitted"`
	Held     map[string]float64 `json:"held"` // the parameters not fitted, natural units
	Subjects []SubjectState     `json:"subjects"`
}

// SubjectState is the progress of one subject's restarts.
type SubjectState struct {
	Subject string `json:"subject"`
	// Data is a fingerprint of the subject's trials: a checkpoint continues the same data only.
	Data string `json:"data"`
	// Restarts holds each restart's progress, by restart index (the order of
	// Fitter.InitialPoints); nil for a restart not started yet.
	Restarts []*RestartState `json:"restarts"`
}

// RestartState is one restart's progress: the optimizer's state at its latest iteration
// boundary or, once Status is set, its final point.
type RestartState struct {
	State     LBFGSBState `json:"state"`
	Status    string      `json:"status,omitempty"` // the optimizer's final status; empty while it runs
	Converged bool        `json:"converged,omitempty"`
}

// finished returns the state of a finished restart.
func finished(r LBFGSBResult) *RestartState {
	return &RestartState{State: LBFGSBState{X: r.X, F: r.F, Grad: r.Grad, Iterations: r.Iterations, Evaluations: r.Evaluations},
		Status: r.Status, Converged: r.Converged}
}

// result returns the result of a finished restart.
func (rs *RestartState) result() LBFGSBResult {
	st := rs.State
	return LBFGSBResult{X: st.X, F: st.F, Grad: st.Grad, Iterations: st.Iterations, Evaluations: st.Evaluations,
		Converged: rs.Converged, Status: rs.Status}
}

// Evaluations returns the likelihood evaluations of the restarts in the checkpoint.
func (c *Checkpoint) Evaluations() int {
	n := 0
	for _, s := range c.Subjects {
		for _, r := range s.Restarts {
			if r != nil {
				n += r.State.Evaluations
			}
		}
	}
	return n
}

// CheckpointPath returns the checkpoint file of a results file: out + ".ckpt".
func CheckpointPath(out string) string { return out + ".ckpt" }

// WriteCheckpoint writes c to path atomically: to a temporary file beside it, synced, then
// renamed over path, so that path always holds a whole checkpoint.
func WriteCheckpoint(path string, c *Checkpoint) (err error) {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// ReadCheckpoint reads a checkpoint file written by WriteCheckpoint.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: not a checkpoint: %v", path, err)
	}
	if c.Format != CheckpointFormat {
		return nil, fmt.Errorf("%s: checkpoint format %d, this version reads %d", path, c.Format, CheckpointFormat)
	}
	return &c, nil
}

// held returns the parameters not fitted, natural units.
func (f *Fitter) held() map[string]float64 {
	out := map[string]float64{}
	for i, p := range f.spec.Params {
		if !slices.Contains(f.infer, i) {
			out[p.Name] = f.natural[i]
		}
	}
	return out
}

// CheckpointDifferences lists how the fit that wrote c differs from the fitter's with run
// (RunDifferences' form, and the values of parameters not fitted), nil if there is none.
func (f *Fitter) CheckpointDifferences(c *Checkpoint, run Run) []string {
	out := RunDifferences(Record{Run: c.Run, Restarts: c.Restarts, Fitted: c.Fitted}, run, f.opts.Restarts, f.Fitted())
	return append(out, f.heldDifferences(c)...)
}

func (f *Fitter) heldDifferences(c *Checkpoint) []string {
	var out []string
	now := f.held()
	names := make([]string, 0, len(now))
	for name := range now {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if was, ok := c.Held[name]; ok && was != now[name] {
			out = append(out, fmt.Sprintf("%s: %g in the checkpoint, %g now", name, was, now[name]))
		}
	}
	return out
}

// checkCheckpoint reports whether c can continue a fit of subjects by f.
func (f *Fitter) checkCheckpoint(c *Checkpoint, subjects []Subject) error {
	if c.Restarts != f.opts.Restarts || !slices.Equal(c.Fitted, f.Fitted()) {
		return fmt.Errorf("checkpoint of a fit of %v with %d restarts, not of %v with %d", c.Fitted, c.Restarts, f.Fitted(), f.opts.Restarts)
	}
	if d := f.heldDifferences(c); len(d) > 0 {
		return fmt.Errorf("checkpoint of a fit with other parameter values: %v", d)
	}
	data := map[string]string{}
	for _, s := range subjects {
		data[s.ID] = fingerprint(s.Trials)
	}
	n, m := len(f.infer), f.opts.Settings.withDefaults().Memory
	for _, s := range c.Subjects {
		fp, ok := data[s.Subject]
		if !ok {
			continue
		}
		if s.Data != fp {
			return fmt.Errorf("the checkpoint's subject %s has other data", s.Subject)
		}
		if len(s.Restarts) != f.opts.Restarts {
			return fmt.Errorf("the checkpoint holds %d restarts of subject %s, want %d", len(s.Restarts), s.Subject, f.opts.Restarts)
		}
		for r, rs := range s.Restarts {
			var err error
			switch {
			case rs == nil:
			case rs.Status != "":
				if len(rs.State.X) != n {
					err = fmt.Errorf("final point of %d variables, want %d", len(rs.State.X), n)
				}
			default:
				err = rs.State.Check(n, m)
			}
			if err != nil {
				return fmt.Errorf("checkpoint: subject %s restart %d: %v", s.Subject, r+1, err)
			}
		}
	}
	return nil
}

// fingerprint returns the digest of a subject's trials that a checkpoint records
// (data.Digest; checkpoints of versions before 2026-11-25 hold another hash, and are then
// refused as of other data).
func fingerprint(trials [][][]float64) string { return data.Digest(trials) }

// tracker follows every restart of a fit, for checkpoints and progress. The states it holds
// are never modified once stored.
type tracker struct {
	mu       sync.Mutex
	fitter   *Fitter
	subjects []Subject
	data     []string
	restarts [][]*RestartState // [subject][restart]; nil: not started
	emitted  []bool
	resumed  int // finished restarts taken from the checkpoint
}

// newTracker returns the tracker of a fit of subjects, starting from c when it is not nil.
func (f *Fitter) newTracker(subjects []Subject, c *Checkpoint) (*tracker, error) {
	t := &tracker{fitter: f, subjects: subjects, data: make([]string, len(subjects)),
		restarts: make([][]*RestartState, len(subjects)), emitted: make([]bool, len(subjects))}
	if c != nil {
		if err := f.checkCheckpoint(c, subjects); err != nil {
			return nil, err
		}
	}
	from := map[string][]*RestartState{}
	if c != nil {
		for _, s := range c.Subjects {
			from[s.Subject] = s.Restarts
		}
	}
	for i, s := range subjects {
		t.data[i] = fingerprint(s.Trials)
		t.restarts[i] = make([]*RestartState, f.opts.Restarts)
		copy(t.restarts[i], from[s.ID])
		for _, rs := range t.restarts[i] {
			if rs != nil && rs.Status != "" {
				t.resumed++
			}
		}
	}
	return t, nil
}

// restart returns the latest state of a restart, nil if it has not started.
func (t *tracker) restart(si, r int) *RestartState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.restarts[si][r]
}

func (t *tracker) update(si, r int, rs *RestartState) {
	t.mu.Lock()
	t.restarts[si][r] = rs
	t.mu.Unlock()
}

func (t *tracker) emit(si int) {
	t.mu.Lock()
	t.emitted[si] = true
	t.mu.Unlock()
}

// snapshot returns the checkpoint of the subjects not yet emitted.
func (t *tracker) snapshot() *Checkpoint {
	f := t.fitter
	c := &Checkpoint{Format: CheckpointFormat, Restarts: f.opts.Restarts, Fitted: f.Fitted(), Held: f.held(),
		Subjects: []SubjectState{}}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, s := range t.subjects {
		if !t.emitted[i] {
			c.Subjects = append(c.Subjects, SubjectState{Subject: s.ID, Data: t.data[i], Restarts: slices.Clone(t.restarts[i])})
		}
	}
	return c
}

// progress fills in the restarts' counts and the estimated fraction of the work done: the
// iterations done (each restart's first evaluation counted as one), of those and those
// expected of the unfinished restarts. An unfinished restart is expected to take as many
// iterations as the finished ones that got at least as far took on average, twice as many as
// it has if none did, and the iteration limit while no restart has finished.
func (t *tracker) progress(p *Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	limit := float64(t.fitter.opts.MaxIter + 1)
	var finished, running []float64 // iterations + 1
	for _, rss := range t.restarts {
		for _, rs := range rss {
			p.Restarts++
			switch {
			case rs == nil:
				running = append(running, 0)
			case rs.Status != "":
				p.RestartsDone++
				if rs.Converged {
					p.RestartsConverged++
				}
				finished = append(finished, float64(rs.State.Iterations+1))
			default:
				running = append(running, float64(rs.State.Iterations+1))
			}
		}
	}
	sort.Float64s(finished)
	tail := make([]float64, len(finished)+1) // tail[i] = Σ finished[i:]
	for i := len(finished) - 1; i >= 0; i-- {
		tail[i] = tail[i+1] + finished[i]
	}
	done := tail[0]
	left := 0.0
	for _, w := range running {
		done += w
		expect := limit
		if len(finished) > 0 {
			i := sort.SearchFloat64s(finished, w) // the first that got as far
			if n := len(finished) - i; n > 0 {
				expect = tail[i] / float64(n)
			} else {
				expect = math.Min(limit, 2*w)
			}
		}
		left += math.Max(expect-w, 1)
	}
	if done+left > 0 {
		p.Fraction = done / (done + left)
	}
}
