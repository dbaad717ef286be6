package likelihood

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// TrialScores returns the log-likelihood of each of one subject's trials and its gradient in
// the fitting scale (the trial's score), at the parameters theta (fitting scale), with the
// linearization the subject's whole set of trials has: with LinearizeMean the mean of all of
// them, with LinearizeILQG the iLQG solution from their mean initial state. The values sum to
// the subject's log-likelihood and the gradients to its gradient (Eval on the trials as one
// row). The trials being independent, the spread of the scores measures how much information
// the data carry, whatever the likelihood's approximations: fit's robust (sandwich) standard
// errors and the sampler's curvature adjustment use it.
func (e *Evaluator) TrialScores(trials [][][]float64, theta []float64) (loglik []float64, grad [][]float64, err error) {
	if e.opts.ValueOnly {
		return nil, nil, fmt.Errorf("trial scores need the gradient: the evaluator is value-only")
	}
	if e.lanes() {
		return e.laneScores(trials, theta)
	}
	whole, err := e.prepare([][][][]float64{trials}, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	if ll, g, ok, err := e.scoresInCompiled(whole, trials, theta); ok {
		return ll, g, err
	}
	N, T, n := len(trials), whole.Steps, len(e.sym.Spec.States)
	rows := make([][][][]float64, N)
	thetas := make([][]float64, N)
	for r, tr := range trials {
		rows[r], thetas[r] = [][][]float64{tr}, theta
	}
	d, err := e.prepare(rows, 1, T)
	if err != nil {
		return nil, nil, err
	}
	var nominal *control.Policy
	switch e.opts.Linearize {
	case LinearizeMean:
		d.forceExplicit(e.sym.Spec.PlanningHorizon() == models.HorizonTrial)
		src, cols := whole.rowNominal(n)
		d.nominal = make([]float64, (T+1)*n*N)
		for ti := range (T + 1) * n {
			for r := range N {
				d.nominal[ti*N+r] = src[ti*cols+min(r, cols-1)]
			}
		}
	case LinearizeILQG:
		one, err := e.Nominal(whole, [][]float64{theta})
		if err != nil {
			return nil, nil, err
		}
		nominal = one.Repeat(N)
	}
	return e.EvalAt(d, thetas, nominal)
}

// rowNominal returns the LinearizeMean nominal of whole, one row of trials, [T+1][n][cols]
// (T = whole.Steps): the explicit one of trials of their own length (a column per trial with a
// trial horizon), else the mean of all of them (cols = 1).
func (whole *Data) rowNominal(n int) (src []float64, cols int) {
	if whole.nominal != nil {
		return whole.nominal, len(whole.nominal) / ((whole.Steps + 1) * n)
	}
	lengths := make([]int, whole.Trials)
	for r := range lengths {
		lengths[r] = whole.Steps
	}
	return whole.meanNominal(n, lengths, true), 1
}

// forceExplicit gives d (rows of one trial each) the explicit per-step inputs of trials of
// their own length, all ones where they are missing because every trial has Steps steps, so
// that an explicit LinearizeMean nominal can be passed; the likelihood is unchanged.
func (d *Data) forceExplicit(trialHorizon bool) {
	T, PN := d.Steps, d.Rows*d.Trials
	if d.running == nil {
		d.running = make([]float64, T*PN)
		for i := range d.running {
			d.running[i] = 1
		}
	}
	if trialHorizon && d.ends == nil {
		d.ends = make([]float64, T*PN)
		for j := range PN {
			d.ends[(T-1)*PN+j] = 1
		}
	}
}

// loopedShape is the shape of a looped evaluation's compiled programs: rows × trials of steps
// steps, with the explicit inputs of trials of their own length or without (explicit).
type loopedShape struct {
	rows, trials, steps int
	explicit            explicitInputs
}

// explicitInputs says which explicit per-step inputs of trials of their own length a Data
// carries (none where every trial has Steps steps): the programs that take them differ from
// those that do not.
type explicitInputs struct{ running, ends, nominal bool }

func (d *Data) explicit() explicitInputs {
	return explicitInputs{d.running != nil, d.ends != nil, d.nominal != nil}
}

// noteShape records that the looped programs of d's shape are compiled.
func (e *Evaluator) noteShape(d *Data) {
	sh := loopedShape{d.Rows, d.Trials, d.Steps, d.explicit()}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.shapes, sh) {
		e.shapes = append(e.shapes, sh)
	}
}

// scoreReuse is the state of TrialScores' choice (reuseForScores).
type scoreReuse struct {
	mu    sync.Mutex    // held while deciding and evaluating (scoresInCompiled)
	spent time.Duration // wall time of the trial scores evaluated in compiled shapes
	own   bool          // the scores have moved to shapes of their own
}

// scoresInCompiled is TrialScores in a compiled shape (scoreShape), where reuseForScores says
// so; ok is false where it evaluated nothing. Scores evaluated so run one at a time, so that
// each decision counts the time of those before it (the subjects of a fit that end together
// would otherwise all decide before any had spent anything).
func (e *Evaluator) scoresInCompiled(whole *Data, trials [][][]float64, theta []float64) (loglik []float64, grad [][]float64, ok bool, err error) {
	sh, found := e.scoreShape(whole)
	if !found {
		return nil, nil, false, nil
	}
	e.reused.mu.Lock()
	defer e.reused.mu.Unlock()
	if !e.reuseForScores() {
		return nil, nil, false, nil
	}
	t0 := time.Now()
	loglik, grad, err = e.trialScoresIn(trials, theta, sh)
	e.reused.spent += time.Since(t0)
	return loglik, grad, true, err
}

