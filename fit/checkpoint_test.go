package fit

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLBFGSBFromContinuesExactly runs minimizations to the end, keeping the state at every
// iteration boundary, and continues each from every one of its states after a JSON round
// trip: the continuation evaluates the same points and ends with the same result, bit for bit.
func TestLBFGSBFromContinuesExactly(t *testing.T) {
	lo4, hi4 := unbounded(4)
	huberInf := func(x []float64) (float64, []float64, error) { // not finite where x0 > 2
		if x[0] > 2 {
			return inf, nil, nil
		}
		a, b := x[0]-1.5, x[1]-0.5
		ra, rb := math.Sqrt(1+a*a), math.Sqrt(1+b*b)
		return ra + rb, []float64{a / ra, b / rb}, nil
	}
	tests := []struct {
		name   string
		fn     Objective
		x0     []float64
		lo, hi []float64
		set    LBFGSBSettings
	}{
		{"Rosenbrock, memory of 3 pairs", rosenbrock, filled(4, -1.2), lo4, hi4, LBFGSBSettings{Memory: 3, PGTol: 1e-9}},
		{"Rosenbrock, active bounds", rosenbrock, []float64{-1.2, 1, -0.5}, []float64{-2, -2, 0.3}, []float64{0.8, 2, 2}, LBFGSBSettings{}},
		{"non-finite region", huberInf, []float64{-30, 3}, []float64{-50, -inf}, []float64{inf, inf}, LBFGSBSettings{PGTol: 1e-8}},
		{"iteration limit", rosenbrock, []float64{-1.2, 1}, lo4[:2], hi4[:2], LBFGSBSettings{MaxIter: 7}},
		{"evaluation limit", rosenbrock, []float64{-1.2, 1}, lo4[:2], hi4[:2], LBFGSBSettings{MaxEval: 23}},
		{"memory seeded from a curvature", rosenbrock, []float64{-2, -2.3, 0, 0, -5.8}, filled(5, -6), filled(5, 6),
			LBFGSBSettings{Memory: 7, Curvature: scaled(corrQuadA, 0.3)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var states [][]byte
			set := tc.set
			set.OnIteration = func(st LBFGSBState) {
				b, err := json.Marshal(st)
				require.NoError(t, err)
				states = append(states, b)
			}
			full := &recorder{fn: tc.fn}
			want := LBFGSB(full.eval, tc.x0, tc.lo, tc.hi, set)
			require.NoError(t, want.Err)
			require.GreaterOrEqual(t, len(states), want.Iterations, "a state after the start and after every iteration but the last")
			set.OnIteration = nil
			for k, b := range states {
				var st LBFGSBState
				require.NoError(t, json.Unmarshal(b, &st))
				rest := &recorder{fn: tc.fn}
				got := LBFGSBFrom(rest.eval, st, tc.lo, tc.hi, set)
				require.Equal(t, want, got, "continued from state %d of %d (%s)", k, len(states), want.Status)
				require.Equal(t, len(full.points)-st.Evaluations, len(rest.points), "as many evaluations from state %d", k)
				for i, p := range rest.points {
					require.Equal(t, full.points[st.Evaluations+i], p, "the same points from state %d", k)
				}
			}
		})
	}
}

func TestLBFGSBStateJSONIsExact(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 0.1, 1.0 / 3, -2.5e-300, math.SmallestNonzeroFloat64, math.MaxFloat64,
		math.Nextafter(1, 2), math.Inf(1), math.Inf(-1), math.NaN()}
	st := LBFGSBState{X: values, Grad: values, F: math.NaN(), Iterations: 3, Evaluations: 7, Theta: 1.0 / 7, Seeded: 1,
		S: [][]float64{values, values}, Y: [][]float64{values, values}}
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var got LBFGSBState
	require.NoError(t, json.Unmarshal(b, &got))
	same := func(a, b []float64) {
		require.Len(t, b, len(a))
		for i := range a {
			assert.Equal(t, math.Float64bits(a[i]), math.Float64bits(b[i]), "%v became %v", a[i], b[i])
		}
	}
	same(st.X, got.X)
	same(st.Grad, got.Grad)
	same(st.S[1], got.S[1])
	same(st.Y[0], got.Y[0])
	same([]float64{st.F, st.Theta}, []float64{got.F, got.Theta})
	assert.Equal(t, 3, got.Iterations)
	assert.Equal(t, 7, got.Evaluations)

	for _, bad := range []string{`{"x":["Infinity"]}`, `{"x":["1"]}`, `{"f":true}`} {
		assert.Error(t, json.Unmarshal([]byte(bad), &got), bad)
	}
}

