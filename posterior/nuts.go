package posterior

import (
	"errors"
	"math"
	"math/rand/v2"
)

// The No-U-Turn transition of one chain, a translation of Stan's base_nuts (multinomial
// sampling from the trajectory, biased progressive sampling across subtrees, the generalized
// U-turn criterion checked within every merged subtree and across its two halves) with a
// diagonal Euclidean metric: H(q, p) = −log π(q) + ½ pᵀM⁻¹p, p ~ normal(0, M), the "sharp"
// momentum p♯ = M⁻¹p, and the leapfrog integrator.

// state is a point of phase space with the log density and its gradient at its position.
type state struct {
	q, p []float64
	logp float64   // −Inf where the density is zero
	grad []float64 // ∇ log π(q); zero where the density is zero
}

func newState(dim int) *state {
	return &state{q: make([]float64, dim), p: make([]float64, dim), grad: make([]float64, dim)}
}

func (z *state) clone() *state {
	w := newState(len(z.q))
	w.set(z)
	return w
}

// set copies o into z.
func (z *state) set(o *state) {
	copy(z.q, o.q)
	copy(z.p, o.p)
	copy(z.grad, o.grad)
	z.logp = o.logp
}

// evalFunc returns the log density at q and its gradient: −Inf and nil where the density
// is zero. It must not keep q.
type evalFunc func(q []float64) (logp float64, grad []float64, err error)

// nuts is the sampler of one chain: the metric, step size and random stream.
type nuts struct {
	dim       int
	rng       *rand.Rand
	eval      evalFunc
	metric    *metric
	qStep     []float64 // scratch: M⁻¹p in a leapfrog step
	eps       float64   // step size
	maxDepth  int
	maxDeltaH float64
	evals     int // evaluations of the log density so far
}

// transitionStats are the sampler's statistics of one transition, as Stan reports them.
type transitionStats struct {
	depth, nLeapfrog int
	divergent        bool
	acceptStat       float64 // mean Metropolis acceptance probability over the trajectory
	energy           float64 // H at the draw
}

// evaluate sets z's log density and gradient at its position.
func (s *nuts) evaluate(z *state) error {
	lp, g, err := s.eval(z.q)
	if err != nil {
		return err
	}
	s.evals++
	z.logp = lp
	if g == nil || math.IsInf(lp, -1) {
		z.logp = math.Inf(-1)
		clear(z.grad)
		return nil
	}
	copy(z.grad, g)
	return nil
}

// leapfrog moves z by one leapfrog step of size eps (negative: backwards in time).
func (s *nuts) leapfrog(z *state, eps float64) error {
	for i := range z.p {
		z.p[i] += 0.5 * eps * z.grad[i]
	}
	s.metric.sharp(s.qStep, z.p)
	for i := range z.q {
		z.q[i] += eps * s.qStep[i]
	}
	if err := s.evaluate(z); err != nil {
		return err
	}
	for i := range z.p {
		z.p[i] += 0.5 * eps * z.grad[i]
	}
	return nil
}

// hamiltonian returns H at z: +Inf where the density is zero, never NaN.
func (s *nuts) hamiltonian(z *state) float64 {
	if math.IsInf(z.logp, -1) {
		return math.Inf(1)
	}
	h := -z.logp + 0.5*s.metric.kinetic(z.p)
	if math.IsNaN(h) {
		return math.Inf(1)
	}
	return h
}

// sampleMomentum draws p ~ normal(0, M).
func (s *nuts) sampleMomentum(p []float64) {
	s.metric.momentum(s.rng, p)
}

// sharp sets dst = M⁻¹p.
func (s *nuts) sharp(dst, p []float64) { s.metric.sharp(dst, p) }

// criterion is the generalized no-U-turn criterion of a (sub)trajectory with summed momentum
// rho and sharp momenta pMinus, pPlus at its ends: true while it keeps going.
func criterion(pSharpMinus, pSharpPlus, rho []float64) bool {
	return dot(pSharpPlus, rho) > 0 && dot(pSharpMinus, rho) > 0
}

