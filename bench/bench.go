// Package bench measures nioc-gpu: the cost of one likelihood evaluation (value and exact
// gradient) by task and batch size, and the wall time of whole fits, as Go benchmarks
// (`go test -bench . ./bench`) and as one table (`make bench`, i.e. `go run ./bench/table`).
package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// PaperFitSeconds are the paper's mean wall times of one partially observable fit (50
// restarts, one core; App. F).
var PaperFitSeconds = map[string]float64{"reaching": 140, "navigation": 64, "pendulum": 31, "cartpole": 115}

// Dataset simulates trials of the task's agent at its default parameters (partially
// observable, with the task's policy noise).
func Dataset(m models.Model, b backends.Backend, subjects, trials int, seed uint64) ([][][][]float64, error) {
	spec := m.Spec()
	theta := [][]float64{spec.Defaults()}
	sv, err := control.NewSolver(m, spec.Steps, b, control.SolverOptions{Planner: spec.Planner})
	if err != nil {
		return nil, err
	}
	pol, err := sv.Solve(theta, nil)
	if err != nil {
		return nil, err
	}
	out := make([][][][]float64, subjects)
	for s := range subjects {
		xs, err := control.Simulate(m, pol, theta, b, control.SimOptions{Trials: trials, Seed: seed + uint64(s), Temperature: spec.Temperature})
		if err != nil {
			return nil, err
		}
		out[s] = xs[0]
	}
	return out, nil
}

// EvalTiming is the cost of evaluating the log-likelihood and its gradient.
type EvalTiming struct {
	Task          string
	Rows, Trials  int           // parameter vectors and trials per evaluation
	Build         time.Duration // building and compiling the graph (once per shape)
	Compile       time.Duration // the backend's compilation (summed over programs compiled at once)
	Nodes         int
	Calls         int           // program calls per evaluation (looped form), else 0
	Builds        int           // programs compiled
	PerEval       time.Duration // one batched evaluation
	EvalsPerSec   float64       // parameter vectors per second
	TransitionsPS float64       // rows × trials × steps per second
}

// TimeEval measures evaluations of rows parameter vectors (each against the same trials).
func TimeEval(m models.Model, b backends.Backend, trials [][][]float64, rows, repeats int) (EvalTiming, error) {
	return TimeEvalWith(m, b, likelihood.Options{}, trials, rows, repeats)
}

// TimeEvalWith is TimeEval with the likelihood's options given.
func TimeEvalWith(m models.Model, b backends.Backend, opts likelihood.Options, trials [][][]float64, rows, repeats int) (EvalTiming, error) {
	return timeEvals(m, b, opts, trials, rows, repeats, false)
}

// defaultPoint returns the task's default parameters on the fitting scale (a log-scaled
// default of 0 at its lower bound).
func defaultPoint(spec models.Spec) []float64 {
	theta := make([]float64, len(spec.Params))
	for j, p := range spec.Params {
		v := p.Default
		if v <= 0 && p.Scale == models.Log10Scale {
			v = p.Lo
		}
		theta[j] = p.ToScale(v)
	}
	return theta
}

// TimeEvalRows measures evaluations of rows parameter vectors (each against the same trials)
// as a fit makes them (likelihood.Evaluator.EvalRows with the fit's batching): split into
// chunks that run one per core, and on XLA's CPU plugin as lanes. PerEval is then what one
// round of a fit's restarts costs; Calls counts the program calls of all chunks; Build, Nodes
// and Builds are as TimeEval's.
func TimeEvalRows(m models.Model, b backends.Backend, trials [][][]float64, rows, repeats int) (EvalTiming, error) {
	return timeEvals(m, b, likelihood.Options{}, trials, rows, repeats, true)
}

// linkWait is how long timeEvals waits for replays linked into one program
// (NIOC_REPLAY=program) before it times the evaluations as they are.
const linkWait = 3 * time.Minute

