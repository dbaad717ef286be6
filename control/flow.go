package control

import (
	"slices"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// The recursions of this package are written once, as step functions run by a graph.Flow:
// unrolled into one graph, or looped over one compiled step (graph.Tape). The values passed
// between stages are flat groups of scalars (graph.Flatten): a linearized step (Point.Flat),
// a step's gains (L, l, H̃) and Kalman gains K.

// dims returns n, k, nv, m, nw of a model.
func dims(s *models.Symbolic) (n, k, nv, m, nw int) {
	return len(s.X), len(s.U), len(s.V), len(s.H0), len(s.W)
}

// Flat returns the derivatives of the model at p that the backward passes and filters use, in
// the order A, B, V, Cx, Cu, F, W, D, Q, R, P, q, r; pointFromFlat reads them back.
func (p *Point) Flat() []graph.S {
	return graph.Flatten(p.A(), p.B(), p.V(), p.Cx(), p.Cu(), p.F(), p.W(), p.D(), p.Q(), p.R(), p.P(), p.Qv(), p.Rv())
}

// pointFromFlat returns a Point whose derivatives are those of Flat; it has no other values.
func pointFromFlat(s *models.Symbolic, flat []graph.S) *Point {
	n, k, nv, m, nw := dims(s)
	u := graph.NewUnflattener(flat)
	p := &Point{s: s}
	p.a, p.b, p.v = u.Mat(n, n), u.Mat(n, k), u.Mat(n, nv)
	p.cx, p.cu = u.Mats(nv, n, n), u.Mats(nv, n, k)
	p.fo, p.w, p.d = u.Mat(m, n), u.Mat(m, nw), u.Mats(nw, m, n)
	p.cq, p.cr, p.cp = u.Mat(n, n), u.Mat(k, k), u.Mat(k, n)
	p.q, p.r = u.Vec(n), u.Vec(k)
	u.Done()
	return p
}

// FlatFinal returns the final cost's derivatives (Q_T, q_T) at p.
func (p *Point) FlatFinal() []graph.S { return graph.Flatten(p.FinalQ(), p.Finalq()) }

func finalFromFlat(s *models.Symbolic, flat []graph.S) *Point {
	n := len(s.X)
	u := graph.NewUnflattener(flat)
	p := &Point{s: s, finalQ: u.Mat(n, n), finalq: u.Vec(n)}
	u.Done()
	return p
}

// Linearized is a model linearized along a trajectory as Flow values: Steps[t] holds the
// Flat derivatives at (x_t, u_t), Final the final cost's at x_T.
type Linearized struct {
	s     *models.Symbolic
	Steps []*graph.Value
	Final *graph.Value
	// Ends, if set, holds one entry per step t that is positive for the problems whose
	// horizon ends after step t, earlier than len(Steps) (trials of their own length): the
	// backward passes restart there from the final cost. Final must then be the final cost at
	// each problem's own end, as it is when a shorter trajectory is padded with its last
	// state.
	Ends []*graph.Value
	// Gaps, if set, hold per step t the gap d_t = f(x_t, u_t, 0) − x_{t+1} (n entries) of a
	// trajectory that is not a rollout of the model (data, or the mean of data, with estimated
	// controls): the backward passes then take the value function of step t+1 at x_{t+1} + d_t,
	// where the linearized dynamics land, as multiple-shooting DDP does with its defects
	// (Mastalli et al. 2020, FDDP). Nil for a rollout (the iLQG nominal), whose gaps are 0.
	Gaps []*graph.Value
}

// restart returns the value function carried into a backward step: the final one (fresh)
// where the problem's horizon ends after this step (end > 0), else carry.
func restart(end graph.S, fresh, carry []graph.S) []graph.S {
	cond := graph.GreaterThan(end, graph.C(0))
	out := make([]graph.S, len(carry))
	for i := range carry {
		out[i] = graph.Select(cond, fresh[i], carry[i])
	}
	return out
}

// LinearizeFlow linearizes the model at every (X[t], U[t]) (len(X) = len(U)+1) with
// parameters theta (natural units), all steps at once (paper Sec. 3.3 when the trajectory is
// data, Sec. 2.2 when it is a nominal one).
func LinearizeFlow(f graph.Flow, s *models.Symbolic, theta *graph.Value, X, U []*graph.Value) *Linearized {
	if len(X) != len(U)+1 {
		panic("control: LinearizeFlow needs one more state than controls")
	}
	steps := f.MapSteps("linearize", func(in [][]graph.S) [][]graph.S {
		return [][]graph.S{At(s, in[2], in[0], in[1]).Flat()}
	}, [][]*graph.Value{X[:len(U)], U}, theta)[0]
	final := f.Map("linearize_final", func(in [][]graph.S) [][]graph.S {
		return [][]graph.S{At(s, in[1], in[0], nil).FlatFinal()}
	}, X[len(U)], theta)[0]
	return &Linearized{s: s, Steps: steps, Final: final}
}

// LinearizeGapsFlow is LinearizeFlow along a trajectory that need not be a rollout of the model,
// such as observed data with estimated controls: it also records the gaps d_t = f(x_t, u_t, 0) −
// x_{t+1} (Linearized.Gaps), which the backward passes account for. Ignoring them, as the paper
// and its reference implementation do, turns each step's noise into an error of the
// linearized plan: on the linear task it biases the control cost by 30 standard errors at 1000
// trials (docs/method.md, "Deliberate differences").
func LinearizeGapsFlow(f graph.Flow, s *models.Symbolic, theta *graph.Value, X, U []*graph.Value) *Linearized {
	lin := LinearizeFlow(f, s, theta, X, U)
	lin.Gaps = f.MapSteps("gaps", func(in [][]graph.S) [][]graph.S {
		return [][]graph.S{graph.VecSub(At(s, in[3], in[0], in[1]).F0(), in[2])}
	}, [][]*graph.Value{X[:len(U)], U, X[1:]}, theta)[0]
	return lin
}

// backwardSeqs returns the sequences of a backward pass over lin: seqs, then the gaps and the
// ends where lin has them, and the positions of those two (−1 where absent).
func backwardSeqs(lin *Linearized, seqs ...[]*graph.Value) (out [][]*graph.Value, gap, end int) {
	gap, end = -1, -1
	if lin.Gaps != nil {
		gap = len(seqs)
		seqs = append(seqs, lin.Gaps)
	}
	if lin.Ends != nil {
		end = len(seqs)
		seqs = append(seqs, lin.Ends)
	}
	return seqs, gap, end
}

// flat returns the Flow values of a Trajectory's points, for the unrolled form.
func (tr *Trajectory) flat() *Linearized {
	lin := &Linearized{s: tr.Final.s, Steps: make([]*graph.Value, len(tr.Steps))}
	for t, p := range tr.Steps {
		lin.Steps[t] = graph.Values(p.Flat())[0]
	}
	lin.Final = graph.Values(tr.Final.FlatFinal())[0]
	return lin
}

// KalmanGainsFlow is KalmanGains run by a Flow: one Kalman gain K_t (n×m, flat) per step.
func KalmanGainsFlow(f graph.Flow, lin *Linearized, init *graph.Value) []*graph.Value {
	s := lin.s
	n := len(s.X)
	_, K := f.Scan("kalman", func(carry []graph.S, xs, _ [][]graph.S) (next, y []graph.S) {
		K, P := FilterStep(pointFromFlat(s, xs[0]), graph.NewUnflattener(carry).Mat(n, n), nil)
		return graph.Flatten(P), graph.Flatten(K)
	}, init, [][]*graph.Value{lin.Steps}, nil, false)
	return K
}

// FilterUpdateGainsFlow is the filter of an agent that sees before it acts (models.SeeThenAct)
// along lin, run by a Flow from the covariance init (flat) of its first belief: per step t, the
// gain K_t (n×m, flat) of its update with the observation of x_{t+1} (FilterUpdateStep at the
// points t and t+1; at the last step t for both, as the belief after that update acts no more).
func FilterUpdateGainsFlow(f graph.Flow, lin *Linearized, init *graph.Value) []*graph.Value {
	s := lin.s
	n := len(s.X)
	_, K := f.Scan("filter_update", func(carry []graph.S, xs, _ [][]graph.S) (next, y []graph.S) {
		K, P := FilterUpdateStep(pointFromFlat(s, xs[0]), pointFromFlat(s, xs[1]), graph.NewUnflattener(carry).Mat(n, n), nil)
		return graph.Flatten(P), graph.Flatten(K)
	}, init, [][]*graph.Value{lin.Steps, lin.nextSteps(f)}, nil, false)
	return K
}

// seesFirst reports whether the agent of lin's task sees before it acts (models.SeeThenAct):
// its filter then updates with the observation of x_{t+1} after acting at t, in filter form.
func (lin *Linearized) seesFirst() bool {
	return lin.s.Spec.ObservationTiming() == models.SeeThenAct
}

// nextSteps returns, per step t, the point at which an agent that sees before it acts
// linearizes its observation of x_{t+1}: Steps[t+1], and at the last step a copy of Steps[T−1]
// (the belief after that update acts no more, and Sx_T does not depend on it; a copy, as a
// looped step takes no differentiated value twice).
func (lin *Linearized) nextSteps(f graph.Flow) []*graph.Value {
	T := len(lin.Steps)
	last := f.Map("last_point", func(in [][]graph.S) [][]graph.S { return in }, lin.Steps[T-1])[0]
	return append(slices.Clone(lin.Steps[1:]), last)
}

// restartValue returns a copy of a backward pass's first carry, the value a trial that ends
// early restarts the recursion from: a parameter of the recursion, which a looped step cannot
// take as well as its carry (the same differentiated value twice).
func restartValue(f graph.Flow, init *graph.Value) *graph.Value {
	return f.Map("backward_restart", func(in [][]graph.S) [][]graph.S { return in }, init)[0]
}

// BackwardPassFlow is BackwardPass run by a Flow: the gains (L_t, l_t, H̃_t, flat) per step.
func BackwardPassFlow(f graph.Flow, lin *Linearized, eps float64) []*graph.Value {
	s := lin.s
	n, _, _, _, _ := dims(s)
	init := f.Map("backward_init", func(in [][]graph.S) [][]graph.S {
		p := finalFromFlat(s, in[0])
		return [][]graph.S{graph.Flatten(graph.Symmetrize(p.FinalQ()), p.Finalq())}
	}, lin.Final)[0]
	var params []*graph.Value
	if lin.Ends != nil {
		params = []*graph.Value{restartValue(f, init)}
	}
	seqs, gap, end := backwardSeqs(lin, lin.Steps)
	_, gains := f.Scan("backward", func(carry []graph.S, xs, ps [][]graph.S) (next, y []graph.S) {
		if end >= 0 {
			carry = restart(xs[end][0], ps[0], carry)
		}
		c := graph.NewUnflattener(carry)
		S, sv := c.Mat(n, n), c.Vec(n)
		if gap >= 0 {
			sv = graph.VecAdd(sv, graph.MatVec(S, xs[gap]))
		}
		L, l, H, S, sv := backwardStep(pointFromFlat(s, xs[0]), S, sv, eps)
		return graph.Flatten(S, sv), graph.Flatten(L, l, H)
	}, init, seqs, params, true)
	return gains
}

// BackwardPassPartialFlow is BackwardPassPartial run by a Flow, with filter gains K (flat).
// The task's timing says which: for models.ActThenSee the predictor-form gains of the
// observation of x_t (KalmanGainsFlow's, or ClosedLoopMomentsFlow's); for models.SeeThenAct
// the filter-form gains of the update with the observation of x_{t+1}
// (FilterUpdateGainsFlow's, or ClosedLoopMomentsFlow's), the step then backwardPartialTimed's.
func BackwardPassPartialFlow(f graph.Flow, lin *Linearized, K []*graph.Value, eps float64) []*graph.Value {
	s := lin.s
	n, _, _, m, _ := dims(s)
	init := f.Map("backward_partial_init", func(in [][]graph.S) [][]graph.S {
		p := finalFromFlat(s, in[0])
		return [][]graph.S{graph.Flatten(graph.Symmetrize(p.FinalQ()), graph.NewMat(n, n), graph.NewMat(n, n), p.Finalq(), make(graph.Vec, n))}
	}, lin.Final)[0]
	var params []*graph.Value
	if lin.Ends != nil {
		params = []*graph.Value{restartValue(f, init)}
	}
	seqs := [][]*graph.Value{lin.Steps, K}
	seeFirst := lin.seesFirst()
	if seeFirst {
		seqs = append(seqs, lin.nextSteps(f))
	}
	seqs, gap, end := backwardSeqs(lin, seqs...)
	_, gains := f.Scan("backward_partial", func(carry []graph.S, xs, ps [][]graph.S) (next, y []graph.S) {
		if end >= 0 {
			carry = restart(xs[end][0], ps[0], carry)
		}
		c := graph.NewUnflattener(carry)
		v := partialValue{Sx: c.Mat(n, n), Sb: c.Mat(n, n), Sxb: c.Mat(n, n), sx: c.Vec(n), sb: c.Vec(n)}
		var pn *Point // the observation of x_{t+1}, for an agent that sees before it acts
		if seeFirst {
			pn = pointFromFlat(s, xs[2])
		}
		var gapt graph.Vec
		if gap >= 0 {
			gapt = xs[gap]
		}
		L, l, H, nv := backwardPartialTimed(pointFromFlat(s, xs[0]), pn, graph.NewUnflattener(xs[1]).Mat(n, m), v, gapt, eps)
		return graph.Flatten(nv.Sx, nv.Sb, nv.Sxb, nv.sx, nv.sb), graph.Flatten(L, l, H)
	}, init, seqs, params, true)
	return gains
}

// ClosedLoopMomentsFlow is ClosedLoopMoments run by a Flow under the control gains (flat L,
// l, H̃ per step): per step, K_t and the moments (Sb, Se, Sbe) before it; and the moments at T.
// For an agent that sees before it acts (models.SeeThenAct) the moments at t are those after
// its update with the observation of x_t, and K_t is the gain of its update with the
// observation of x_{t+1} (momentsStep with the next step's point).
func ClosedLoopMomentsFlow(f graph.Flow, lin *Linearized, gains []*graph.Value, init *graph.Value) (final *graph.Value, steps []*graph.Value) {
	s := lin.s
	n, k, _, _, _ := dims(s)
	seqs := [][]*graph.Value{lin.Steps, gains}
	seeFirst := lin.seesFirst()
	if seeFirst {
		seqs = append(seqs, lin.nextSteps(f))
	}
	return f.Scan("moments", func(carry []graph.S, xs, _ [][]graph.S) (next, y []graph.S) {
		c := graph.NewUnflattener(carry)
		mo := momentsState{Sb: c.Mat(n, n), Se: c.Mat(n, n), Sbe: c.Mat(n, n)}
		L := graph.NewUnflattener(xs[1]).Mat(k, n)
		var pn *Point // the observation of x_{t+1}, for an agent that sees before it acts
		if seeFirst {
			pn = pointFromFlat(s, xs[2])
		}
		K, nm := momentsStep(pointFromFlat(s, xs[0]), pn, L, mo)
		return graph.Flatten(nm.Sb, nm.Se, nm.Sbe), graph.Flatten(K, mo.Sb, mo.Se, mo.Sbe)
	}, init, seqs, nil, false)
}

// MomentsInit returns the moments (Sb, Se, Sbe) = (0, Σ0, 0) at which ClosedLoopMomentsFlow
// starts, Σ0 the task's initial belief covariance.
func MomentsInit(f graph.Flow, s *models.Symbolic) *graph.Value {
	n := len(s.X)
	zero := graph.NewMat(n, n)
	init := graph.Flatten(zero, graph.ConstMat(s.Spec.InitialBeliefCov()), zero)
	return f.Map("moments_init", func([][]graph.S) [][]graph.S { return [][]graph.S{init} })[0]
}

// GainsOf reads the flat gains of BackwardPassFlow back, for the unrolled form.
func GainsOf(s *models.Symbolic, flat []*graph.Value) Gains {
	g := Gains{L: make([]graph.Mat, len(flat)), l: make([]graph.Vec, len(flat)), H: make([]graph.Mat, len(flat))}
	for t, v := range flat {
		g.L[t], g.l[t], g.H[t] = StepGains(s, v.Scalars())
	}
	return g
}

// StepGains reads one step's flat gains (L, l, H̃) inside a stage.
func StepGains(s *models.Symbolic, flat []graph.S) (L graph.Mat, l graph.Vec, H graph.Mat) {
	n, k, _, _, _ := dims(s)
	u := graph.NewUnflattener(flat)
	L, l, H = u.Mat(k, n), u.Vec(k), u.Mat(k, k)
	u.Done()
	return L, l, H
}

// StepKalman reads one step's flat Kalman gain (n×m) inside a stage.
func StepKalman(s *models.Symbolic, flat []graph.S) graph.Mat {
	n, _, _, m, _ := dims(s)
	return graph.NewUnflattener(flat).Mat(n, m)
}

// matsOf reads flat r×c matrices back, for the unrolled form.
func matsOf(flat []*graph.Value, r, c int) []graph.Mat {
	out := make([]graph.Mat, len(flat))
	for t, v := range flat {
		out[t] = graph.NewUnflattener(v.Scalars()).Mat(r, c)
	}
	return out
}
