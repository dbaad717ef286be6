// L-BFGS-B ([BLNZ], see lbfgsb.go): the line search ([MT], MINPACK-2 dcsrch and dcstep).

package fit

import (
	"math"
)

// ---------------------------------------------------------------------------
// Line search.

// lsOutcome classifies the end of a line search.
type lsOutcome int

const (
	lsOK         lsOutcome = iota // an acceptable point was found
	lsFailed                      // no acceptable point: not a descent direction, too many trials, or only non-finite values
	lsAborted                     // the objective returned an error
	lsOutOfEvals                  // the evaluation budget ran out
)

// lsResult is the outcome of lineSearch.
type lsResult struct {
	outcome lsOutcome
	x, g    []float64 // accepted point and its gradient (lsOK)
	f       float64
	err     error // objective error (lsAborted)
	// Lowest finite trial point seen, if any (used when the budget runs out).
	bestX, bestG []float64
	bestF        float64
}

// lineSearch searches along d = z − x from x for a step satisfying the
// strong Wolfe conditions
//
//	f(x + αd) <= f(x) + 1e-3 α g'd,   |g(x + αd)'d| <= 0.9 |g'd|,
//
// with the Moré–Thuente algorithm, as the reference routine lnsrlb does. The
// step is capped so that x + αd stays in the box (α <= 1 on the first
// iteration of a constrained problem), the first trial is α = 1 except on the
// first iteration of a problem that is not fully boxed, where it is
// min(1/‖d‖, cap), and at most 20 finite trial points are evaluated.
//
// A trial point where f or the gradient is not finite is never accepted: the
// step is halved and the search restarted with that step as its upper limit.
// If the Moré–Thuente search ends with a warning at a point that does not
// lower f, the best lower trial point is accepted instead, or the search
// fails; the reference code would accept it.
func (sv *solver) lineSearch(x []float64, f float64, g, z []float64, iter int) lsResult {
	b := sv.box
	n := b.n
	d := make([]float64, n)
	for i := range d {
		d[i] = z[i] - x[i]
	}
	res := lsResult{bestF: math.Inf(1)}
	gd := dot(g, d)
	if !(gd < 0) {
		res.outcome = lsFailed
		return res
	}
	dnorm := math.Sqrt(dot(d, d))

	// Largest step keeping x + αd in the box.
	stpmx := lsBigStep
	if b.constrained {
		if iter == 0 {
			stpmx = 1
		} else {
			for i, di := range d {
				if di < 0 && b.hasLo[i] {
					gap := b.lo[i] - x[i]
					if gap >= 0 {
						stpmx = 0
					} else if di*stpmx < gap {
						stpmx = gap / di
					}
				} else if di > 0 && b.hasHi[i] {
					gap := b.hi[i] - x[i]
					if gap <= 0 {
						stpmx = 0
					} else if di*stpmx > gap {
						stpmx = gap / di
					}
				}
			}
		}
	}
	if !(stpmx > 0) {
		res.outcome = lsFailed
		return res
	}
	stp := 1.0
	if iter == 0 && !b.boxed {
		stp = math.Min(1/dnorm, stpmx)
	}
	stp = math.Min(stp, stpmx)

	var mt moreThuente
	mt.init(f, gd, stp, 0, stpmx)
	trials, nonFinite := 0, 0
	xt := make([]float64, n)
	for {
		if trials >= lsMaxTrials {
			res.outcome = lsFailed
			return res
		}
		if sv.ev.exhausted() {
			res.outcome = lsOutOfEvals
			return res
		}
		// Trial point, kept in the box despite rounding.
		if stp == 1 {
			copy(xt, z)
		} else {
			for i := range xt {
				xt[i] = x[i] + stp*d[i]
			}
		}
		b.clamp(xt)
		ft, gt, err := sv.ev.eval(xt)
		if err != nil {
			res.outcome = lsAborted
			res.err = err
			return res
		}
		if !finitePoint(ft, gt) {
			nonFinite++
			if nonFinite > lsMaxNonFinite {
				res.outcome = lsFailed
				return res
			}
			stp *= 0.5
			mt.init(f, gd, stp, 0, stp)
			continue
		}
		trials++
		if ft < res.bestF {
			res.bestX = append([]float64(nil), xt...)
			res.bestF, res.bestG = ft, gt
		}
		next, status := mt.iterate(ft, dot(gt, d), stp)
		if status != mtSearching {
			switch {
			case ft <= f:
				res.outcome = lsOK
				res.x, res.f, res.g = append([]float64(nil), xt...), ft, gt
			case res.bestF < f:
				res.outcome = lsOK
				res.x, res.f, res.g = res.bestX, res.bestF, res.bestG
			default:
				res.outcome = lsFailed
			}
			return res
		}
		stp = next
	}
}

