package likelihood

import (
	"fmt"

	"github.com/nioc-gpu/nioc-gpu/models"
)

// Data is a batch of trial sets prepared for evaluation: row p holds the trials that parameter
// vector p is to explain (for fitting, one subject's trials, repeated for each restart).
//
// Trials may have different lengths (at least 2 states each). The likelihood of a trial is
// computed over its own steps, and the agent plans over the trial's own length or, for a task
// whose Spec.Horizon is models.HorizonTask, over the task's Steps (see models.Horizon). All
// trials of a batch are evaluated together over Steps steps: a shorter trial is padded with
// its last state, its steps beyond its end add nothing and leave the tracked belief alone,
// and with HorizonTrial the agent's backward pass restarts from the final cost at the trial's
// end.
type Data struct {
	// Rows, Trials, Steps are P, N (the most trials of any row) and T, the steps evaluated:
	// the longest trial's or, with HorizonTask, the task's.
	Rows, Trials, Steps int
	states              []float64 // [T+1][n][P][N], shorter trials padded with their last state
	// mask [P][N]: 1 for a real trial, 0 for padding; −1 (TrialScores only) for a trial
	// whose log-likelihood is not counted but which sets the row's LinearizeMean nominal.
	mask    []float64
	initial [][]float64
	// Trials of their own length; all nil when every trial has Steps steps.
	running []float64    // [T][P][N]: 1 where step t (t → t+1) of the trial is observed
	ends    []float64    // [T][P][N]: 1 where the trial ends after step t (HorizonTrial)
	nominal []float64    // LinearizeMean: [T+1][n][P][N or 1], see meanNominal
	kept    *dataTensors // non-nil for a chunk EvalRows keeps (Batching.Keep): its uploaded inputs
	// dev holds the looped form's inputs of a chunk whose states were gathered on the device
	// from its distinct rows (prepareChunk); states is then nil.
	dev *dataTensors
	// lanes: every trial is a row of its own (packLanes): Eval takes a θ per trial and
	// returns each trial's log-likelihood and gradient.
	lanes bool
}

// Varying reports whether d has trials shorter than Steps.
func (d *Data) Varying() bool { return d.running != nil }

// Prepare packs rows of trials (rows[p][trial][t][state]) for Eval. Rows may have different
// numbers of trials: shorter rows are padded, up to trials (0 means the longest row), with
// copies of their own first trial that are masked out, so padding never contributes. Trials
// need at least 2 states and the task's state dimension, and may differ in length (see Data);
// with HorizonTask none may be longer than the task's Steps. Keeping the shapes of Data
// fixed (same number of rows, trials and steps) reuses the compiled graph.
func (e *Evaluator) Prepare(rows [][][][]float64, trials int) (*Data, error) {
	return e.prepare(rows, trials, 0)
}

// prepare is Prepare with trials padded to at least steps steps (with HorizonTrial; 0 means
// the longest trial's).
func (e *Evaluator) prepare(rows [][][][]float64, trials, steps int) (*Data, error) {
	spec := e.sym.Spec
	n := len(spec.States)
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows to evaluate")
	}
	N, longest := trials, 0
	for p, row := range rows {
		if trials > 0 && len(row) > trials {
			return nil, fmt.Errorf("row %d has %d trials, more than %d", p, len(row), trials)
		}
		if len(row) == 0 {
			return nil, fmt.Errorf("row %d has no trials", p)
		}
		N = max(N, len(row))
		for r, tr := range row {
			if len(tr) < 2 {
				return nil, fmt.Errorf("row %d trial %d has %d state(s); trajectories need at least 2 states", p, r, len(tr))
			}
			longest = max(longest, len(tr)-1)
			for t, x := range tr {
				if len(x) != n {
					return nil, fmt.Errorf("row %d trial %d t=%d has %d state values, task %s has %d", p, r, t, len(x), spec.Name, n)
				}
			}
		}
	}
	T, task := max(longest, steps), spec.PlanningHorizon() == models.HorizonTask
	if task {
		if longest > spec.Steps {
			for p, row := range rows {
				for r, tr := range row {
					if len(tr)-1 > spec.Steps {
						return nil, fmt.Errorf("row %d trial %d has %d steps, more than the %d steps the agent of task %s plans over (its horizon is the task's)", p, r, len(tr)-1, spec.Steps, spec.Name)
					}
				}
			}
		}
		T = spec.Steps
	}
	P := len(rows)
	d := &Data{Rows: P, Trials: N, Steps: T, states: make([]float64, (T+1)*n*P*N), mask: make([]float64, P*N), initial: make([][]float64, P)}
	lengths := make([]int, P*N)
	varying := false
	srcs := make([][][]float64, N) // row p's trial of each column
	for p, row := range rows {
		d.initial[p] = meanInitial(row)
		for r := range N {
			src := row[0]
			if r < len(row) {
				src = row[r]
				d.mask[p*N+r] = 1
			}
			srcs[r] = src
			lengths[p*N+r] = len(src) - 1
			varying = varying || len(src)-1 != T
		}
		// The row's states are (T+1)·n runs of N values, one for each (t, i); a row that
		// repeats the one before it (a subject's restarts, side by side) copies its runs.
		same := p > 0 && len(row) == len(rows[p-1]) && &row[0] == &rows[p-1][0]
		for t := range T + 1 {
			for i := range n {
				dst := d.states[((t*n+i)*P+p)*N:][:N]
				if same {
					copy(dst, d.states[((t*n+i)*P+p-1)*N:][:N])
					continue
				}
				for r, src := range srcs {
					dst[r] = src[min(t, len(src)-1)][i] // padded with the last state
				}
			}
		}
	}
	if !varying {
		return d, nil
	}
	if !task && e.opts.Linearize == LinearizeILQG {
		return nil, fmt.Errorf("linearize %s: trials of different lengths (%d to %d steps) would need one iLQG solution per length, as the agent of task %s plans over each trial's own length; use linearize %s or %s",
			LinearizeILQG, minLength(lengths), longest, spec.Name, LinearizeData, LinearizeMean)
	}
	d.running = make([]float64, T*P*N)
	if !task {
		d.ends = make([]float64, T*P*N)
	}
	for j, L := range lengths {
		for t := range L {
			d.running[t*P*N+j] = 1
		}
		if d.ends != nil {
			d.ends[(L-1)*P*N+j] = 1
		}
	}
	if e.opts.Linearize == LinearizeMean {
		d.nominal = d.meanNominal(n, lengths, task)
	}
	return d, nil
}

