package likelihood

import (
	"os"
	"sync"

	"github.com/nioc-gpu/nioc-gpu/models"
)

// Flat chunks: with LinearizeData the trials of a row are independent given its θ (each is
// linearized at its own data), so a row's log-likelihood and gradient are the sums of its
// trials'.
// EvalRows can then run a call as chunks of single-trial rows (θ repeated for each
// trial) in the graph of TrialScores, which a fit on the Go backend builds beside its first:
// once few restarts are left, trials spread over every core in that smaller graph take less
// time than the rows padded into the restarts' graph on one core (cart-pole: a chunk of 5
// rows of 50 trials takes 115 ms, a flat chunk of 50 trials 33 ms; docs/speed.md). Padding
// trials (a row's trials beyond its own) are skipped, not evaluated.
//
// Which calls run flat depends only on the call's rows and the declared graph (FlatChunks),
// never on measured times, and a row gets the same bits either way (the unrolled graph gives
// each trial's values, summed in trial order: Evaluator.perTrajectory), so a fit gives the
// same bits whenever it runs and whatever other rows share its calls (other subjects').
//
// Not under LinearizeMean: there a row's nominal, its control law and the stages before the
// tracking run once per row, so a single-trial row computes them again, and a row's values
// in flat chunks differ from the row evaluated whole in their last bits (the gradient's sums
// run in another order). Which calls run flat depends on the chunk size, which the Go
// backend chooses by measured times, and on the other subjects' rows in a call, so a fit's
// evaluations, and with them its estimates, changed from run to run and from a fit of the
// subject alone (cart-pole linearized at the mean: 475 and 453 evaluations in two runs), for
// no speed (2026-11-27, reaching's default fit: one subject 3.0–3.2 s either way, 12
// subjects 33.0–33.9 s with them and 31.6 s without, 61–63 against 41–42 CPU-seconds).

// EnvFlat is the environment variable that turns flat chunks off ("off"), for measurements.
const EnvFlat = "NIOC_FLAT"

// flatGraph is the graph declared by FlatChunks: F single-trial rows over Steps steps, with
// the explicit per-step inputs of trials of their own length or without.
type flatGraph struct {
	F, Steps int
	explicit bool
}

type flatGraphs struct {
	mu     sync.Mutex
	graphs []flatGraph
}

// flatElementCost is the fixed cost of one tape instruction in units of the cost of one of
// its elements: a chunk of n trajectories costs about (flatElementCost + n) per instruction
// (cart-pole on 2 cores: 33 ms for 50 trajectories, 115 ms for 250, on graphs of the same
// size). It is a constant, not a measurement, so that the choice is reproducible.
const flatElementCost = 30

// FlatChunks declares that TrialScores will run, or has run, on trials (one subject's), so that
// EvalRows may run calls in that graph's flat chunks where they take less time (see
// flatPays). A call that arrives while the graph is still being built waits for it. It
// applies with LinearizeData on the Go backend's unrolled form, and does nothing otherwise.
func (e *Evaluator) FlatChunks(trials [][][]float64) error {
	if !e.flattens() || e.opts.ValueOnly || e.looped() {
		return nil
	}
	rows := make([][][][]float64, len(trials))
	for r, tr := range trials {
		rows[r] = [][][]float64{tr}
	}
	d, err := e.prepare(rows, 1, 0)
	if err != nil {
		return err
	}
	g := flatGraph{F: len(trials), Steps: d.Steps, explicit: d.running != nil}
	e.flat.mu.Lock()
	defer e.flat.mu.Unlock()
	for _, h := range e.flat.graphs {
		if h == g {
			return nil
		}
	}
	e.flat.graphs = append(e.flat.graphs, g)
	return nil
}

// flattens reports whether the evaluator's rows may run as flat chunks: under LinearizeData
// alone (the other linearizations share a row's nominal among its trials).
func (e *Evaluator) flattens() bool { return e.opts.Linearize == LinearizeData }