// timeEvals times one evaluation of rows parameter vectors at the task's defaults (its graphs
// built and compiled: Build) and then repeats more (PerEval): through EvalRows as a fit makes
// them (asFit), else one Eval of all rows. Calls counts a repeat's program calls.
func timeEvals(m models.Model, b backends.Backend, opts likelihood.Options, trials [][][]float64, rows, repeats int, asFit bool) (EvalTiming, error) {
	e, err := likelihood.New(m, b, opts)
	if err != nil {
		return EvalTiming{}, err
	}
	spec := m.Spec()
	data := make([][][][]float64, rows)
	thetas := make([][]float64, rows)
	for i := range rows {
		data[i] = trials
		thetas[i] = defaultPoint(spec)
	}
	eval := func() error {
		_, _, err := e.EvalRows(data, thetas, likelihood.Batching{Trials: len(trials), Most: rows, Keep: true})
		return err
	}
	if !asFit {
		d, err := e.Prepare(data, 0)
		if err != nil {
			return EvalTiming{}, err
		}
		eval = func() error {
			_, _, err := e.Eval(d, thetas)
			return err
		}
	}
	t0 := time.Now()
	if err := eval(); err != nil {
		return EvalTiming{}, err
	}
	if os.Getenv(graph.EnvReplay) == "program" {
		// Replays link into one program in the background: time them once they have.
		for start := time.Now(); e.Stats().ReplayPrograms == 0 && time.Since(start) < linkWait; {
			if err := eval(); err != nil {
				return EvalTiming{}, err
			}
			if err := e.LinkError(); err != nil {
				return EvalTiming{}, err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := time.Since(t0)
	calls := e.Calls()
	t1 := time.Now()
	for range repeats {
		if err := eval(); err != nil {
			return EvalTiming{}, err
		}
	}
	per := time.Since(t1) / time.Duration(repeats)
	calls = (e.Calls() - calls) / max(repeats, 1)
	st := e.Stats()
	return EvalTiming{Task: spec.Name, Rows: rows, Trials: len(trials), Build: first - per, Compile: st.CompileTime, Nodes: st.Nodes, Calls: calls, Builds: st.Builds,
		PerEval: per, EvalsPerSec: float64(rows) / per.Seconds(),
		TransitionsPS: float64(rows*len(trials)*(len(trials[0])-1)) / per.Seconds()}, nil
}

// FitTiming is the wall time of a fit.
type FitTiming struct {
	Task                 string
	Subjects, Restarts   int
	Wall                 time.Duration
	Warm                 time.Duration // the same fit again, its graphs built (TimeFit's again); 0 if not run
	PerSubject           time.Duration
	Evaluations, Batches int
	MedianRelErr         float64
}

// TimeFit fits subjects (each a set of trials) with the given restarts and returns the wall
// time, including graph building, and with again the wall time of the same fit run a second
// time on the same evaluator (Warm), whose graphs are then built: the difference is what
// building and compiling cost the first. (The time callers waited for compiles, summed, can
// exceed the wall time where a fit's chunks wait for the same compile on several cores.)
func TimeFit(m models.Model, b backends.Backend, subjects [][][][]float64, restarts int, maxIter int, again bool) (FitTiming, error) {
	e, err := likelihood.New(m, b, likelihood.Options{})
	if err != nil {
		return FitTiming{}, err
	}
	ft, err := timeFit(e, m, subjects, restarts, maxIter)
	if err != nil || !again {
		return ft, err
	}
	warm, err := timeFit(e, m, subjects, restarts, maxIter)
	ft.Warm = warm.Wall
	return ft, err
}

// timeFit is one fit of TimeFit on evaluator e.
func timeFit(e *likelihood.Evaluator, m models.Model, subjects [][][][]float64, restarts int, maxIter int) (FitTiming, error) {
	f, err := fit.New(e, fit.Options{Restarts: restarts, Seed: 1, MaxIter: maxIter})
	if err != nil {
		return FitTiming{}, err
	}
	var subj []fit.Subject
	for i, s := range subjects {
		subj = append(subj, fit.Subject{ID: fmt.Sprint(i + 1), Trials: s})
	}
	spec := m.Spec()
	var evals int
	var errs []float64
	t0 := time.Now()
	err = f.Fit(context.Background(), subj, func(r fit.Result) error {
		evals += r.Evaluations
		for _, name := range r.Fitted {
			p, _ := spec.Param(name)
			if p.Default != 0 {
				errs = append(errs, abs(r.Params[name]-p.Default)/abs(p.Default))
			}
		}
		return nil
	})
	wall := time.Since(t0)
	if err != nil {
		return FitTiming{}, err
	}
	return FitTiming{Task: spec.Name, Subjects: len(subjects), Restarts: restarts, Wall: wall,
		PerSubject: wall / time.Duration(len(subjects)), Evaluations: evals, Batches: f.Batches(),
		MedianRelErr: fit.Median(errs)}, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
