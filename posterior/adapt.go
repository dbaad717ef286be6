package posterior

import (
	"errors"
	"math"
)

// dualAveraging adapts log ε by Nesterov's dual averaging so that the mean acceptance
// statistic approaches delta (Hoffman & Gelman 2014, Sec. 3.2; Stan's stepsize_adaptation).
type dualAveraging struct {
	mu, delta, gamma, kappa, t0 float64
	counter, sBar, xBar         float64
}

func (d *dualAveraging) restart() { d.counter, d.sBar, d.xBar = 0, 0, 0 }

// learn records the acceptance statistic of one transition and returns the next step size.
func (d *dualAveraging) learn(acceptStat float64) float64 {
	d.counter++
	acceptStat = math.Min(acceptStat, 1)
	eta := 1 / (d.counter + d.t0)
	d.sBar = (1-eta)*d.sBar + eta*(d.delta-acceptStat)
	x := d.mu - d.sBar*math.Sqrt(d.counter)/d.gamma
	xEta := math.Pow(d.counter, -d.kappa)
	d.xBar = (1-xEta)*d.xBar + xEta*x
	return math.Exp(x)
}

// final returns the step size after adaptation: the exponential of the averaged iterate.
func (d *dualAveraging) final() float64 { return math.Exp(d.xBar) }

// varAdapter estimates the inverse metric from the draws of Stan's slow windows: after an
// initial buffer of fast (step-size only) adaptation, windows of doubling length starting at
// base, the last one stretched to end where the terminal buffer begins. At the end of each
// window the inverse metric becomes the window's regularized sample variances (diagonal) or
// covariance (dense), shrunk towards 10⁻³·I as Stan does, or towards prior where one is set
// (Options.InitMetric; priorDrawsPerParameter).
type varAdapter struct {
	enabled, dense                     bool
	prior                              [][]float64 // the shrinkage target; nil: 10⁻³·I
	maxWarmup                          int         // the warm-up may grow to this (Options.MaxWarmup)
	warmup, initBuffer, termBuffer     int
	base, counter, windowSize, nextEnd int

	n    int // Welford accumulators of the current window
	mean []float64
	m2   [][]float64 // co-moments; only the diagonal when not dense
	dx   []float64
}

// newVarAdapter returns the adapter of a warm-up of the given length. As in Stan, no metric
// is estimated when warmup < 20, and when the buffers and the first window do not fit they
// become 15%, 75% and 10% of the warm-up.
func newVarAdapter(dim, warmup, initBuffer, termBuffer, base int, dense bool) *varAdapter {
	v := &varAdapter{dense: dense, mean: make([]float64, dim), m2: make([][]float64, dim), dx: make([]float64, dim)}
	for i := range v.m2 {
		v.m2[i] = make([]float64, dim)
	}
	if warmup < 20 {
		return v
	}
	v.enabled = true
	v.warmup = warmup
	if initBuffer+base+termBuffer > warmup {
		initBuffer = int(0.15 * float64(warmup))
		termBuffer = int(0.1 * float64(warmup))
		base = warmup - (initBuffer + termBuffer)
	}
	v.initBuffer, v.termBuffer, v.base = initBuffer, termBuffer, base
	v.windowSize = base
	v.nextEnd = initBuffer + base - 1
	return v
}

func (v *varAdapter) inWindow() bool {
	return v.counter >= v.initBuffer && v.counter < v.warmup-v.termBuffer && v.counter != v.warmup
}

func (v *varAdapter) endOfWindow() bool {
	return v.counter == v.nextEnd && v.counter != v.warmup
}

func (v *varAdapter) computeNextWindow() {
	last := v.warmup - v.termBuffer - 1
	if v.nextEnd == last {
		return
	}
	v.windowSize *= 2
	v.nextEnd = v.counter + v.windowSize
	if v.nextEnd == last {
		return
	}
	// Stretch this window to the end if the following one would not fit.
	if v.nextEnd+2*v.windowSize >= v.warmup-v.termBuffer {
		v.nextEnd = last
	}
}

var errMetricOverflow = errors.New("numerical overflow in metric adaptation: the posterior may be too wide or improper")

// windowStats are the Welford accumulators of one chain's draws in one slow window: their
// number, mean and co-moments (only the diagonal when the metric is diagonal).
type windowStats struct {
	n    int
	mean []float64
	m2   [][]float64
}