// mtStatus is the state reported by moreThuente.iterate.
type mtStatus int

const (
	mtSearching mtStatus = iota // evaluate at the returned step and call iterate again
	mtConverged                 // the current step satisfies the strong Wolfe conditions
	mtWarning                   // no further progress is possible (rounding, interval too small, or a step limit reached)
)

// moreThuente is the line search of [MT] in the reverse-communication form of
// the MINPACK-2 routine dcsrch. It finds a step α in [stpmin, stpmax] with
//
//	φ(α) <= φ(0) + ftol α φ'(0)   and   |φ'(α)| <= gtol |φ'(0)|
//
// for φ(α) = f(x + αd), keeping an interval [stx, sty] that brackets such a
// step once one is known. Before a step satisfying φ(α) <= φ(0) + ftol α φ'(0)
// and φ'(α) >= 0 has been seen (stage 1), the modified function
// ψ(α) = φ(α) − φ(0) − ftol α φ'(0) drives the step selection.
type moreThuente struct {
	ftol, gtol, xtol float64
	stpmin, stpmax   float64

	brackt              bool
	stage               int
	finit, ginit, gtest float64
	stx, fx, gx         float64 // step with the least function value so far
	sty, fy, gy         float64 // other endpoint of the interval
	stmin, stmax        float64 // current limits for the next step
	width, width1       float64
}

// init starts a search from φ(0) = f0, φ'(0) = g0 with first trial step stp.
// It requires g0 < 0 and stpmin <= stp <= stpmax.
func (ls *moreThuente) init(f0, g0, stp, stpmin, stpmax float64) {
	*ls = moreThuente{
		ftol:   lsFTol,
		gtol:   lsGTol,
		xtol:   lsXTol,
		stpmin: stpmin,
		stpmax: stpmax,
		stage:  1,
		finit:  f0,
		ginit:  g0,
		gtest:  lsFTol * g0,
		width:  stpmax - stpmin,
		stx:    0,
		fx:     f0,
		gx:     g0,
		sty:    0,
		fy:     f0,
		gy:     g0,
		stmin:  0,
		stmax:  stp + mtExtrapolationUpper*stp,
	}
	ls.width1 = ls.width / 0.5
}

