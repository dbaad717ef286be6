package likelihood

import (
	"fmt"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Form selects how the recursions over time are run (see graph.Flow).
type Form string

const (
	// FormAuto is FormLooped on backends that compile slowly (XLA), FormUnrolled otherwise.
	FormAuto Form = ""
	// FormUnrolled builds one graph with every time step in it, differentiated by GoMLX.
	FormUnrolled Form = "unrolled"
	// FormLooped compiles each stage and each recursion's step once and runs the steps from Go,
	// with reverse mode over the recorded steps for the gradient.
	FormLooped Form = "looped"
)

// Forms lists the valid Form values (FormAuto written "auto").
var Forms = []Form{"auto", FormUnrolled, FormLooped}

// flowInputs are the inputs of the likelihood as Flow values.
type flowInputs struct {
	theta             *graph.Value   // fitting scale: p entries, batch [P, 1]
	X                 []*graph.Value // T+1 states: n entries, batch [P, N]
	mask              *graph.Value   // 1 entry, [P, N]
	Xbar, Ubar, Lprev []*graph.Value // LinearizeILQG: the nominal and its gains, batch [P, 1]
	// Trials of their own length (nil when all have T steps, see Data): per step, 1 entry
	// [P, N] each, whether the step is observed and whether the trial's plan ends after it;
	// for LinearizeMean the T+1 states of each trial's nominal, n entries, [P, N] or [P, 1].
	running, ends, nominal []*graph.Value
	// perTrajectory: the result is the log-likelihood of each trial, 0 for padding, batch
	// [P, N], and θ may have a copy per trial (batch [P, N]); see Evaluator.perTrajectory
	// and, for the looped form, lanes.
	perTrajectory bool
}

// pipeline returns the log-likelihood of each row, summed over its real trials (1 entry,
// batch [P, 1]), from the inputs: controls → linearization → backward pass → filter gains →
// belief tracking, each stage a step map or a recursion of the Flow.
func (e *Evaluator) pipeline(f graph.Flow, in flowInputs) *graph.Value {
	s, o := e.sym, e.opts
	spec := s.Spec
	n := len(spec.States)
	T := len(in.X) - 1
	// θ in natural units: the model's parameters, and with FitTemperature the temperature τ
	// apart (tau), which only the agent's policy noise uses.
	p := len(spec.Params)
	natural := f.Map("theta", func(g [][]graph.S) [][]graph.S {
		out := make([]graph.S, len(g[0]))
		for i, th := range g[0] {
			out[i] = th
			if e.spec.Params[i].Scale == models.Log10Scale {
				out[i] = graph.Pow10(th)
			}
		}
		if o.FitTemperature {
			return [][]graph.S{out[:p], out[p:]}
		}
		return [][]graph.S{out}
	}, in.theta)
	theta := natural[0]
	var tau []*graph.Value // the agent's extra inputs: τ when it is fitted
	if o.FitTemperature {
		tau = natural[1:]
	}
	controls := func(name string, X []*graph.Value) []*graph.Value {
		return f.MapSteps(name, func(g [][]graph.S) [][]graph.S {
			return [][]graph.S{EstimateControl(s, g[2], g[0], g[1], o.GaussNewtonIters)}
		}, [][]*graph.Value{X[:T], X[1:]}, theta)[0]
	}

	var Uhat, Xbar, Ubar []*graph.Value
	if o.Linearize == LinearizeData || o.Method == MCEBaseline {
		Uhat = controls("controls", in.X)
	}
	switch o.Linearize {
	case LinearizeData:
		Xbar, Ubar = in.X, Uhat
	case LinearizeMean:
		Xbar = in.nominal
		if Xbar == nil {
			Xbar = f.MapSteps("mean", func(g [][]graph.S) [][]graph.S {
				return [][]graph.S{maskedMean(g[0], g[1][0])}
			}, [][]*graph.Value{in.X}, in.mask)[0]
		}
		Ubar = controls("mean_controls", Xbar)
	default:
		Xbar, Ubar = in.Xbar, in.Ubar
	}
	var lin *control.Linearized
	if o.Linearize == LinearizeILQG || o.IgnoreGaps { // a rollout has no gaps
		lin = control.LinearizeFlow(f, s, theta, Xbar, Ubar)
	} else {
		lin = control.LinearizeGapsFlow(f, s, theta, Xbar, Ubar)
	}
	lin.Ends = in.ends
	sigma0 := graph.Flatten(graph.ConstMat(spec.InitialBeliefCov()))
	seeFirst := spec.ObservationTiming() == models.SeeThenAct
	kalman := func() []*graph.Value {
		if seeFirst {
			return control.FilterUpdateGainsFlow(f, lin, f.Map("sigma0", constant(sigma0))[0])
		}
		return control.KalmanGainsFlow(f, lin, f.Map("sigma0", constant(sigma0))[0])
	}
	partialAgent := o.Method == Ours && o.Observe == control.ObservePartial
	// Belief tracking's initial carry (the switch's last case below), made here, before the
	// backward pass, so that a looped Flow runs it with the stages before that pass.
	var init *graph.Value
	if o.Method != MCEBaseline && o.Observe != control.ObserveFull {
		init = e.beliefInit(f, in.X[0], sigma0)
	}
	// K are the gains the partially observable planner plans with, and with NominalFilter
	// those of the agent's filter too; else the forward pass tracks the agent's filter.
	var gains, K []*graph.Value
	switch {
	case o.Method == MCEBaseline || o.Planner == models.PlannerFull:
		gains = control.BackwardPassFlow(f, lin, o.Solver.Eps)
		if partialAgent && o.NominalFilter {
			K = kalman()
		}
	case o.Linearize != LinearizeILQG:
		K = kalman()
		gains = control.BackwardPassPartialFlow(f, lin, K, o.Solver.Eps)
	default: // partially observable iLQG around its own solution
		_, K = control.ClosedLoopMomentsFlow(f, lin, in.Lprev, control.MomentsInit(f, s))
		gains = control.BackwardPassPartialFlow(f, lin, K, o.Solver.Eps)
	}

	agent := func(tau [][]graph.S, g []graph.S, xbar, ubar []graph.S, k []graph.S) *Agent {
		a := &Agent{Xbar: xbar, Ubar: ubar, Temperature: e.temperature(tau), FirstOrderNoise: o.FirstOrderNoise, RawAngles: o.RawAngles}
		a.L, a.l, a.H = control.StepGains(s, g)
		if k != nil {
			a.K = control.StepKalman(s, k)
		}
		return a
	}
	var perStep []*graph.Value
	at := 0 // the entry of each perStep value that holds its log-likelihood
	switch {
	case o.Method == MCEBaseline:
		seqs := [][]*graph.Value{in.X[:T], Uhat, gains, Xbar[:T]}
		if o.Linearize != LinearizeData { // else the linearization's controls are Uhat
			seqs = append(seqs, Ubar)
		}
		nseq := len(seqs)
		if in.running != nil {
			seqs = append(seqs, in.running)
		}
		perStep = f.MapSteps("baseline", func(g [][]graph.S) [][]graph.S {
			ubar := g[1]
			if nseq > 4 {
				ubar = g[4]
			}
			ll := Baseline(g[1], g[0], agent(g[len(seqs):], g[2], g[3], ubar, nil))
			if len(seqs) > nseq {
				ll = observed(g[nseq][0], ll)
			}
			return [][]graph.S{{ll}}
		}, seqs, tau...)[0]
	case o.Observe == control.ObserveFull:
		seqs := [][]*graph.Value{in.X[:T], in.X[1:], gains, Xbar[:T], Ubar}
		if in.running != nil {
			seqs = append(seqs, in.running)
		}
		nseq := len(seqs)
		perStep = f.MapSteps("full", func(g [][]graph.S) [][]graph.S {
			ll := FullyObservable(s, g[nseq], g[0], g[1], agent(g[nseq+1:], g[2], g[3], g[4], nil), o.Jitter)
			if nseq > 5 {
				ll = observed(g[5][0], ll)
			}
			return [][]graph.S{{ll}}
		}, seqs, append([]*graph.Value{theta}, tau...)...)[0]
	default:
		tracked := !o.NominalFilter
		seqs := [][]*graph.Value{in.X[:T], in.X[1:], gains, Xbar[:T], Ubar}
		if !tracked {
			seqs = append(seqs, K)
		}
		nseq := len(seqs)
		if in.running != nil {
			seqs = append(seqs, in.running)
		}
		final, _ := f.Scan("tracking", func(carry []graph.S, xs, ps [][]graph.S) (next, y []graph.S) {
			c := graph.NewUnflattener(carry)
			b := Belief{Mean: c.Vec(n), Cov: c.Mat(n, n)}
			total := c.Scalar()
			var (
				ll        graph.S
				nb        Belief
				filterCov graph.Mat
			)
			switch {
			case seeFirst:
				var P, K graph.Mat
				if tracked {
					P = c.Mat(n, n)
				} else {
					K = control.StepKalman(s, xs[5])
				}
				ll, nb, filterCov = SeeThenActStep(s, ps[0], xs[0], xs[1], agent(ps[1:], xs[2], xs[3], xs[4], nil), b, P, K, o.Jitter)
			case tracked:
				a := agent(ps[1:], xs[2], xs[3], xs[4], nil)
				ll, nb, filterCov = TrackedStep(s, ps[0], xs[0], xs[1], a, b, c.Mat(n, n), o.Jitter)
			default:
				ll, nb = BeliefTracking(s, ps[0], xs[0], xs[1], agent(ps[1:], xs[2], xs[3], xs[4], xs[5]), b, o.Jitter)
			}
			next = graph.Flatten(nb.Mean, nb.Cov, graph.Add(total, ll))
			if tracked {
				next = graph.Flatten(next, filterCov)
			}
			if len(xs) > nseq { // a trial that has ended keeps its belief and total
				cond := graph.GreaterThan(xs[nseq][0], graph.C(0))
				for i := range next {
					next[i] = graph.Select(cond, next[i], carry[i])
				}
			}
			return next, nil
		}, init, seqs, append([]*graph.Value{theta}, tau...), false)
		// The running total is the carry's entry after the belief's mean and covariance: rows
		// reads it there (one program call fewer forward and backward than a stage of its own).
		perStep, at = []*graph.Value{final}, n+n*n
	}
	return f.Map("rows", func(g [][]graph.S) [][]graph.S {
		ll := graph.Sum(func() []graph.S {
			terms := make([]graph.S, len(g)-1)
			for t := range terms {
				terms[t] = g[t][at]
			}
			return terms
		}()...)
		mask := g[len(g)-1][0]
		if in.perTrajectory {
			return [][]graph.S{{maskedTrials(ll, mask)}}
		}
		return [][]graph.S{{rowSums(ll, mask)}}
	}, append(perStep, in.mask)...)[0]
}

// beliefInit returns belief tracking's initial carry from the first states x0: the belief
// distribution (mean x0, covariance the belief prior), the running total 0 and, for a tracked
// filter, the agent's filter covariance sigma0. It is made before the backward pass, which it
// does not depend on, so that a looped Flow runs it with the stages before that; and there it
// is made whole (every entry an array of x0's dimensions, as a recursion carries it), so that
// the tracking recursion needs no call of its own to make it so.
func (e *Evaluator) beliefInit(f graph.Flow, x0 *graph.Value, sigma0 []graph.S) *graph.Value {
	n := len(e.sym.Spec.States)
	prior := graph.NewMat(n, n)
	if e.opts.Prior != nil {
		prior = graph.ConstMat(e.opts.Prior)
	}
	_, looped := f.(*graph.Tape)
	return f.Map("belief_init", func(g [][]graph.S) [][]graph.S {
		carry := graph.Flatten(graph.Vec(g[0]), prior, graph.C(0))
		if !e.opts.NominalFilter {
			carry = graph.Flatten(carry, sigma0)
		}
		for _, x := range g[0] {
			if !looped || x.IsConst() {
				continue
			}
			gr := graph.Graph(x)
			dims := x.Node(gr).Shape().Dimensions
			for i, c := range carry {
				carry[i] = graph.N(graph.Materialize(gr, c, dims...))
			}
			break
		}
		return [][]graph.S{carry}
	}, x0)[0]
}

// observed returns ll where the step is observed (running > 0), else 0.
func observed(running, ll graph.S) graph.S {
	return graph.Select(graph.GreaterThan(running, graph.C(0)), ll, graph.C(0))
}

// temperature returns the policy noise's temperature of the agent: the fitted τ (tau holds
// the one-entry value of θ's last entry) with Options.FitTemperature, else the fixed one (0
// for none).
func (e *Evaluator) temperature(tau [][]graph.S) graph.S {
	if e.opts.FitTemperature {
		return tau[0][0]
	}
	return graph.C(e.opts.Temperature)
}

// constant returns a stage function without inputs that gives the constants c.
func constant(c []graph.S) graph.MapFunc {
	return func([][]graph.S) [][]graph.S { return [][]graph.S{c} }
}

// maskedMean returns the mean over the trials axis (the last) of the states x where mask is
// not 0 (a trial whose log-likelihood is not counted, −1, still sets the mean: Data.mask),
// with that axis kept at size 1.
func maskedMean(x []graph.S, mask graph.S) []graph.S {
	w := graph.Mul(mask, mask) // 1 for a trial of the mean, counted or not (Data.mask)
	m := w.Node(graph.Graph(mask))
	last := m.Rank() - 1
	count := graph.N(G.ReduceAndKeep(m, G.ReduceSum, last))
	out := make([]graph.S, len(x))
	for i, xi := range x {
		sum := G.ReduceAndKeep(graph.Mul(xi, w).Node(m.Graph()), G.ReduceSum, last)
		out[i] = graph.Div(graph.N(sum), count)
	}
	return out
}

// maskedTrials returns ll where mask is positive and 0 elsewhere, with mask's dimensions.
func maskedTrials(ll, mask graph.S) graph.S {
	m := mask.Node(graph.Graph(mask))
	l := graph.Materialize(m.Graph(), ll, m.Shape().Dimensions...)
	return graph.N(G.Where(G.GreaterThan(m, G.ZerosLike(m)), l, G.ZerosLike(l)))
}

// rowSums returns the sum over the trials axis (the last) of ll where mask is positive, with
// that axis kept at size 1.
func rowSums(ll, mask graph.S) graph.S {
	m := mask.Node(graph.Graph(mask))
	l := graph.Materialize(m.Graph(), ll, m.Shape().Dimensions...)
	masked := G.Where(G.GreaterThan(m, G.ZerosLike(m)), l, G.ZerosLike(l))
	return graph.N(G.ReduceAndKeep(masked, G.ReduceSum, m.Rank()-1))
}

// looped reports whether the evaluator runs its recursions looped.
func (e *Evaluator) looped() bool {
	switch e.opts.Form {
	case FormLooped:
		return true
	case FormUnrolled:
		return false
	}
	return graph.CompilesSlowly(e.backend)
}

// evalLooped is EvalAt in the looped form: the inputs are uploaded once, every stage and
// step is a compiled program, and the gradient is reverse mode over the tape. The first
// evaluation of a shape runs the pipeline dry first (graph.Tape.Dry), so that its programs,
// forward and vector–Jacobian products, compile concurrently.
func (e *Evaluator) evalLooped(d *Data, flat []float64, nominal *control.Policy) (loglik, grad []float64, err error) {
	p := len(e.spec.Params)
	tp := e.engine.NewTape(!e.opts.ValueOnly)
	if e.opts.ForwardGradient && !e.opts.ValueOnly {
		tp = e.engine.NewForwardTape(p)
	}
	defer tp.Release()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("evaluating %s: %v", e.spec.Name, r)
		}
	}()
	data, release := d.tensors(len(e.spec.States), e.engine.WhileLoops())
	defer release()
	shapes := fmt.Sprintf("T%d P%d N%d running%d ends%d nominal%d lanes%t", d.Steps, d.Rows, d.Trials, len(d.running), len(d.ends), len(d.nominal), d.lanes)
	if rt := e.engine.ReplayTape(shapes); rt != nil && !e.opts.ForwardGradient {
		// The same calls as the evaluation recorded below, without the tape (graph's replays),
		// where the inputs are those it was recorded with (else on a tape, as below).
		defer rt.Release()
		e.loopedInputs(rt, data, d, flat, nominal)
		if rt.Replayable() {
			e.noteShape(d)
			res := rt.Replay()
			if e.opts.ValueOnly {
				return res[0], nil, nil
			}
			return res[0], res[1], nil
		}
	}
	if err := tp.Precompile(shapes, func(dry *graph.Tape) {
		total := e.pipeline(dry, e.loopedInputs(dry, data, d, flat, nominal))
		if !e.opts.ValueOnly {
			dry.Backward(total)
		}
	}); err != nil {
		return nil, nil, fmt.Errorf("evaluating %s: %w", e.spec.Name, err)
	}
	if !e.opts.ForwardGradient {
		e.noteShape(d)
		tp.Record(shapes)
	}
	in := e.loopedInputs(tp, data, d, flat, nominal)
	total := e.pipeline(tp, in)
	if e.opts.ValueOnly {
		loglik = tp.Fetch(total)
		tp.SaveRecording()
		if res, ok := e.replayLinked(shapes, data, d, flat, nominal); ok {
			return res[0], nil, nil
		}
		return loglik, nil, nil
	}
	// Backward first: the last stage then runs with the start of its vector–Jacobian
	// product, in one call (graph's fused calls), and its values stay for Fetch.
	tp.Backward(total)
	loglik, grad = tp.Fetch(total), tp.Grad(in.theta)
	tp.SaveRecording()
	if res, ok := e.replayLinked(shapes, data, d, flat, nominal); ok {
		return res[0], res[1], nil
	}
	return loglik, grad, nil
}

