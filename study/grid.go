package study

import (
	"fmt"
	"math"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
)

// Axis is one varied parameter of a log-likelihood grid.
type Axis struct {
	Index  int // the parameter's index in the task's parameters
	Param  models.Param
	Values []float64 // natural units
}

// NewAxis returns the axis of the parameter at index i of spec with n ≥ 2 values from lo to
// hi (natural units, lo < hi, both inside the parameter's domain), evenly spaced in the
// parameter's fitting scale; the first and the last value are lo and hi exactly.
func NewAxis(spec models.Spec, i int, lo, hi float64, n int) Axis {
	p := spec.Params[i]
	ax := Axis{Index: i, Param: p}
	a, b := p.ToScale(lo), p.ToScale(hi)
	for j := range n {
		ax.Values = append(ax.Values, p.FromScale(a+(b-a)*float64(j)/float64(n-1)))
	}
	ax.Values[0], ax.Values[n-1] = lo, hi
	return ax
}

// Points returns the parameter vectors of the grid of the axes x and y, in the fitting
// scales of spec's parameters: every pair of their values, row-major over (y, x), the other
// parameters at base (natural units, spec's order).
func Points(spec models.Spec, base []float64, x, y Axis) [][]float64 {
	var thetas [][]float64
	for _, vy := range y.Values {
		for _, vx := range x.Values {
			th := append([]float64(nil), base...)
			th[x.Index], th[y.Index] = vx, vy
			thetas = append(thetas, toScale(spec, th))
		}
	}
	return thetas
}

// LogLiks returns the log-likelihood under e of one subject's trials, [trial][t][state], at
// each parameter vector of thetas (fitting scales, e.Spec()'s order), evaluating at most
// batch vectors × trials per graph run, and at least one vector: every run has the same
// shape, the last padded, so the graph is compiled once. A value that is not finite is −Inf
// (likelihood.Evaluator.Eval); errors are the evaluator's.
func LogLiks(e *likelihood.Evaluator, trials [][][]float64, thetas [][]float64, batch int) ([]float64, error) {
	per := min(max(1, batch/len(trials)), len(thetas))
	rows := make([][][][]float64, per)
	for i := range rows {
		rows[i] = trials
	}
	d, err := e.Prepare(rows, 0)
	if err != nil {
		return nil, err
	}
	ll := make([]float64, 0, len(thetas))
	for start := 0; start < len(thetas); start += per {
		chunk := make([][]float64, per)
		for i := range chunk {
			chunk[i] = thetas[min(start+i, len(thetas)-1)] // pad the last chunk: same shape, same graph
		}
		v, _, err := e.Eval(d, chunk)
		if err != nil {
			return nil, err
		}
		ll = append(ll, v[:min(per, len(thetas)-start)]...)
	}
	return ll, nil
}

// Maximum returns the index of the greatest of ll, the first of equals; a value after −Inf
// replaces it whatever it is. It returns 0 for an empty ll.
func Maximum(ll []float64) int {
	best := 0
	for i, v := range ll {
		if v > ll[best] || math.IsInf(ll[best], -1) {
			best = i
		}
	}
	return best
}

// WriteGrid writes the log-likelihoods ll of the grid of the axes x and y of the task named
// task (row-major over (y, x), as Points) to a new CSV file at path, the values of x, y and
// the log-likelihood in each row, and draws them as a heat map at png over the parameters'
// fitting scales, marking the maximum (Maximum) and, unless nil, the true values truth of x
// and y (natural units). It returns the index of the maximum in ll.
func WriteGrid(path, png, task string, x, y Axis, ll, truth []float64) (best int, err error) {
	rows := [][]string{{x.Param.Name, y.Param.Name, "loglik"}}
	nx := len(x.Values)
	g := plots.Grid{Values: make([][]float64, len(y.Values))}
	for _, vx := range x.Values {
		g.Xs = append(g.Xs, x.Param.ToScale(vx))
	}
	for i, vy := range y.Values {
		g.Ys = append(g.Ys, y.Param.ToScale(vy))
		g.Values[i] = append([]float64(nil), ll[i*nx:(i+1)*nx]...)
		for j, vx := range x.Values {
			rows = append(rows, []string{fmtFloat(vx), fmtFloat(vy), fmtFloat(ll[i*nx+j])})
		}
	}
	if err := writeCSV(path, rows); err != nil {
		return 0, err
	}
	best = Maximum(ll)
	bx, by := x.Values[best%nx], y.Values[best/nx]
	marks := []plots.Mark{plots.Cross(x.Param.ToScale(bx), y.Param.ToScale(by), "maximum")}
	if truth != nil {
		marks = append([]plots.Mark{plots.Point(x.Param.ToScale(truth[0]), y.Param.ToScale(truth[1]), "truth")}, marks...)
	}
	if err := plots.HeatMap(png, g, fmt.Sprintf("%s log-likelihood", task), axisLabel(x.Param), axisLabel(y.Param), 80, marks...); err != nil {
		return 0, err
	}
	return best, nil
}

// axisLabel names a parameter's fitting scale on an axis.
func axisLabel(p models.Param) string {
	if p.Scale == models.Log10Scale {
		return "log10 " + p.Name
	}
	return p.Name
}

// LogLik returns the log-likelihood under e of each subject of set at theta (natural units,
// e.Spec()'s order), ll[subject], and its gradient with respect to the parameters in their
// fitting scales, grad[subject][parameter]. A log-likelihood that is not finite is −Inf with
// a NaN gradient (likelihood.Evaluator.Eval); errors are the evaluator's.
func LogLik(e *likelihood.Evaluator, set *data.Set, theta []float64) (ll []float64, grad [][]float64, err error) {
	spec := e.Spec()
	rows := make([][][][]float64, len(set.Subjects))
	thetas := make([][]float64, len(set.Subjects))
	for i, s := range set.Subjects {
		rows[i] = s.States()
		thetas[i] = toScale(spec, theta)
	}
	d, err := e.Prepare(rows, 0)
	if err != nil {
		return nil, nil, err
	}
	return e.Eval(d, thetas)
}

// toScale converts natural parameter values, in spec's order, to their fitting scales.
func toScale(spec models.Spec, natural []float64) []float64 {
	out := make([]float64, len(natural))
	for i, v := range natural {
		out[i] = spec.Params[i].ToScale(v)
	}
	return out
}
