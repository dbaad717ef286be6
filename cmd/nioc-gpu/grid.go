package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
)

func init() {
	register(command{name: "grid", summary: "evaluate the log-likelihood on a 2-D parameter grid (CSV + PNG heat map)", run: runGrid})
}

// gridAxis is one varied parameter: n values from lo to hi, evenly spaced in its scale.
type gridAxis struct {
	index  int
	param  models.Param
	values []float64 // natural units
}

func parseVary(spec models.Spec, s string, n int) ([]gridAxis, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return nil, usagef("--vary needs exactly two parameters, name:lo:hi,name:lo:hi")
	}
	var axes []gridAxis
	for _, part := range parts {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) != 3 {
			return nil, usagef("--vary: %q is not name:lo:hi", part)
		}
		idx := paramIndex(spec, f[0])
		if idx < 0 {
			if f[0] == likelihood.TemperatureParam(0).Name {
				return nil, usagef("--vary temperature: the policy noise's temperature is a parameter of the likelihood only with --temperature fit (this run holds it fixed)")
			}
			return nil, usagef("--vary: task %s has no parameter %q; its parameters are %s", spec.Name, f[0], strings.Join(spec.ParamNames(), ", "))
		}
		if len(axes) == 1 && axes[0].index == idx {
			return nil, usagef("--vary: parameter %s given twice", f[0])
		}
		lo, err1 := strconv.ParseFloat(f[1], 64)
		hi, err2 := strconv.ParseFloat(f[2], 64)
		p := spec.Params[idx]
		if err1 != nil || err2 != nil || !(lo < hi) {
			return nil, usagef("--vary %s: need numbers lo < hi, got %q:%q", f[0], f[1], f[2])
		}
		if err := p.Validate(lo); err != nil {
			return nil, usagef("--vary %s: %v", f[0], err)
		}
		if p.Scale == models.Log10Scale && lo <= 0 {
			return nil, usagef("--vary %s: a log10-scale parameter needs lo > 0", f[0])
		}
		ax := gridAxis{index: idx, param: p}
		a, b := p.ToScale(lo), p.ToScale(hi)
		for i := range n {
			ax.values = append(ax.values, p.FromScale(a+(b-a)*float64(i)/float64(n-1)))
		}
		ax.values[0], ax.values[n-1] = lo, hi // exactly as given
		axes = append(axes, ax)
	}
	return axes, nil
}