// learn records the draw q of one warm-up iteration and, at the end of a window, sets the
// new inverse metric of m and returns true. With pool nil the estimate is the window's own
// draws'; else pool is given the window's accumulators and returns those of every chain of
// the group that reached the window's end (Options.CrossChain), and the estimate is the
// covariance of all their draws about their common mean.
func (v *varAdapter) learn(q []float64, m *metric, pool func(windowStats) ([]windowStats, error)) (bool, error) {
	if !v.enabled {
		return false, nil
	}
	defer func() { v.counter++ }()
	if v.inWindow() {
		v.n++
		for i, x := range q {
			v.dx[i] = x - v.mean[i]
			v.mean[i] += v.dx[i] / float64(v.n)
		}
		for i, x := range q {
			if !v.dense {
				v.m2[i][i] += v.dx[i] * (x - v.mean[i])
				continue
			}
			for j := range q {
				v.m2[i][j] += v.dx[i] * (q[j] - v.mean[j])
			}
		}
	}
	if !v.endOfWindow() {
		return false, nil
	}
	v.computeNextWindow()
	own := windowStats{n: v.n, mean: clone(v.mean), m2: make([][]float64, len(q))}
	for i := range v.m2 {
		own.m2[i] = clone(v.m2[i])
		clear(v.m2[i])
	}
	v.n = 0
	clear(v.mean)
	all := []windowStats{own}
	if pool != nil {
		var err error
		if all, err = pool(own); err != nil {
			return false, err
		}
	}
	cov, err := v.estimate(all)
	if err != nil {
		return false, err
	}
	if v.nextEnd == v.counter && own.n > 0 && v.warmup+own.n <= v.maxWarmup && windowRHat(all) > extendRHat {
		// The last window ended with the chains still apart: one more window of its length.
		v.warmup += own.n
		v.nextEnd = v.counter + own.n
	}
	if !v.dense {
		for i := range cov {
			m.diag[i] = cov[i][i]
		}
		return true, nil
	}
	if err := m.setDense(cov); err != nil {
		return false, err
	}
	return true, nil
}

// extendRHat is the R-hat of the chains' last window draws beyond which the warm-up goes on
// (Options.MaxWarmup): the threshold at which sample warns that the chains disagree.
const extendRHat = 1.1

// windowRHat returns the largest potential scale reduction over the parameters of the draws
// that stats describe, one chain each (Gelman et al., BDA3, without splitting the chains), or
// NaN with fewer than two chains or draws.
func windowRHat(stats []windowStats) float64 {
	if len(stats) < 2 {
		return math.NaN()
	}
	worst := math.NaN()
	for i := range stats[0].mean {
		var within, mean float64
		n := 0
		for _, st := range stats {
			if st.n < 2 {
				return math.NaN()
			}
			within += st.m2[i][i] / float64(st.n-1)
			mean += st.mean[i]
			n += st.n
		}
		m := float64(len(stats))
		within /= m
		mean /= m
		var between float64 // the variance of the chains' means
		for _, st := range stats {
			between += (st.mean[i] - mean) * (st.mean[i] - mean) / (m - 1)
		}
		per := float64(n) / m
		r := math.Sqrt(((per-1)/per*within + between) / within)
		if !(r <= worst) {
			worst = r
		}
	}
	return worst
}

// priorDrawsPerParameter is the weight of an initial metric (Options.InitMetric) in each
// window's estimate, in draws per parameter: a window's estimate is shrunk towards it as
// towards priorDrawsPerParameter × dim draws of it. A dense covariance from the few draws of a
// short window is noisy (from n draws of d parameters its smallest eigenvalue comes out about
// (1 − √(d/n))² of the truth, a third for one chain's 25 draws of 5 parameters), and the
// step size must fit the direction it underestimates most; a Laplace approximation that is
// close keeps those directions where they are, while a posterior wider than it (a ridge)
// still widens the metric by n/(n + w) of its variance. With 5 draws in all instead of 20 per
// parameter, 10 subjects × 4 chains × (150 warm-up + 100 draws) took 41 % more likelihood
// calls on pendulum and reaching for a smaller ESS (docs/posterior.md, "How much the start
// weighs").
const priorDrawsPerParameter = 20

// estimate returns the regularized covariance of the draws that the accumulators of stats
// describe together (their co-moments about the pooled mean: the chains' own plus the spread of
// their means), n/(n + w) of it and w/(n + w) of the shrinkage target, n the draws in all: w is
// 5 towards Stan's 10⁻³·I, and priorDrawsPerParameter × dim towards an initial metric.
func (v *varAdapter) estimate(stats []windowStats) ([][]float64, error) {
	dim := len(v.mean)
	total := 0
	mean := make([]float64, dim)
	for _, st := range stats {
		total += st.n
		for i := range mean {
			mean[i] += float64(st.n) * st.mean[i]
		}
	}
	if total > 0 {
		for i := range mean {
			mean[i] /= float64(total)
		}
	}
	n := float64(total)
	w := 5.0
	if v.prior != nil {
		w = priorDrawsPerParameter * float64(dim)
	}
	cov := make([][]float64, dim)
	for i := range cov {
		cov[i] = make([]float64, dim)
		for j := range cov[i] {
			if i != j && !v.dense {
				continue
			}
			if total > 1 {
				var m2 float64
				for _, st := range stats {
					m2 += st.m2[i][j] + float64(st.n)*(st.mean[i]-mean[i])*(st.mean[j]-mean[j])
				}
				cov[i][j] = n / (n + w) * m2 / (n - 1)
			}
			switch {
			case v.prior != nil:
				cov[i][j] += w / (n + w) * v.prior[i][j]
			case i == j:
				cov[i][j] += 1e-3 * w / (n + w)
			}
			if !finite(cov[i][j]) {
				return nil, errMetricOverflow
			}
		}
	}
	for i := range cov { // the co-moments' rounding differs between (i, j) and (j, i)
		for j := range i {
			cov[i][j] = (cov[i][j] + cov[j][i]) / 2
			cov[j][i] = cov[i][j]
		}
	}
	return cov, nil
}