func TestLBFGSBStateCheck(t *testing.T) {
	ok := LBFGSBState{X: []float64{1, 2}, Grad: []float64{0, 1}, F: 1, Theta: 1, S: [][]float64{{1, 0}}, Y: [][]float64{{1, 1}}}
	require.NoError(t, ok.Check(2, 10))
	tests := []struct {
		name   string
		modify func(*LBFGSBState)
		n, m   int
	}{
		{"other dimension", func(*LBFGSBState) {}, 3, 10},
		{"more pairs than the memory", func(s *LBFGSBState) { s.S, s.Y = [][]float64{{1, 0}, {0, 1}}, [][]float64{{1, 1}, {1, 2}} }, 2, 1},
		{"s without y", func(s *LBFGSBState) { s.Y = nil }, 2, 10},
		{"short pair", func(s *LBFGSBState) { s.S = [][]float64{{1}} }, 2, 10},
		{"non-finite value", func(s *LBFGSBState) { s.F = math.Inf(1) }, 2, 10},
		{"negative count", func(s *LBFGSBState) { s.Evaluations = -1 }, 2, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := ok
			tc.modify(&st)
			assert.Error(t, st.Check(tc.n, tc.m))
			lo, hi := unbounded(tc.n)
			assert.Panics(t, func() { LBFGSBFrom(rosenbrock, st, lo, hi, LBFGSBSettings{Memory: tc.m}) })
		})
	}
}

// checkpointSubjects are two small subjects of the linear task.
func checkpointSubjects(t *testing.T) []Subject {
	return []Subject{
		{ID: "a", Trials: simulate(t, "linear", control.ObservePartial, 4, 0, 1)},
		{ID: "b", Trials: simulate(t, "linear", control.ObservePartial, 4, 0, 2)},
	}
}

var checkpointOptions = Options{Restarts: 3, Seed: 5, MaxIter: 25}