func runGrid(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("grid", "--task NAME --data FILE.csv --vary name:lo:hi,name:lo:hi [--n 25] [--params name=value,...] [--force] --out grid.csv", stderr)
	var tf taskFlags
	tf.register(fs, true)
	dataPath := fs.String("data", "", "trajectory CSV")
	subject := fs.String("subject", "", "the `ID` of the subject to use when the file has several")
	vary := fs.String("vary", "", "the two parameters to vary and their ranges in natural units, name:lo:hi,name:lo:hi (evenly spaced in each parameter's scale)")
	n := fs.Int("n", 25, "grid points per parameter")
	params := fs.String("params", "", "values of the other parameters, name=value,... (default: the task's defaults)")
	truth := fs.String("truth", "", "true values of the varied parameters to mark, `name=value,...`")
	batch := fs.Int("batch", 2500, "grid points × trials evaluated per graph run (bounds memory)")
	out := fs.String("out", "", "output CSV; the heat map is written beside it with extension .png")
	force := fs.Bool("force", false, "replace --out and its .png if they exist")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	if err := required(fs, "data", "vary", "out"); err != nil {
		return err
	}
	if err := refuseDir("out", *out); err != nil {
		return err
	}
	if *n < 2 {
		return usagef("--n must be >= 2")
	}
	if *batch < 1 {
		return usagef("--batch must be >= 1, got %d", *batch)
	}
	spec := m.Spec()
	opts, err := tf.likelihoodOptions(spec)
	if err != nil {
		return err
	}
	if opts.FitTemperature { // θ includes the temperature, which --vary may vary
		spec.Params = append(slices.Clone(spec.Params), likelihood.TemperatureParam(opts.Temperature))
	}
	base, err := paramValues(spec, *params, "params")
	if err != nil {
		return err
	}
	axes, err := parseVary(spec, *vary, *n)
	if err != nil {
		return err
	}
	opts.ValueOnly = true
	truthVals, err := parseTruth(*truth, axes)
	if err != nil {
		return err
	}
	if err := checkWritable(*out); err != nil {
		return err
	}
	png := strings.TrimSuffix(*out, ".csv") + ".png"
	for _, p := range []string{*out, png} {
		if sameFile(p, *dataPath) {
			return usagef("%s would overwrite the data file; choose another --out", p)
		}
	}
	if !*force {
		if err := refuseExisting(forceHint, *out, png); err != nil {
			return err
		}
	}
	set, err := readData(*dataPath, spec)
	if err != nil {
		return err
	}
	if err := noteLengths(stderr, set, spec, *dataPath); err != nil {
		return err
	}
	subj := set.Subjects[0]
	if *subject != "" {
		s, ok := set.Subject(*subject)
		if !ok {
			return fmt.Errorf("%s has no subject %q", *dataPath, *subject)
		}
		subj = *s
	} else if len(set.Subjects) > 1 {
		return usagef("%s has %d subjects: choose one with --subject", *dataPath, len(set.Subjects))
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	identifiable := e.Identifiable()
	for _, ax := range axes {
		if !identifiable[ax.index] {
			o := e.Options()
			return usagef("--vary %s: the likelihood (method %s, observe %s, planner %s) does not depend on it; its grid would be flat",
				ax.param.Name, o.Method, o.Observe, o.Planner)
		}
	}
	trials := trialsOf(subj)
	// All grid points, row-major over (second axis, first axis).
	var thetas [][]float64
	for _, y := range axes[1].values {
		for _, x := range axes[0].values {
			th := append([]float64(nil), base...)
			th[axes[0].index], th[axes[1].index] = x, y
			thetas = append(thetas, toScale(spec, th))
		}
	}
	per := max(1, *batch/len(trials))
	per = min(per, len(thetas))
	rows := make([][][][]float64, per)
	for i := range rows {
		rows[i] = trials
	}
	d, err := e.Prepare(rows, 0)
	if err != nil {
		return err
	}
	ll := make([]float64, 0, len(thetas))
	for start := 0; start < len(thetas); start += per {
		chunk := make([][]float64, per)
		for i := range chunk {
			chunk[i] = thetas[min(start+i, len(thetas)-1)] // pad the last chunk: same shape, same graph
		}
		v, _, err := e.Eval(d, chunk)
		if err != nil {
			return err
		}
		ll = append(ll, v[:min(per, len(thetas)-start)]...)
	}
	return writeGrid(*out, png, spec, axes, ll, truthVals, stderr)
}

// parseTruth parses --truth for the two varied parameters (nil if not given).
func parseTruth(truth string, axes []gridAxis) ([]float64, error) {
	if truth == "" {
		return nil, nil
	}
	names, vals, err := parseAssignments(truth, "truth")
	if err != nil {
		return nil, err
	}
	tv := map[string]float64{}
	for i, n := range names {
		tv[n] = vals[i]
	}
	out := make([]float64, 2)
	for i, ax := range axes {
		v, ok := tv[ax.param.Name]
		if !ok {
			return nil, usagef("--truth must give both %s and %s", axes[0].param.Name, axes[1].param.Name)
		}
		if err := ax.param.Validate(v); err != nil || (ax.param.Scale == models.Log10Scale && v <= 0) {
			return nil, usagef("--truth %s=%g: not a valid value for a %s-scale parameter", ax.param.Name, v, ax.param.Scale)
		}
		out[i] = v
	}
	return out, nil
}

func writeGrid(path, png string, spec models.Spec, axes []gridAxis, ll []float64, truth []float64, stderr io.Writer) error {
	rows := [][]string{{axes[0].param.Name, axes[1].param.Name, "loglik"}}
	nx := len(axes[0].values)
	best := 0
	g := plots.Grid{Values: make([][]float64, len(axes[1].values))}
	for j, x := range axes[0].values {
		_ = j
		g.Xs = append(g.Xs, axes[0].param.ToScale(x))
	}
	for i, y := range axes[1].values {
		g.Ys = append(g.Ys, axes[1].param.ToScale(y))
		g.Values[i] = make([]float64, nx)
		for j, x := range axes[0].values {
			v := ll[i*nx+j]
			g.Values[i][j] = v
			if v > ll[best] || math.IsInf(ll[best], -1) {
				best = i*nx + j
			}
			rows = append(rows, []string{fmtFloat(x), fmtFloat(y), fmtFloat(v)})
		}
	}
	if err := writeCSV(path, rows); err != nil {
		return err
	}
	bx, by := axes[0].values[best%nx], axes[1].values[best/nx]
	marks := []plots.Mark{plots.Cross(axes[0].param.ToScale(bx), axes[1].param.ToScale(by), "maximum")}
	if truth != nil {
		marks = append([]plots.Mark{plots.Point(axes[0].param.ToScale(truth[0]), axes[1].param.ToScale(truth[1]), "truth")}, marks...)
	}
	label := func(p models.Param) string {
		if p.Scale == models.Log10Scale {
			return "log10 " + p.Name
		}
		return p.Name
	}
	if err := plots.HeatMap(png, g, fmt.Sprintf("%s log-likelihood", spec.Name), label(axes[0].param), label(axes[1].param), 80, marks...); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "maximum at %s=%g, %s=%g (log-likelihood %g); wrote %s and %s\n",
		axes[0].param.Name, bx, axes[1].param.Name, by, ll[best], path, png)
	return nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
