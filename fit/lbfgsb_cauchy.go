// L-BFGS-B ([BLNZ], see lbfgsb.go): the generalized Cauchy point and the subspace minimization.

package fit

import (
	"math"
	"sort"
)

// cauchyPoint computes the generalized Cauchy point x^c: the first local
// minimizer of the quadratic model
//
//	m(x + s) = f + g's + ½ s'Bs
//
// along the projected steepest-descent path x(t) = P(x − t g, lo, hi), t >= 0
// ([BLNZ] Section 4, Algorithm CP). The path is piecewise linear with a kink
// at each breakpoint t_i = (x_i − hi_i)/g_i (g_i < 0) or (x_i − lo_i)/g_i
// (g_i > 0) where variable i reaches a bound; the model is examined segment
// by segment, keeping its first and second directional derivatives f' and f”
// up to date with O(k²) work per segment through the compact form of B, as
// in Algorithm CP and the reference routine cauchy. Between breakpoints the
// model is the parabola f' Δt + ½ f” Δt², minimized at Δt* = −f'/f”.
//
// It returns x^c, the vector c = W'(x^c − x) needed by the subspace
// minimization, and free, which reports for each variable whether it is free
// at x^c (not held at a bound). The returned x^c lies in the box.
func (sv *solver) cauchyPoint(x, g []float64) (xcp, c []float64, free []bool) {
	b := sv.box
	n := b.n
	mem := sv.mem
	k := mem.k()
	theta := mem.theta

	xcp = append([]float64(nil), x...)
	c = make([]float64, 2*k)
	free = make([]bool, n)
	d := make([]float64, n) // Cauchy direction: −g on the variables that move

	type breakpoint struct {
		t float64
		i int
	}
	var bps []breakpoint
	allBounded := true // every moving variable eventually hits a bound
	moving := false
	f1 := 0.0 // f' = g'd at t = 0
	for i := range n {
		if b.fixed[i] {
			continue
		}
		gi := g[i]
		atLo := b.hasLo[i] && x[i] <= b.lo[i]
		atHi := b.hasHi[i] && x[i] >= b.hi[i]
		if (atLo && gi >= 0) || (atHi && gi <= 0) {
			// The path keeps this variable at its bound.
			continue
		}
		free[i] = true
		if gi == 0 {
			continue
		}
		d[i] = -gi
		f1 -= gi * gi
		moving = true
		switch {
		case gi > 0 && b.hasLo[i]:
			bps = append(bps, breakpoint{(x[i] - b.lo[i]) / gi, i})
		case gi < 0 && b.hasHi[i]:
			bps = append(bps, breakpoint{(x[i] - b.hi[i]) / gi, i})
		default:
			allBounded = false
		}
	}
	if !moving {
		return xcp, c, free
	}

	w := mem.wMatrix(n)
	p := make([]float64, 2*k) // p = W'd
	for i := range n {
		if d[i] != 0 {
			for a := range p {
				p[a] += w[i][a] * d[i]
			}
		}
	}
	f2org := -theta * f1 // d'(θI)d
	f2 := f2org - dot(p, mem.mulM(p))
	if !(f2 > 0) {
		f2 = machineEpsilon * f2org
	}
	dtm := -f1 / f2 // minimizer of the model on the current segment, relative to its start
	tsum := 0.0

	sort.SliceStable(bps, func(a, b int) bool { return bps[a].t < bps[b].t })
	tj := 0.0
	for nb, bp := range bps {
		tj0 := tj
		tj = bp.t
		dt := tj - tj0
		if dtm < dt {
			break // the minimizer lies inside this segment
		}
		// Move to the breakpoint and fix variable ibp at its bound.
		tsum += dt
		ibp := bp.i
		dibp := d[ibp]
		d[ibp] = 0
		var zibp float64 // x^c_b − x_b
		if dibp > 0 {
			zibp = b.hi[ibp] - x[ibp]
			xcp[ibp] = b.hi[ibp]
		} else {
			zibp = b.lo[ibp] - x[ibp]
			xcp[ibp] = b.lo[ibp]
		}
		free[ibp] = false

		// Update f' and f” for the next segment (g_b = −dibp):
		//   f'  ← f' + Δt f” + g_b² + θ g_b z_b − g_b w_b'Mc
		//   f”  ← f” − θ g_b² − 2 g_b w_b'Mp − g_b² w_b'Mw_b
		// with c ← c + Δt p beforehand and p ← p + g_b w_b afterwards.
		dibp2 := dibp * dibp
		f1 += dt*f2 + dibp2 - theta*dibp*zibp
		f2 -= theta * dibp2
		if k > 0 {
			for a := range c {
				c[a] += dt * p[a]
			}
			wb := w[ibp]
			v := mem.mulM(wb)
			wmc, wmp, wmw := dot(c, v), dot(p, v), dot(wb, v)
			for a := range p {
				p[a] -= dibp * wb[a]
			}
			f1 += dibp * wmc
			f2 += 2*dibp*wmp - dibp2*wmw
		}
		f2 = math.Max(machineEpsilon*f2org, f2)
		if nb < len(bps)-1 {
			dtm = -f1 / f2
		} else if allBounded {
			// Every moving variable is now at a bound: the path ends here.
			dtm = 0
		} else {
			dtm = -f1 / f2
		}
	}
	if !(dtm > 0) {
		dtm = 0
	}
	tsum += dtm
	for i := range n {
		if d[i] != 0 {
			xcp[i] = x[i] + tsum*d[i]
		}
	}
	b.clamp(xcp)
	for a := range c {
		c[a] += dtm * p[a]
	}
	return xcp, c, free
}