// replayLinked runs the evaluation just recorded under key again as its replay linked into one
// program, where replays run as one program (graph.Engine.SetReplayPrograms), so that every
// evaluation's numbers are the one program's (they differ from the calls' one by one in the
// last bits). ok is false where they do not, or linking failed.
func (e *Evaluator) replayLinked(key string, data *dataTensors, d *Data, flat []float64, nominal *control.Policy) ([][]float64, bool) {
	if !e.engine.ReplayPrograms() {
		return nil, false
	}
	rt := e.engine.ReplayTape(key)
	if rt == nil {
		return nil, false
	}
	defer rt.Release()
	e.loopedInputs(rt, data, d, flat, nominal)
	res, linked := rt.ReplayLinked()
	return res, linked
}

// loopedInputs gives tp d's tensors data (Data.tensors), the parameter vectors flat and the
// nominal policy.
func (e *Evaluator) loopedInputs(tp *graph.Tape, data *dataTensors, d *Data, flat []float64, nominal *control.Policy) flowInputs {
	p, n, k := len(e.spec.Params), len(e.spec.States), len(e.spec.Controls)
	T, P, N := d.Steps, d.Rows, d.Trials
	copies := 1 // θ per row, or per lane (lanes)
	if d.lanes {
		copies = N
	}
	in := flowInputs{theta: tp.Input(flat, p, []int{P, copies}, true), perTrajectory: d.lanes}
	if e.opts.Linearize == LinearizeILQG {
		one := []int{P, 1}
		in.Xbar, in.Ubar = tp.Series(nominal.Xbar, T+1, n, one, false), tp.Series(nominal.Ubar, T, k, one, false)
		in.Lprev = tp.Series(nominal.Gain, T, k*n, one, false)
	}
	borrow := func(ts []*tensors.Tensor, steps, k, cols int) []*graph.Value {
		if ts == nil {
			return nil
		}
		if data.stacked {
			return tp.BorrowSeries(ts[0], steps, k, []int{P, cols})
		}
		out := make([]*graph.Value, len(ts))
		for t, x := range ts {
			out[t] = tp.Borrow(x, k, []int{P, cols})
		}
		return out
	}
	in.X, in.mask = borrow(data.X, T+1, n, N), tp.Borrow(data.mask, 1, []int{P, N})
	in.running, in.ends = borrow(data.running, T, 1, N), borrow(data.ends, T, 1, N)
	in.nominal = borrow(data.nominal, T+1, n, data.cols)
	return in
}

