package control

import (
	"fmt"
	"sync"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// The simulation's programs: the unrolled graph's, kept across calls, and the looped form's
// engines, chunks and preparation on backends that compile (XLA).

// simPrograms keeps the unrolled simulation's programs across calls, one per backend, task (its
// symbolic form), horizon, observation mode, temperature and delay (what buildSimulation
// depends on; each program compiles once per batch shape): a fit's bootstrap simulates five
// agents and its check one at every subject's estimate, mostly in the same shapes.
var simPrograms sync.Map

// simProgram returns the unrolled simulation's program of T steps for s and opts on b.
func simProgram(b backends.Backend, s *models.Symbolic, T int, opts SimOptions) *graph.Program {
	key := fmt.Sprintf("%p|%p|%d|%s|%g|%d", b, s, T, opts.Observe, opts.Temperature, opts.Delay)
	if p, ok := simPrograms.Load(key); ok {
		return p.(*graph.Program)
	}
	build := SimOptions{Observe: opts.Observe, Temperature: opts.Temperature, Delay: opts.Delay} // the key's, nothing of this call's
	p, _ := simPrograms.LoadOrStore(key, graph.NewProgram(b, "simulate", func(g *G.Graph, in []*G.Node) []*G.Node {
		return buildSimulation(g, s, in, T, build)
	}))
	return p.(*graph.Program)
}

// simEngines keeps the compiled programs of the looped simulation across calls, one engine per
// backend, task (its symbolic form: a task file and a built-in task of the same name differ),
// observation mode, temperature and delay (what the step function depends on).
var simEngines sync.Map

// simulateLooped is Simulate's run in the looped form; it returns the states [T+1][n][P][M].
func simulateLooped(b backends.Backend, s *models.Symbolic, theta [][]float64, pol *Policy, x0, v, w, xi []float64, M int, opts SimOptions) (X []float64, err error) {
	P, T, n := pol.Problems, pol.Steps, len(s.Spec.States)
	tp := simEngine(b, s, opts).NewTape(false)
	defer tp.Release()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("simulate: %v", r)
		}
	}()
	flow := loopedSimulation(s, theta, pol, x0, v, w, xi, M, opts)
	if err := tp.Precompile(simKey(P, T, M), func(dry *graph.Tape) { flow(dry) }); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	xs := flow(tp)
	X = make([]float64, (T+1)*n*P*M)
	copy(X, x0)
	for t, x := range xs {
		copy(X[(t+1)*n*P*M:], tp.Fetch(x))
	}
	return X, nil
}

// simEngine returns the engine that keeps the looped simulation's programs for b, s and opts
// (simEngines).
func simEngine(b backends.Backend, s *models.Symbolic, opts SimOptions) *graph.Engine {
	key := fmt.Sprintf("%p|%p|%s|%g|%d", b, s, opts.Observe, opts.Temperature, opts.Delay)
	eng, _ := simEngines.LoadOrStore(key, newWhileEngine(b))
	return eng.(*graph.Engine)
}

// simKey names the programs of a looped simulation of P problems, T steps and M trials a
// problem on its engine (graph.Tape.Precompile).
func simKey(P, T, M int) string { return fmt.Sprintf("P%d T%d M%d", P, T, M) }

// loopedSimulation returns the looped simulation's flow over its inputs (simulateLooped's).
func loopedSimulation(s *models.Symbolic, theta [][]float64, pol *Policy, x0, v, w, xi []float64, M int, opts SimOptions) func(tp *graph.Tape) []*graph.Value {
	spec := s.Spec
	P, T := pol.Problems, pol.Steps
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	return func(tp *graph.Tape) []*graph.Value {
		one, trials := []int{P, 1}, []int{P, M}
		gains := make([]*graph.Value, T)
		for t := range T {
			g := append(append(append([]float64{}, pol.Gain[t*k*n*P:(t+1)*k*n*P]...), pol.Offset[t*k*P:(t+1)*k*P]...), pol.Hessian[t*k*k*P:(t+1)*k*k*P]...)
			gains[t] = tp.Input(g, k*n+k+k*k, one, false)
		}
		xbar, ubar := tp.Series(pol.Xbar, T+1, n, one, false), tp.Series(pol.Ubar, T, k, one, false)
		vs, ws, xis := tp.Series(v, T, nv, trials, false), tp.Series(w, T, nw, trials, false), tp.Series(xi, T, k, trials, false)
		return simulationFlow(tp, s, tp.Input(transpose(theta), len(spec.Params), []int{P, 1}, false), tp.Input(x0, n, trials, false), xbar, ubar, gains, vs, ws, xis, opts)
	}
}