// iterate takes φ(stp) = f and φ'(stp) = g at the current trial step and
// returns either mtConverged or mtWarning (stop; stp is the final step) or
// mtSearching with the next trial step.
func (ls *moreThuente) iterate(f, g, stp float64) (float64, mtStatus) {
	ftest := ls.finit + stp*ls.gtest
	if ls.stage == 1 && f <= ftest && g >= 0 {
		ls.stage = 2
	}

	// Tests for warnings and convergence, in the order of dcsrch (the last
	// one that applies wins, so convergence takes precedence).
	status := mtSearching
	if ls.brackt && (stp <= ls.stmin || stp >= ls.stmax) {
		status = mtWarning // rounding errors prevent progress
	}
	if ls.brackt && ls.stmax-ls.stmin <= ls.xtol*ls.stmax {
		status = mtWarning // xtol test satisfied
	}
	if stp == ls.stpmax && f <= ftest && g <= ls.gtest {
		status = mtWarning // stp = stpmax
	}
	if stp == ls.stpmin && (f > ftest || g >= ls.gtest) {
		status = mtWarning // stp = stpmin
	}
	if f <= ftest && math.Abs(g) <= ls.gtol*(-ls.ginit) {
		status = mtConverged
	}
	if status != mtSearching {
		return stp, status
	}

	bx := mtPoint{ls.stx, ls.fx, ls.gx}
	by := mtPoint{ls.sty, ls.fy, ls.gy}
	if ls.stage == 1 && f <= ls.fx && f > ftest {
		// A lower function value without sufficient decrease: use the
		// modified function ψ to choose the step.
		gt := ls.gtest
		mx := mtPoint{bx.stp, bx.f - bx.stp*gt, bx.g - gt}
		my := mtPoint{by.stp, by.f - by.stp*gt, by.g - gt}
		mp := mtPoint{stp, f - stp*gt, g - gt}
		stp = dcstep(&mx, &my, mp, &ls.brackt, ls.stmin, ls.stmax)
		bx = mtPoint{mx.stp, mx.f + mx.stp*gt, mx.g + gt}
		by = mtPoint{my.stp, my.f + my.stp*gt, my.g + gt}
	} else {
		stp = dcstep(&bx, &by, mtPoint{stp, f, g}, &ls.brackt, ls.stmin, ls.stmax)
	}
	ls.stx, ls.fx, ls.gx = bx.stp, bx.f, bx.g
	ls.sty, ls.fy, ls.gy = by.stp, by.f, by.g

	// Bisect if the bracket did not shrink enough in two steps.
	if ls.brackt {
		if math.Abs(ls.sty-ls.stx) >= 0.66*ls.width1 {
			stp = ls.stx + 0.5*(ls.sty-ls.stx)
		}
		ls.width1 = ls.width
		ls.width = math.Abs(ls.sty - ls.stx)
	}

	// Limits for the next step.
	if ls.brackt {
		ls.stmin = math.Min(ls.stx, ls.sty)
		ls.stmax = math.Max(ls.stx, ls.sty)
	} else {
		ls.stmin = stp + mtExtrapolationLower*(stp-ls.stx)
		ls.stmax = stp + mtExtrapolationUpper*(stp-ls.stx)
	}
	stp = math.Max(stp, ls.stpmin)
	stp = math.Min(stp, ls.stpmax)

	// If no further progress is possible, fall back to the best step.
	if ls.brackt && (stp <= ls.stmin || stp >= ls.stmax || ls.stmax-ls.stmin <= ls.xtol*ls.stmax) {
		stp = ls.stx
	}
	return stp, mtSearching
}

// mtPoint is a step with its function value and directional derivative.
type mtPoint struct {
	stp, f, g float64
}