// TestFitResumesExactly interrupts fits (a cancelled context, as a signal does), continues
// them from their last checkpoint or from an earlier one (as after kill -9), and requires the
// results of the uninterrupted fit, bit for bit, having redone only the work after the
// checkpoint.
func TestFitResumesExactly(t *testing.T) {
	subjects := checkpointSubjects(t)
	want := fitAll(t, newFitter(t, "linear", likelihood.Options{}, checkpointOptions), subjects)
	total := 0
	for _, r := range want {
		total += r.Evaluations
	}
	tests := []struct {
		name    string
		stopAt  float64 // fraction of the evaluations after which the fit is cancelled
		earlier bool    // continue from a checkpoint before the last one
		queue   int     // Options.Queue of the interrupted and the continued fit
	}{
		{"cancelled at 30 %, last checkpoint", 0.3, false, 0},
		{"cancelled at 80 %, last checkpoint", 0.8, false, 0},
		{"killed at 80 %, an earlier checkpoint", 0.8, true, 0},
		{"one subject at a time, cancelled at 30 %", 0.3, false, checkpointOptions.Restarts},
		{"one subject at a time, killed at 60 %", 0.6, true, checkpointOptions.Restarts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := checkpointOptions
			opts.Queue = tc.queue
			f := newFitter(t, "linear", likelihood.Options{}, opts)
			var ckpts [][]byte
			f.SetCheckpoint(time.Nanosecond, func(c *Checkpoint) error { // at every batch
				b, err := json.Marshal(c)
				ckpts = append(ckpts, b)
				return err
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.SetProgress(func(p Progress) {
				if float64(p.Evaluations) >= tc.stopAt*float64(total) {
					cancel()
				}
			})
			got := map[string]Result{}
			emit := func(r Result) error { got[r.Subject] = r; return nil }
			require.ErrorIs(t, f.Fit(ctx, subjects, emit), context.Canceled)
			require.NotEmpty(t, ckpts)
			b := ckpts[len(ckpts)-1]
			if tc.earlier {
				b = ckpts[len(ckpts)*3/4]
			}
			var cp Checkpoint
			require.NoError(t, json.Unmarshal(b, &cp))

			var rest []Subject
			redo := 0 // the evaluations the checkpoint does not hold
			for _, s := range subjects {
				if _, ok := got[s.ID]; ok {
					continue
				}
				rest = append(rest, s)
				redo += want[s.ID].Evaluations
				for _, cs := range cp.Subjects {
					if cs.Subject == s.ID {
						for _, r := range cs.Restarts {
							if r != nil {
								redo -= r.State.Evaluations
							}
						}
					}
				}
			}
			require.NotEmpty(t, rest, "the fit was interrupted before its end")
			g := newFitter(t, "linear", likelihood.Options{}, opts)
			var last Progress
			g.SetProgress(func(p Progress) { last = p })
			require.NoError(t, g.FitFrom(context.Background(), rest, &cp, emit))
			assert.Equal(t, redo, last.Evaluations, "only the work after the checkpoint is redone")
			assert.Equal(t, len(rest)*checkpointOptions.Restarts, last.RestartsDone)
			assert.Equal(t, 1.0, last.Fraction)
			require.Len(t, got, len(subjects))
			for id, w := range want {
				r := got[id]
				r.Seconds, w.Seconds = 0, 0
				assert.Equal(t, w, r, "subject %s", id)
			}
		})
	}
}

func TestFitFromRefusesOtherCheckpoints(t *testing.T) {
	subjects := checkpointSubjects(t)
	opts := checkpointOptions
	opts.Infer = []string{"action_cost", "motor_noise"} // obs_noise held at its default
	f := newFitter(t, "linear", likelihood.Options{}, opts)
	tr, err := f.newTracker(subjects, nil)
	require.NoError(t, err)
	tests := []struct {
		name   string
		modify func(*Checkpoint)
		msg    string
	}{
		{"restarts", func(c *Checkpoint) { c.Restarts++ }, "with 4 restarts"},
		{"fitted", func(c *Checkpoint) { c.Fitted = c.Fitted[1:] }, "checkpoint of a fit of"},
		{"held values", func(c *Checkpoint) { c.Held["obs_noise"] = -1 }, "obs_noise: -1 in the checkpoint"},
		{"data", func(c *Checkpoint) { c.Subjects[1].Data = "0123" }, "subject b has other data"},
		{"restarts of a subject", func(c *Checkpoint) { c.Subjects[0].Restarts = nil }, "holds 0 restarts of subject a"},
		{"state", func(c *Checkpoint) { c.Subjects[0].Restarts[2] = &RestartState{State: LBFGSBState{X: []float64{1}}} }, "subject a restart 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tr.snapshot()
			tc.modify(c)
			err := f.FitFrom(context.Background(), subjects, c, func(Result) error {
				t.Fatal("nothing is fitted")
				return nil
			})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	t.Run("differences", func(t *testing.T) {
		seed := uint64(5)
		run := Run{Task: "linear", Method: "ours", Observe: "partial", Seed: &seed, MaxIter: 25}
		c := tr.snapshot()
		c.Run = run
		assert.Empty(t, f.CheckpointDifferences(c, run))
		other := uint64(6)
		c.Run.Seed = &other
		c.Restarts = 2
		assert.Equal(t, []string{"restarts: 2 in the file, 3 now", "seed: 6 in the file, 5 now"}, f.CheckpointDifferences(c, run))
	})
}

func TestCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	path := CheckpointPath(filepath.Join(dir, "fit.jsonl"))
	assert.Equal(t, filepath.Join(dir, "fit.jsonl.ckpt"), path)
	c := &Checkpoint{Format: CheckpointFormat, Restarts: 1, Fitted: []string{"a"}, Held: map[string]float64{"b": 0.1},
		Subjects: []SubjectState{{Subject: "s", Data: "00", Restarts: []*RestartState{
			{State: LBFGSBState{X: []float64{0.3}, F: math.Inf(1)}, Status: statusInitNotFinite}}}}}
	require.NoError(t, WriteCheckpoint(path, c))
	c.Restarts = 2
	require.NoError(t, WriteCheckpoint(path, c), "replaces the file")
	got, err := ReadCheckpoint(path)
	require.NoError(t, err)
	assert.Equal(t, c, got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	for name, content := range map[string]string{"garbage": "{", "other format": `{"format": 99}`} {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		_, err := ReadCheckpoint(path)
		assert.ErrorContains(t, err, path, name)
	}
	assert.Error(t, WriteCheckpoint(filepath.Join(dir, "missing", "x.ckpt"), c))
}