// subspaceMin minimizes the quadratic model over the variables that are free
// at the Cauchy point x^c, holding the others at their x^c values, by the
// direct primal method of [BLNZ] Section 5.1: with Z the columns of the
// identity for the free variables, it solves
//
//	(Z'BZ) d = −r,   r = Z'(g + B(x^c − x)) = Z'(g + θ(x^c − x) − W M c),
//
// where c = W'(x^c − x). The reduced Hessian Z'BZ = θI − (Z'W) M (W'Z) is
// formed explicitly and Cholesky-factored, which for the small dimensions
// targeted here is equivalent to the Sherman–Morrison–Woodbury formula of
// [BLNZ] Section 5.1.
//
// The unconstrained Newton point x^c + Z d is then projected onto the box;
// following [MN], the projection is kept unless it is not a descent
// direction from x, in which case the step is instead truncated at the first
// bound along d (the original [BLNZ] rule). It returns the resulting point,
// which lies in the box, and ok = false when the reduced Hessian is not
// numerically positive definite.
func (sv *solver) subspaceMin(x, g, xcp, c []float64, free []bool) ([]float64, bool) {
	b := sv.box
	mem := sv.mem
	theta := mem.theta
	w := mem.wMatrix(b.n)

	var idx []int
	for i, fr := range free {
		if fr {
			idx = append(idx, i)
		}
	}
	nf := len(idx)

	// Reduced gradient of the model at x^c.
	mc := mem.mulM(c)
	r := make([]float64, nf)
	for a, i := range idx {
		r[a] = g[i] + theta*(xcp[i]-x[i]) - dot(w[i], mc)
	}

	// Reduced Hessian Z'BZ.
	mw := make([][]float64, nf)
	for a, i := range idx {
		mw[a] = mem.mulM(w[i])
	}
	h := newMatrix(nf, nf)
	for a, i := range idx {
		for bb := range nf {
			h[a][bb] = -dot(w[i], mw[bb])
		}
		h[a][a] += theta
	}
	// Symmetrize against rounding.
	for a := range nf {
		for bb := a + 1; bb < nf; bb++ {
			v := 0.5 * (h[a][bb] + h[bb][a])
			h[a][bb], h[bb][a] = v, v
		}
	}
	l, ok := cholesky(h)
	if !ok {
		return nil, false
	}
	du := make([]float64, nf)
	for a := range du {
		du[a] = -r[a]
	}
	choleskySolve(l, du)
	if !allFinite(du) {
		return nil, false
	}

	// Projected Newton point [MN].
	xbar := append([]float64(nil), xcp...)
	hitBound := false
	for a, i := range idx {
		v := xcp[i] + du[a]
		if b.hasLo[i] && v <= b.lo[i] {
			v = b.lo[i]
			hitBound = true
		}
		if b.hasHi[i] && v >= b.hi[i] {
			v = b.hi[i]
			hitBound = true
		}
		xbar[i] = v
	}
	if !hitBound {
		return xbar, true
	}
	dd := 0.0
	for i := range xbar {
		dd += (xbar[i] - x[i]) * g[i]
	}
	if dd <= 0 {
		return xbar, true
	}

	// Not a descent direction: backtrack along du from x^c to the first bound.
	alpha := 1.0
	ibd := -1
	for a, i := range idx {
		dk := du[a]
		t := alpha
		switch {
		case dk < 0 && b.hasLo[i]:
			gap := b.lo[i] - xcp[i]
			if gap >= 0 {
				t = 0
			} else if dk*alpha < gap {
				t = gap / dk
			}
		case dk > 0 && b.hasHi[i]:
			gap := b.hi[i] - xcp[i]
			if gap <= 0 {
				t = 0
			} else if dk*alpha > gap {
				t = gap / dk
			}
		}
		if t < alpha {
			alpha = t
			ibd = a
		}
	}
	xbar = append(xbar[:0], xcp...)
	for a, i := range idx {
		xbar[i] = xcp[i] + alpha*du[a]
	}
	if ibd >= 0 {
		i := idx[ibd]
		if du[ibd] > 0 {
			xbar[i] = b.hi[i]
		} else {
			xbar[i] = b.lo[i]
		}
	}
	b.clamp(xbar)
	return xbar, true
}