// dcstep computes a safeguarded trial step from the best point x, the other
// interval endpoint y and the current trial point p, and updates the interval
// [x, y] so that it keeps containing a step satisfying the sufficient
// decrease and curvature conditions ([MT] Section 4; MINPACK-2 dcstep). The
// step is the minimizer of a cubic or quadratic interpolant chosen according
// to four cases; stpmin and stpmax bound it while no minimizer is bracketed.
// x.g must be negative in the direction of p.stp − x.stp.
func dcstep(x, y *mtPoint, p mtPoint, brackt *bool, stpmin, stpmax float64) float64 {
	sgnd := p.g * (x.g / math.Abs(x.g))
	var stpf float64
	switch {
	case p.f > x.f:
		// Case 1: a higher function value. The minimum is bracketed. Take
		// the cubic step if it is closer to x, else the average of the
		// cubic and quadratic steps.
		theta := 3*(x.f-p.f)/(p.stp-x.stp) + x.g + p.g
		s := math.Max(math.Abs(theta), math.Max(math.Abs(x.g), math.Abs(p.g)))
		gamma := s * math.Sqrt((theta/s)*(theta/s)-(x.g/s)*(p.g/s))
		if p.stp < x.stp {
			gamma = -gamma
		}
		pp := (gamma - x.g) + theta
		q := ((gamma - x.g) + gamma) + p.g
		r := pp / q
		stpc := x.stp + r*(p.stp-x.stp)
		stpq := x.stp + ((x.g/((x.f-p.f)/(p.stp-x.stp)+x.g))/2)*(p.stp-x.stp)
		if math.Abs(stpc-x.stp) < math.Abs(stpq-x.stp) {
			stpf = stpc
		} else {
			stpf = stpc + (stpq-stpc)/2
		}
		*brackt = true

	case sgnd < 0:
		// Case 2: a lower function value and derivatives of opposite
		// sign. The minimum is bracketed. Take the cubic step if it is
		// farther from p than the secant step, else the secant step.
		theta := 3*(x.f-p.f)/(p.stp-x.stp) + x.g + p.g
		s := math.Max(math.Abs(theta), math.Max(math.Abs(x.g), math.Abs(p.g)))
		gamma := s * math.Sqrt((theta/s)*(theta/s)-(x.g/s)*(p.g/s))
		if p.stp > x.stp {
			gamma = -gamma
		}
		pp := (gamma - p.g) + theta
		q := ((gamma - p.g) + gamma) + x.g
		r := pp / q
		stpc := p.stp + r*(x.stp-p.stp)
		stpq := p.stp + (p.g/(p.g-x.g))*(x.stp-p.stp)
		if math.Abs(stpc-p.stp) > math.Abs(stpq-p.stp) {
			stpf = stpc
		} else {
			stpf = stpq
		}
		*brackt = true

	case math.Abs(p.g) < math.Abs(x.g):
		// Case 3: a lower function value, derivatives of the same sign,
		// and the magnitude of the derivative decreases. The cubic step
		// is used only if the cubic tends to infinity in the direction of
		// the step or its minimum is beyond p; otherwise the secant step.
		theta := 3*(x.f-p.f)/(p.stp-x.stp) + x.g + p.g
		s := math.Max(math.Abs(theta), math.Max(math.Abs(x.g), math.Abs(p.g)))
		gamma := s * math.Sqrt(math.Max(0, (theta/s)*(theta/s)-(x.g/s)*(p.g/s)))
		if p.stp > x.stp {
			gamma = -gamma
		}
		pp := (gamma - p.g) + theta
		q := (gamma + (x.g - p.g)) + gamma
		r := pp / q
		var stpc float64
		switch {
		case r < 0 && gamma != 0:
			stpc = p.stp + r*(x.stp-p.stp)
		case p.stp > x.stp:
			stpc = stpmax
		default:
			stpc = stpmin
		}
		stpq := p.stp + (p.g/(p.g-x.g))*(x.stp-p.stp)
		if *brackt {
			// Take the step closer to p, but stay well inside the bracket.
			if math.Abs(stpc-p.stp) < math.Abs(stpq-p.stp) {
				stpf = stpc
			} else {
				stpf = stpq
			}
			if p.stp > x.stp {
				stpf = math.Min(p.stp+0.66*(y.stp-p.stp), stpf)
			} else {
				stpf = math.Max(p.stp+0.66*(y.stp-p.stp), stpf)
			}
		} else {
			// Take the step farther from p, within the limits.
			if math.Abs(stpc-p.stp) > math.Abs(stpq-p.stp) {
				stpf = stpc
			} else {
				stpf = stpq
			}
			stpf = math.Min(stpmax, stpf)
			stpf = math.Max(stpmin, stpf)
		}

	default:
		// Case 4: a lower function value, derivatives of the same sign,
		// and the magnitude of the derivative does not decrease. If the
		// minimum is not bracketed the step is stpmin or stpmax, otherwise
		// the cubic step through p and y.
		switch {
		case *brackt:
			theta := 3*(p.f-y.f)/(y.stp-p.stp) + y.g + p.g
			s := math.Max(math.Abs(theta), math.Max(math.Abs(y.g), math.Abs(p.g)))
			gamma := s * math.Sqrt((theta/s)*(theta/s)-(y.g/s)*(p.g/s))
			if p.stp > y.stp {
				gamma = -gamma
			}
			pp := (gamma - p.g) + theta
			q := ((gamma - p.g) + gamma) + y.g
			r := pp / q
			stpf = p.stp + r*(y.stp-p.stp)
		case p.stp > x.stp:
			stpf = stpmax
		default:
			stpf = stpmin
		}
	}

	// Update the interval that contains a minimizer.
	if p.f > x.f {
		*y = p
	} else {
		if sgnd < 0 {
			*y = *x
		}
		*x = p
	}
	return stpf
}