// transition runs one NUTS transition from z0 (whose log density and gradient are set; its
// momentum is ignored) and returns the draw, with its momentum, and the statistics.
func (s *nuts) transition(z0 *state) (*state, transitionStats, error) {
	z := z0.clone()
	s.sampleMomentum(z.p)
	d := s.dim

	zFwd, zBck := z.clone(), z.clone() // the ends of the trajectory
	zSample, zPropose := z.clone(), z.clone()

	// Momenta and sharp momenta at the ends of the forward and backward subtrees.
	pSharp := make([]float64, d)
	s.sharp(pSharp, z.p)
	pFwdFwd, pSharpFwdFwd := clone(z.p), clone(pSharp)
	pFwdBck, pSharpFwdBck := clone(z.p), clone(pSharp)
	pBckFwd, pSharpBckFwd := clone(z.p), clone(pSharp)
	pBckBck, pSharpBckBck := clone(z.p), clone(pSharp)

	rho := clone(z.p) // momentum summed along the trajectory
	logSumWeight := 0.0
	tr := &tree{s: s, h0: s.hamiltonian(z), z: newState(d)}
	var st transitionStats
	rhoExt := make([]float64, d)
	for st.depth < s.maxDepth {
		rhoFwd, rhoBck := make([]float64, d), make([]float64, d)
		logSumWeightSubtree := math.Inf(-1)
		var valid bool
		var err error
		if s.rng.Float64() > 0.5 {
			// Extend forward: the trajectory so far is the backward subtree.
			tr.z.set(zFwd)
			tr.eps = s.eps
			copy(rhoBck, rho)
			copy(pBckFwd, pFwdFwd)
			copy(pSharpBckFwd, pSharpFwdFwd)
			valid, err = tr.build(st.depth, zPropose, pSharpFwdBck, pSharpFwdFwd, rhoFwd, pFwdBck, pFwdFwd, &logSumWeightSubtree)
			zFwd.set(tr.z)
		} else {
			// Extend backward: the trajectory so far is the forward subtree.
			tr.z.set(zBck)
			tr.eps = -s.eps
			copy(rhoFwd, rho)
			copy(pFwdBck, pBckBck)
			copy(pSharpFwdBck, pSharpBckBck)
			valid, err = tr.build(st.depth, zPropose, pSharpBckFwd, pSharpBckBck, rhoBck, pBckFwd, pBckBck, &logSumWeightSubtree)
			zBck.set(tr.z)
		}
		if err != nil {
			return nil, st, err
		}
		if !valid {
			break
		}
		st.depth++

		// Biased progressive sampling: prefer the new subtree.
		if logSumWeightSubtree > logSumWeight {
			zSample.set(zPropose)
		} else if s.rng.Float64() < math.Exp(logSumWeightSubtree-logSumWeight) {
			zSample.set(zPropose)
		}
		logSumWeight = logSumExp(logSumWeight, logSumWeightSubtree)

		for i := range rho {
			rho[i] = rhoBck[i] + rhoFwd[i]
		}
		// Around the merged trajectory, and across its two subtrees.
		persist := criterion(pSharpBckBck, pSharpFwdFwd, rho)
		for i := range rhoExt {
			rhoExt[i] = rhoBck[i] + pFwdBck[i]
		}
		persist = persist && criterion(pSharpBckBck, pSharpFwdBck, rhoExt)
		for i := range rhoExt {
			rhoExt[i] = rhoFwd[i] + pBckFwd[i]
		}
		persist = persist && criterion(pSharpBckFwd, pSharpFwdFwd, rhoExt)
		if !persist {
			break
		}
	}
	st.nLeapfrog = tr.nLeapfrog
	st.divergent = tr.divergent
	st.acceptStat = tr.sumMetroProb / float64(tr.nLeapfrog)
	st.energy = s.hamiltonian(zSample)
	return zSample, st, nil
}

// tree holds what the recursion of one transition shares: the integrator's state at the end
// being extended, the signed step, the initial energy and the running sums.
type tree struct {
	s            *nuts
	z            *state
	eps          float64
	h0           float64
	nLeapfrog    int
	sumMetroProb float64
	divergent    bool
}