// flatChunks prepares the trials of rows as chunks of g.F single-trial rows over g.Steps
// steps, the last padded with copies of the last trial; owner[c][i] is the row of chunk c's
// row i (−1 for padding). It reports false where the chunks' graph would not be g's.
func (e *Evaluator) flatChunks(rows [][][][]float64, theta [][]float64, g flatGraph) (ds []*Data, thetas [][][]float64, owner [][]int, ok bool) {
	type traj struct {
		row int // the trial's row
		tr  [][]float64
	}
	var all []traj
	for r, row := range rows {
		for _, tr := range row {
			all = append(all, traj{r, tr})
		}
	}
	trialHorizon := e.sym.Spec.PlanningHorizon() == models.HorizonTrial
	for start := 0; start < len(all); start += g.F {
		chunk := make([][][][]float64, g.F)
		th := make([][]float64, g.F)
		own := make([]int, g.F)
		for i := range g.F {
			k := start + i
			own[i] = -1
			if k < len(all) {
				own[i] = all[k].row
			}
			k = min(k, len(all)-1)
			chunk[i], th[i] = [][][]float64{all[k].tr}, theta[all[k].row]
		}
		d, err := e.prepare(chunk, 1, g.Steps)
		if err != nil || d.Steps != g.Steps || (d.running != nil && !g.explicit) {
			return nil, nil, nil, false
		}
		if g.explicit && d.running == nil {
			d.forceExplicit(trialHorizon)
		}
		ds, thetas, owner = append(ds, d), append(thetas, th), append(owner, own)
	}
	return ds, thetas, owner, true
}

// flatPays reports whether the call's trials, run as flat chunks of F trajectories over
// workers cores, take less time than its n chunks of chunk rows of trials trajectories (see
// flatElementCost).
func flatPays(rows [][][][]float64, chunk, n, trials, F, workers int) bool {
	M := 0
	for _, row := range rows {
		M += len(row)
	}
	flatRounds := ((M+F-1)/F + workers - 1) / workers
	rounds := (n + workers - 1) / workers
	return flatRounds*(flatElementCost+F) < rounds*(flatElementCost+chunk*trials)
}

// evalFlat is EvalRows in flat chunks (see flatChunks), run concurrently on workers cores; it
// reports false, having run nothing, where no declared graph applies to the call or none pays.
func (e *Evaluator) evalFlat(rows [][][][]float64, theta [][]float64, chunk, n, trials, steps, workers int) (ll []float64, grad [][]float64, ok bool, err error) {
	if os.Getenv(EnvFlat) == "off" {
		return nil, nil, false, nil
	}
	e.flat.mu.Lock()
	graphs := append([]flatGraph(nil), e.flat.graphs...)
	e.flat.mu.Unlock()
	for _, g := range graphs {
		if g.Steps < steps || !flatPays(rows, chunk, n, trials, g.F, workers) {
			continue
		}
		ds, thetas, owner, fits := e.flatChunks(rows, theta, g)
		if !fits {
			continue
		}
		ll, grad, err = e.runFlat(ds, thetas, owner, len(rows), workers)
		return ll, grad, true, err
	}
	return nil, nil, false, nil
}

func (e *Evaluator) runFlat(ds []*Data, thetas [][][]float64, owner [][]int, nrows, workers int) ([]float64, [][]float64, error) {
	lls := make([][]float64, len(ds))
	grads := make([][][]float64, len(ds))
	errs := make([]error, len(ds))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for c := range ds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			lls[c], grads[c], errs[c] = e.Eval(ds[c], thetas[c])
		})
	}
	wg.Wait()
	ll := make([]float64, nrows)
	grad := make([][]float64, nrows)
	for r := range grad {
		grad[r] = make([]float64, len(e.spec.Params))
	}
	for c := range ds {
		if errs[c] != nil {
			return nil, nil, errs[c]
		}
		for i, r := range owner[c] {
			if r < 0 {
				continue
			}
			ll[r] += lls[c][i]
			for j, g := range grads[c][i] {
				grad[r][j] += g
			}
		}
	}
	return ll, grad, nil
}
