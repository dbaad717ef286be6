package likelihood

import (
	"fmt"
	"os"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Lanes. On XLA's CPU plugin the compiled kernels loop over an array's dimensions and
// vectorize the innermost, the trial axis of the looped form's [rows, trials] arrays: with 50
// trials a row that loop runs six vectors of 8 float64 and a remainder, and each row
// re-enters it (and re-broadcasts the row's θ). Under LinearizeData a trial's computation
// involves no other trial, so EvalRows there runs a call's trials as lanes instead: every
// trial is a row of its own with its row's θ (as the Go backend's flat chunks, flat.go), and
// a chunk of such single-trial rows, a multiple of LaneWidth of them, is evaluated as
// [rows / LaneWidth, LaneWidth] arrays whose θ has a copy per lane and whose result is each
// lane's log-likelihood and gradient (flowInputs.perTrajectory), summed per row in trial
// order here. One evaluation at the pendulum's default θ, 250 trajectories of 50 steps on one
// core (2026-11-29): 18.8–20.1 µs a trajectory as 5 rows × 50 trials, 13.0–14.2 as 4 × 64
// lanes, 14.1–16.2 as 8 × 32, 16.9–20.7 as 16 × 16; navigation 61–67, 47–49, 50–53, 53–55.
//
// The lane width is fixed, never the chunk's: XLA compiles the inner loop for the length it
// is given, and a trial's last bits differ between kernels compiled for different lengths
// (a chunk of 11 single-trial rows against one of 250: the gradient's last digit), while the
// outer dimension, like the rows of the usual layout, leaves them alone. So a trial gets the
// same bits whatever else shares its chunk and whatever chunk size the planner chose
// (TestLanesBitsIndependentOfChunk), and a subject's fit in a queue equals its fit alone.

// EnvLanes is the environment variable that turns lanes off ("off"), for measurements, or on
// ("on") where they are not the default: on an accelerator (not measured on one yet).
const EnvLanes = "NIOC_LANES"

// LaneWidth is the inner dimension of a lanes chunk: trajectories per array row.
const LaneWidth = 64

// lanes reports whether EvalRows runs its trials as lanes: the looped form under
// LinearizeData with reverse-mode gradients, on XLA's CPU plugin unless NIOC_LANES=off, and
// on an accelerator with NIOC_LANES=on.
func (e *Evaluator) lanes() bool {
	if !lanesPossible(e.opts) || !e.looped() {
		return false
	}
	switch os.Getenv(EnvLanes) {
	case "off":
		return false
	case "on":
		return true
	}
	return graph.CompilesSlowly(e.backend) && runsOnHost(e.backend)
}

// lanesPossible reports whether a likelihood with options o (resolved: Options.withDefaults)
// can run its trials as lanes: linearized at the data (no trial shares another's nominal),
// with reverse-mode gradients.
func lanesPossible(o Options) bool { return o.Linearize == LinearizeData && !o.ForwardGradient }

// TrialsAsLanes reports whether a likelihood of task spec with options opts runs its trials as
// lanes on XLA's CPU plugin (Evaluator.lanes), before any Evaluator is made: linearized at the
// data, in the looped form, with reverse-mode gradients, unless NIOC_LANES=off. Where it does
// not, its rows' last bits depend on where in their chunks they sit unless the plugin opened
// after graph.ExactRowsOnCPU, which a command asks for before it opens the XLA backend for
// such a likelihood, so that a subject gets the same numbers fitted alone and beside others.
func TrialsAsLanes(spec models.Spec, opts Options) bool {
	if opts.Linearize == "" {
		opts.Linearize = TaskLinearization(spec)
	}
	return lanesPossible(opts) && opts.Form != FormUnrolled && os.Getenv(EnvLanes) != "off"
}

// evalLanes is EvalRows in lanes: each trial of rows becomes a row of its own (a subslice of
// its row, so that Batching.Keep knows it from call to call) with its row's θ, EvalRows runs
// those in chunks of a multiple of LaneWidth (plan), prepareChunk packs each as lanes, and
// the trials' log-likelihoods and gradients are summed per row in trial order.
func (e *Evaluator) evalLanes(rows [][][][]float64, theta [][]float64, b Batching) ([]float64, [][]float64, error) {
	var single [][][][]float64
	var thetas [][]float64
	var owner []int
	trials := b.Trials
	for r, row := range rows {
		switch {
		case len(row) == 0:
			return nil, nil, fmt.Errorf("row %d has no trials", r)
		case b.Trials > 0 && len(row) > b.Trials:
			return nil, nil, fmt.Errorf("row %d has %d trials, more than %d", r, len(row), b.Trials)
		}
		trials = max(trials, len(row))
		for j := range row {
			single = append(single, row[j:j+1])
			thetas = append(thetas, theta[r])
			owner = append(owner, r)
		}
	}
	lb := Batching{Trials: 1, MaxBatch: b.MaxBatch, Most: b.Most * trials, Keep: b.Keep, lanes: true}
	l, g, err := e.EvalRows(single, thetas, lb)
	if err != nil {
		// An error about a chunk's row i names a trial: say which row's, as Prepare does.
		if _, perr := e.prepare(rows, b.Trials, 0); perr != nil {
			return nil, nil, perr
		}
		return nil, nil, err
	}
	ll := make([]float64, len(rows))
	grad := make([][]float64, len(rows))
	if !e.opts.ValueOnly {
		for r := range grad {
			grad[r] = make([]float64, len(e.spec.Params))
		}
	}
	for i, r := range owner {
		ll[r] += l[i]
		if !e.opts.ValueOnly {
			for j, x := range g[i] {
				grad[r][j] += x
			}
		}
	}
	return ll, grad, nil
}

// laneScores is TrialScores in lanes: each trial's log-likelihood and gradient, as a fit's
// evaluations computed them, in the lanes chunks the fit compiled (a call of a subject's
// trials plans a small chunk, and EvalRows pads it into a larger one already built: chunkPlanner).
func (e *Evaluator) laneScores(trials [][][]float64, theta []float64) ([]float64, [][]float64, error) {
	rows := make([][][][]float64, len(trials))
	thetas := make([][]float64, len(trials))
	for r := range trials {
		rows[r], thetas[r] = trials[r:r+1], theta
	}
	return e.EvalRows(rows, thetas, Batching{Trials: 1, Most: len(trials), lanes: true})
}

// laneChunk returns c rounded up to a multiple of LaneWidth.
func laneChunk(c int) int { return (c + LaneWidth - 1) / LaneWidth * LaneWidth }

// packLanes relabels d, a chunk of single-trial rows (a multiple of LaneWidth of them), as
// rows of LaneWidth lanes: [T+1][n][P][1] and [P][N] arrays are [T+1][n][P/W][W] and
// [P/W][W] in memory, so only the shape changes. Eval then takes a θ per lane and returns
// each lane's log-likelihood and gradient.
func packLanes(d *Data) {
	d.Rows, d.Trials, d.lanes = d.Rows/LaneWidth, LaneWidth, true
}
