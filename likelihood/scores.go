package likelihood

import (
	"fmt"

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
	whole, err := e.prepare([][][][]float64{trials}, 0, 0)
	if err != nil {
		return nil, nil, err
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
		src, cols := whole.nominal, 1
		if src == nil {
			lengths := make([]int, N)
			for r := range lengths {
				lengths[r] = T
			}
			src = whole.meanNominal(n, lengths, true)
		} else {
			cols = len(src) / ((T + 1) * n)
		}
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
