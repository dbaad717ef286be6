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
// (Options.InitMetric).
type varAdapter struct {
	enabled, dense                     bool
	prior                              [][]float64 // the shrinkage target; nil: 10⁻³·I
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

// learn records the draw q of one warm-up iteration and, at the end of a window, sets the
// new inverse metric of m and returns true.
func (v *varAdapter) learn(q []float64, m *metric) (bool, error) {
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
	n := float64(v.n)
	cov := make([][]float64, len(q))
	for i := range cov {
		cov[i] = make([]float64, len(q))
		for j := range cov[i] {
			if i != j && !v.dense {
				continue
			}
			if v.n > 1 {
				cov[i][j] = n / (n + 5) * v.m2[i][j] / (n - 1)
			}
			switch {
			case v.prior != nil:
				cov[i][j] += 5 / (n + 5) * v.prior[i][j]
			case i == j:
				cov[i][j] += 1e-3 * 5 / (n + 5)
			}
			if !finite(cov[i][j]) {
				return false, errMetricOverflow
			}
		}
		clear(v.m2[i])
	}
	for i := range cov { // the co-moments' rounding differs between (i, j) and (j, i)
		for j := range i {
			cov[i][j] = (cov[i][j] + cov[j][i]) / 2
			cov[j][i] = cov[i][j]
		}
	}
	v.n = 0
	clear(v.mean)
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