// PrepareSimulation compiles, on a backend whose programs compile (XLA), the programs with
// which Simulate will simulate P problems of T steps and M trials a problem with opts (or
// loads them from XLA's program cache), without simulating; elsewhere it does nothing. Run
// beside the agent's planning, it takes the simulation's compile off the planner's path: the
// planner's and the simulator's programs are otherwise compiled one after the other as each is
// first reached (a cold pendulum fit's bootstrap: docs/backends.md, "The simulator prepared
// beside the planner"). It returns the first compile error.
func PrepareSimulation(m models.Model, b backends.Backend, P, T, M int, opts SimOptions) error {
	if !graph.CompilesSlowly(b) || P < 1 || T < 1 || M < 1 {
		return nil
	}
	return prepareSimulation(m, b, P, T, SimChunk(b, M), opts)
}

// PrepareProblemSimulation is PrepareSimulation for a simulation of one trial for each of P
// problems (SimOptions.PerProblem), which runs its problems in chunks (SimChunk).
func PrepareProblemSimulation(m models.Model, b backends.Backend, P, T int, opts SimOptions) error {
	if !graph.CompilesSlowly(b) || P < 1 || T < 1 {
		return nil
	}
	return prepareSimulation(m, b, SimChunk(b, P), T, 1, opts)
}

// prepareSimulation compiles the looped simulation's programs of P problems, T steps and c
// trials a problem on b (PrepareSimulation).
func prepareSimulation(m models.Model, b backends.Backend, P, T, c int, opts SimOptions) (err error) {
	s, err := models.Derive(m)
	if err != nil {
		return err
	}
	if opts.Observe == "" {
		opts.Observe = ObservePartial
	}
	if opts.Temperature == 0 {
		opts.Temperature = 1 // as Simulate runs a noise-free agent
	}
	spec := s.Spec
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	pol := zeroPolicy(P, T, n, k)
	theta := make([][]float64, P)
	for p := range theta {
		theta[p] = make([]float64, len(spec.Params))
	}
	flow := loopedSimulation(s, theta, pol, make([]float64, n*P*c), make([]float64, T*nv*P*c), make([]float64, T*nw*P*c), make([]float64, T*k*P*c), c, opts)
	tp := simEngine(b, s, opts).NewTape(false)
	defer tp.Release()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("preparing the simulation: %v", r)
		}
	}()
	return tp.Precompile(simKey(P, T, c), func(dry *graph.Tape) { flow(dry) })
}

// SimChunk returns the number of trials one compiled simulation runs on a backend that
// compiles (XLA) for a call of M trials: on an accelerator 1,024 (a call costs its latency, a
// shape a compile of seconds); where XLA runs on the host 256 (its CPU runtime is fastest at
// a few hundred rows), or 16 for a call of at most 16 trials (a fit's simulations of a length
// few trials have), which would otherwise pad many times over. A call's trials run in chunks
// of this size, the last padded, so that the simulations of a fit (its bootstrap's draws × a
// subject's trials, its check's, every subject's number of trials) share one or two programs
// instead of compiling one each. A simulation of a trial per problem (SimOptions.PerProblem:
// trials that replan, trials of many lengths under one padded plan) runs its M problems in
// chunks of this size instead. It panics if M < 1.
func SimChunk(b backends.Backend, M int) int {
	if M < 1 {
		panic(fmt.Sprintf("control: SimChunk of %d trials", M))
	}
	switch {
	case !graph.RunsOnHost(b):
		return 1024
	case M <= 16:
		return 16
	}
	return 256
}