// build extends the trajectory by a subtree of 2^depth leapfrog steps from t.z, leaving t.z
// at its far end. It sets propose to the state drawn from the subtree, pSharpBeg/pBeg and
// pSharpEnd/pEnd to the (sharp) momenta at its first and last state, adds the subtree's
// momenta to rho and the log of its weights to logSumWeight. It returns whether the subtree
// is valid: no divergence and no U-turn within it.
func (t *tree) build(depth int, propose *state, pSharpBeg, pSharpEnd, rho, pBeg, pEnd []float64, logSumWeight *float64) (bool, error) {
	s := t.s
	if depth == 0 {
		if err := s.leapfrog(t.z, t.eps); err != nil {
			return false, err
		}
		t.nLeapfrog++
		h := s.hamiltonian(t.z)
		if h-t.h0 > s.maxDeltaH {
			t.divergent = true
		}
		*logSumWeight = logSumExp(*logSumWeight, t.h0-h)
		if t.h0-h > 0 {
			t.sumMetroProb++
		} else {
			t.sumMetroProb += math.Exp(t.h0 - h)
		}
		propose.set(t.z)
		s.sharp(pSharpBeg, t.z.p)
		copy(pSharpEnd, pSharpBeg)
		for i, p := range t.z.p {
			rho[i] += p
		}
		copy(pBeg, t.z.p)
		copy(pEnd, t.z.p)
		return !t.divergent, nil
	}
	d := s.dim

	// The initial half.
	logSumWeightInit := math.Inf(-1)
	pInitEnd, pSharpInitEnd := make([]float64, d), make([]float64, d)
	rhoInit := make([]float64, d)
	valid, err := t.build(depth-1, propose, pSharpBeg, pSharpInitEnd, rhoInit, pBeg, pInitEnd, &logSumWeightInit)
	if err != nil || !valid {
		return false, err
	}

	// The final half.
	proposeFinal := t.z.clone()
	logSumWeightFinal := math.Inf(-1)
	pFinalBeg, pSharpFinalBeg := make([]float64, d), make([]float64, d)
	rhoFinal := make([]float64, d)
	valid, err = t.build(depth-1, proposeFinal, pSharpFinalBeg, pSharpEnd, rhoFinal, pFinalBeg, pEnd, &logSumWeightFinal)
	if err != nil || !valid {
		return false, err
	}

	// Multinomial sample from the two halves.
	logSumWeightSubtree := logSumExp(logSumWeightInit, logSumWeightFinal)
	*logSumWeight = logSumExp(*logSumWeight, logSumWeightSubtree)
	if logSumWeightFinal > logSumWeightSubtree {
		propose.set(proposeFinal)
	} else if s.rng.Float64() < math.Exp(logSumWeightFinal-logSumWeightSubtree) {
		propose.set(proposeFinal)
	}

	rhoSubtree := make([]float64, d)
	for i := range rhoSubtree {
		rhoSubtree[i] = rhoInit[i] + rhoFinal[i]
		rho[i] += rhoSubtree[i]
	}
	persist := criterion(pSharpBeg, pSharpEnd, rhoSubtree)
	rhoExt := make([]float64, d)
	for i := range rhoExt {
		rhoExt[i] = rhoInit[i] + pFinalBeg[i]
	}
	persist = persist && criterion(pSharpBeg, pSharpFinalBeg, rhoExt)
	for i := range rhoExt {
		rhoExt[i] = rhoFinal[i] + pInitEnd[i]
	}
	persist = persist && criterion(pSharpInitEnd, pSharpEnd, rhoExt)
	return persist, nil
}

var (
	errImproper   = errors.New("step size above 1e7 still accepted: the posterior looks improper")
	errNoStepSize = errors.New("no acceptably small step size: the log density may not be continuous")
)

// initStepSize is Stan's heuristic for the step size at z (a point of finite density):
// double or halve the step size until the acceptance probability of one leapfrog step from
// z with fresh momentum crosses 0.8.
func (s *nuts) initStepSize(z *state) error {
	if s.eps == 0 || s.eps > 1e7 || math.IsNaN(s.eps) {
		return nil
	}
	w := newState(s.dim)
	deltaH := func() (float64, error) {
		w.set(z)
		s.sampleMomentum(w.p)
		h0 := s.hamiltonian(w)
		if err := s.leapfrog(w, s.eps); err != nil {
			return 0, err
		}
		return h0 - s.hamiltonian(w), nil
	}
	logAccept := math.Log(0.8)
	dh, err := deltaH()
	if err != nil {
		return err
	}
	up := dh > logAccept
	for {
		if dh, err = deltaH(); err != nil {
			return err
		}
		if up && !(dh > logAccept) || !up && !(dh < logAccept) {
			return nil
		}
		if up {
			s.eps *= 2
		} else {
			s.eps /= 2
		}
		if s.eps > 1e7 {
			return errImproper
		}
		if s.eps == 0 {
			return errNoStepSize
		}
	}
}

// logSumExp returns log(eᵃ + eᵇ), exactly a or b when the other is −Inf.
func logSumExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func clone(x []float64) []float64 { return append([]float64(nil), x...) }