// meanNominal returns the trajectories LinearizeMean linearizes around when trials differ in
// length. With HorizonTrial each trial's plan is its own, and trials of the same length share
// one: a trial's nominal is the mean of its row's trials of its length ([T+1][n][P][N]).
// With HorizonTask all trials of a row share the plan: the nominal at t is the mean of the
// trials still observed at t or, after every one has ended, of the longest ones' last states
// ([T+1][n][P][1]).
func (d *Data) meanNominal(n int, lengths []int, task bool) []float64 {
	P, N, T := d.Rows, d.Trials, d.Steps
	cols := N
	if task {
		cols = 1
	}
	out := make([]float64, (T+1)*n*P*cols)
	for p := range P {
		longest := 0
		for r := range N {
			if d.mask[p*N+r] > 0 {
				longest = max(longest, lengths[p*N+r])
			}
		}
		// mean returns the mean state at t of the row's real trials whose length L is in.
		mean := func(t int, in func(L int) bool) []float64 {
			var count float64
			sum := make([]float64, n)
			for r := range N {
				if d.mask[p*N+r] == 0 || !in(lengths[p*N+r]) {
					continue
				}
				count++
				for i := range n {
					sum[i] += d.states[((t*n+i)*P+p)*N+r]
				}
			}
			for i := range sum {
				sum[i] /= count
			}
			return sum
		}
		for t := range T + 1 {
			if task {
				m := mean(t, func(L int) bool { return t <= L || L == longest })
				for i := range n {
					out[(t*n+i)*P+p] = m[i]
				}
				continue
			}
			byLength := map[int][]float64{}
			for c := range N {
				L := lengths[p*N+c]
				m, ok := byLength[L]
				if !ok {
					m = mean(t, func(l int) bool { return l == L })
					byLength[L] = m
				}
				for i := range n {
					out[((t*n+i)*P+p)*N+c] = m[i]
				}
			}
		}
	}
	return out
}

func minLength(lengths []int) int {
	m := lengths[0]
	for _, L := range lengths {
		m = min(m, L)
	}
	return m
}

// meanInitial returns the mean initial state of trials, from which LinearizeILQG's nominal
// starts, as the first trial's plus the mean deviation from it: exactly the common initial
// state when the trials share one. (A plain mean of 500 copies of π is π + 3e-14, and from that
// side of its unstable equilibrium the pendulum's iLQG swings up the other way than from π:
// the nominal then mirrors the data and the likelihood collapses.)
func meanInitial(trials [][][]float64) []float64 {
	starts := make([][]float64, len(trials))
	for j, tr := range trials {
		starts[j] = tr[0]
	}
	return meanStart(starts)
}

// meanStart is meanInitial of trials whose initial states are starts.
func meanStart(starts [][]float64) []float64 {
	first := starts[0]
	out := make([]float64, len(first))
	for i := range out {
		dev := 0.0
		for _, x := range starts {
			dev += x[i] - first[i]
		}
		out[i] = first[i] + dev/float64(len(starts))
	}
	return out
}

// sumTrials sums per-trial log-likelihoods ll [P][N] and gradients grad [p][P][N] (nil for
// none) over each row's real trials, in trial order, into [P] and [p][P]: the order in which
// EvalRows' flat chunks sum them, so that both give the same bits.
func (d *Data) sumTrials(ll, grad []float64) (rows, rowGrad []float64) {
	P, N := d.Rows, d.Trials
	rows = make([]float64, P)
	for r := range P {
		for j := range N {
			if d.mask[r*N+j] > 0 {
				rows[r] += ll[r*N+j]
			}
		}
	}
	if grad == nil {
		return rows, nil
	}
	p := len(grad) / (P * N)
	rowGrad = make([]float64, p*P)
	for i := range p {
		for r := range P {
			for j := range N {
				if d.mask[r*N+j] > 0 {
					rowGrad[i*P+r] += grad[(i*P+r)*N+j]
				}
			}
		}
	}
	return rows, rowGrad
}