// simulateInChunks is simulateLooped over the M trials in chunks of c trials, the last
// padded with copies of its first trial (whose states are computed and dropped); it returns
// the states [T+1][n][P][M]. Each trial's states are those simulateLooped computes for all M
// at once, up to the last bits that XLA's code for another shape may round otherwise.
func simulateInChunks(c int, b backends.Backend, s *models.Symbolic, theta [][]float64, pol *Policy, x0, v, w, xi []float64, M int, opts SimOptions) ([]float64, error) {
	if M == c {
		return simulateLooped(b, s, theta, pol, x0, v, w, xi, M, opts)
	}
	spec := s.Spec
	P, T := pol.Problems, pol.Steps
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	X := make([]float64, (T+1)*n*P*M)
	for lo := 0; lo < M; lo += c {
		hi := min(lo+c, M)
		// pick returns a's trials lo…hi−1 of each of its outer×P rows, padded to c.
		pick := func(a []float64, outer int) []float64 {
			out := make([]float64, outer*P*c)
			for o := range outer * P {
				for r := range c {
					src := lo + r
					if src >= hi {
						src = lo
					}
					out[o*c+r] = a[o*M+src]
				}
			}
			return out
		}
		Xc, err := simulateLooped(b, s, theta, pol, pick(x0, n), pick(v, T*nv), pick(w, T*nw), pick(xi, T*k), c, opts)
		if err != nil {
			return nil, err
		}
		for o := range (T + 1) * n * P {
			copy(X[o*M+lo:o*M+hi], Xc[o*c:o*c+hi-lo])
		}
	}
	return X, nil
}

// simulateProblemChunks is simulateLooped of a simulation of one trial per problem
// (SimOptions.PerProblem) over its problems in chunks of c, the last padded with copies of its
// first problem (whose states are computed and dropped); it returns the states [T+1][n][P][1].
// The chunks' shape is the same whatever the number of problems (a fit's trials × parameter
// vectors, a population's trials), where a call of them all would compile a program for each
// count. Each problem's states are those simulateLooped computes for all P at once, up to the
// last bits that XLA's code for another shape may round otherwise.
func simulateProblemChunks(c int, b backends.Backend, s *models.Symbolic, theta [][]float64, pol *Policy, x0, v, w, xi []float64, opts SimOptions) ([]float64, error) {
	P, T := pol.Problems, pol.Steps
	if P == c {
		return simulateLooped(b, s, theta, pol, x0, v, w, xi, 1, opts)
	}
	spec := s.Spec
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	X := make([]float64, (T+1)*n*P)
	idx := make([]int, c)
	th := make([][]float64, c)
	for lo := 0; lo < P; lo += c {
		hi := min(lo+c, P)
		for r := range idx {
			idx[r] = lo + r
			if idx[r] >= hi {
				idx[r] = lo
			}
			th[r] = theta[idx[r]]
		}
		// pick returns a's problems idx of each of its outer rows.
		pick := func(a []float64, outer int) []float64 {
			out := make([]float64, outer*c)
			for o := range outer {
				for r, p := range idx {
					out[o*c+r] = a[o*P+p]
				}
			}
			return out
		}
		Xc, err := simulateLooped(b, s, th, pol.Subset(idx), pick(x0, n), pick(v, T*nv), pick(w, T*nw), pick(xi, T*k), 1, opts)
		if err != nil {
			return nil, err
		}
		for o := range (T + 1) * n {
			copy(X[o*P+lo:o*P+hi], Xc[o*c:o*c+hi-lo])
		}
	}
	return X, nil
}

// newWhileEngine returns an Engine for b whose recursions run as while loops where b builds
// StableHLO (graph.Engine.SetWhileLoops): one call a simulation on XLA.
func newWhileEngine(b backends.Backend) *graph.Engine {
	e := graph.NewEngine(b)
	e.SetWhileLoops(true)
	return e
}