// buildUnrolled is the Program of the unrolled form: inputs θ [p, P, 1], states
// [T+1, n, P, N], mask [P, N]; for LinearizeILQG, the nominal [T+1, n, P, 1],
// [T, k, P, 1] and its gains [T, k, n, P, 1]; and for trials of their own length (Data) the
// steps observed [T, 1, P, N], with HorizonTrial the ends [T, 1, P, N], and for
// LinearizeMean the nominal [T+1, n, P, N or 1] (see unrolledInputs). It outputs the row
// sums [P] and their gradient [p, P, 1].
func (e *Evaluator) buildUnrolled(g *G.Graph, in []*G.Node) []*G.Node {
	return e.buildUnrolledWith(graph.Unrolled{}, g, in)
}

// buildUnrolledWith is buildUnrolled with the unrolled Flow f (one that counts, say).
func (e *Evaluator) buildUnrolledWith(f graph.Flow, g *G.Graph, in []*G.Node) []*G.Node {
	spec := e.sym.Spec
	n, k := len(spec.States), len(spec.Controls)
	fi := flowInputs{
		theta:         graph.Values(graph.Unstack(in[0], 1))[0],
		X:             graph.SeriesValues(in[1], 2, n),
		mask:          graph.Values([]graph.S{graph.N(in[2])})[0],
		perTrajectory: e.perTrajectory(),
	}
	if e.opts.Linearize == LinearizeILQG {
		fi.Xbar = graph.SeriesValues(in[3], 2, n)
		fi.Ubar = graph.SeriesValues(in[4], 2, k)
		fi.Lprev = graph.SeriesValues(in[5], 3, k*n)
	}
	if i := e.fixedInputs(); len(in) > i {
		fi.running = graph.SeriesValues(in[i], 2, 1)
		i++
		if e.sym.Spec.PlanningHorizon() == models.HorizonTrial {
			fi.ends = graph.SeriesValues(in[i], 2, 1)
			i++
		}
		if e.opts.Linearize == LinearizeMean {
			fi.nominal = graph.SeriesValues(in[i], 2, n)
		}
	}
	total := e.pipeline(f, fi).Scalars()[0]
	if fi.perTrajectory {
		trials := graph.Materialize(g, total, in[2].Shape().Dimensions...)
		if e.opts.ValueOnly {
			return []*G.Node{trials}
		}
		return []*G.Node{trials, G.Gradient(G.ReduceAllSum(trials), in[0])[0]}
	}
	rows := G.Reshape(total.Node(g), in[2].Shape().Dimensions[0])
	if e.opts.ValueOnly {
		return []*G.Node{rows}
	}
	return []*G.Node{rows, G.Gradient(G.ReduceAllSum(rows), in[0])[0]}
}