// reuseForScores says whether TrialScores evaluates in a shape the evaluator has compiled
// (scoreShape) rather than in one of its own (rows of one trial). A compiled shape costs no
// compile, but each score a row of the fit's (⌈trials / rows⌉ evaluations of rows × trials):
// the better choice for one subject, not for many on a CPU (reaching on XLA's CPU plugin:
// 0.4 s a subject in a fit's 50 × 50 shape, against a compile of about 6 s and 0.03 s a
// subject after it). As in ski rental, compiled shapes are used until the time spent in them
// reaches what compiling a shape has cost this evaluator on average (graph.ProgramStats.Waited:
// less where NIOC_XLA_CACHE held the programs), then shapes of their own from then on, so
// that the scores cost at most about twice the better of the two, whatever the number of
// subjects and the device. The caller holds e.reused.mu.
func (e *Evaluator) reuseForScores() bool {
	waited := e.engine.Stats().Waited
	e.mu.Lock()
	shapes := len(e.shapes)
	e.mu.Unlock()
	if !e.reused.own && e.reused.spent >= waited/time.Duration(max(1, shapes)) {
		e.reused.own = true
	}
	return !e.reused.own
}

// scoreShape returns the compiled shape in which the trial scores of whole (one row of
// trials) cost least, where the evaluator runs looped and has compiled a shape of whole's
// steps and explicit inputs (trials of their own length take them, and so do the rows
// trialScoresIn makes of them): the one that evaluates the fewest trials, then the fewest
// times; with LinearizeMean among those whose rows hold all of whole's trials (each row keeps
// the whole set's nominal, see trialScoresIn). Compiling the one-trial-per-row shape would cost
// an XLA fit a second compile (as long as the first: seconds on a CPU, tens of seconds for
// large batches), against ⌈trials / rows⌉ evaluations of a shape it has.
func (e *Evaluator) scoreShape(whole *Data) (loopedShape, bool) {
	if !e.looped() {
		return loopedShape{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	best, cost := loopedShape{}, 0
	for _, sh := range e.shapes {
		if sh.steps != whole.Steps || sh.explicit != whole.explicit() || e.opts.Linearize == LinearizeMean && sh.trials < whole.Trials {
			continue
		}
		c := (whole.Trials + sh.rows - 1) / sh.rows * sh.rows * sh.trials // trials evaluated
		// fewest trials evaluated, then fewest evaluations
		if cost == 0 || c < cost || c == cost && sh.rows > best.rows {
			best, cost = sh, c
		}
	}
	return best, cost > 0
}

// trialScoresIn is TrialScores evaluated in the compiled shape sh, sh.rows trials an
// evaluation (the last evaluation's spare rows repeat its last trial). With LinearizeData
// each row holds one trial, padded with masked copies of it to sh.trials. With LinearizeMean
// each row holds all the trials, so that the nominal, their mean, is the whole set's, and
// counts the log-likelihood of one (mask 1, the others −1: Data.mask). With LinearizeILQG
// each row holds one trial and every row is given the iLQG solution from the mean initial
// state of all of them, solved in the shape's rows. Where sh takes the explicit inputs of
// trials of their own length, an evaluation whose trials all have sh.steps steps is given
// them too (all ones: Data.forceExplicit), so that it runs sh's programs.
func (e *Evaluator) trialScoresIn(trials [][][]float64, theta []float64, sh loopedShape) (loglik []float64, grad [][]float64, err error) {
	N := len(trials)
	mean := e.opts.Linearize == LinearizeMean
	var nominal *control.Policy
	loglik, grad = make([]float64, N), make([][]float64, N)
	for start := 0; start < N; start += sh.rows {
		rows := make([][][][]float64, sh.rows)
		thetas := make([][]float64, sh.rows)
		for i := range rows {
			rows[i], thetas[i] = [][][]float64{trials[min(start+i, N-1)]}, theta
			if mean {
				rows[i] = trials
			}
		}
		d, err := e.prepare(rows, sh.trials, sh.steps)
		if err != nil {
			return nil, nil, err
		}
		if sh.explicit.running && d.running == nil {
			d.forceExplicit(sh.explicit.ends)
		}
		if d.explicit() != sh.explicit {
			return nil, nil, fmt.Errorf("trial scores: rows with explicit inputs %+v for a compiled shape that takes %+v", d.explicit(), sh.explicit)
		}
		if mean {
			for i := range sh.rows {
				for j := range N {
					d.mask[i*sh.trials+j] = -1
				}
				d.mask[i*sh.trials+min(start+i, N-1)] = 1
			}
		}
		if e.opts.Linearize == LinearizeILQG && nominal == nil {
			x0 := meanInitial(trials)
			for i := range d.initial {
				d.initial[i] = x0
			}
			if nominal, err = e.Nominal(d, thetas); err != nil {
				return nil, nil, err
			}
		}
		ll, g, err := e.EvalAt(d, thetas, nominal)
		if err != nil {
			return nil, nil, err
		}
		for i := range min(sh.rows, N-start) {
			loglik[start+i], grad[start+i] = ll[i], g[i]
		}
	}
	return loglik, grad, nil
}