// perTrajectory reports whether the unrolled graph gives each trial's log-likelihood and its
// gradient with respect to a copy of θ of the trial's own (θ input [p, P, N]), which EvalAt
// sums over each row's trials, rather than each row's sums. With LinearizeData a trial's
// computation involves no other trial, so every trial then gets the same bits whichever chunk
// it is evaluated in, as one of a row's N trials or as a row of its own (TrialScores, and
// EvalRows' flat chunks); the other linearizations share a row's nominal among its trials.
func (e *Evaluator) perTrajectory() bool {
	return e.opts.Linearize == LinearizeData && !e.looped()
}

// fixedInputs returns the number of inputs of the unrolled program that every Data has.
func (e *Evaluator) fixedInputs() int {
	if e.opts.Linearize == LinearizeILQG {
		return 6
	}
	return 3
}

// unrolledInputs returns the inputs of the unrolled program that depend on d's trials'
// lengths (see buildUnrolled); none when they all have d.Steps steps.
func (d *Data) unrolledInputs(n int) []*tensors.Tensor {
	if d.running == nil {
		return nil
	}
	T, P, N := d.Steps, d.Rows, d.Trials
	in := []*tensors.Tensor{graph.NewTensor(d.running, T, 1, P, N)}
	if d.ends != nil {
		in = append(in, graph.NewTensor(d.ends, T, 1, P, N))
	}
	if d.nominal != nil {
		in = append(in, graph.NewTensor(d.nominal, T+1, n, P, len(d.nominal)/((T+1)*n*P)))
	}
	return in
}
