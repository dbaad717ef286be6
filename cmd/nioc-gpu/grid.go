package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "grid", summary: "evaluate the log-likelihood on a 2-D parameter grid (CSV + PNG heat map)", run: runGrid})
}

// parseVary parses --vary name:lo:hi,name:lo:hi into the grid's two axes of n values each.
func parseVary(spec models.Spec, s string, n int) ([]study.Axis, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return nil, usagef("--vary needs exactly two parameters, name:lo:hi,name:lo:hi")
	}
	var axes []study.Axis
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
		if len(axes) == 1 && axes[0].Index == idx {
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
		axes = append(axes, study.NewAxis(spec, idx, lo, hi, n))
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
	png, err := gridOutputs(*out, *dataPath, *force)
	if err != nil {
		return err
	}
	trials, err := gridSubject(*dataPath, *subject, spec, stderr)
	if err != nil {
		return err
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	if err := checkFlat(e, axes); err != nil {
		return err
	}
	ll, err := study.LogLiks(e, trials, study.Points(spec, base, axes[0], axes[1]), *batch)
	if err != nil {
		return err
	}
	return writeGrid(*out, png, spec, axes, ll, truthVals, stderr)
}

// writeGrid writes the grid's table to path and its heat map to png (study.WriteGrid) and
// says on stderr where its maximum is.
func writeGrid(path, png string, spec models.Spec, axes []study.Axis, ll, truth []float64, stderr io.Writer) error {
	best, err := study.WriteGrid(path, png, spec.Name, axes[0], axes[1], ll, truth)
	if err != nil {
		return err
	}
	nx := len(axes[0].Values)
	fmt.Fprintf(stderr, "maximum at %s=%g, %s=%g (log-likelihood %g); wrote %s and %s\n",
		axes[0].Param.Name, axes[0].Values[best%nx], axes[1].Param.Name, axes[1].Values[best/nx], ll[best], path, png)
	return nil
}

// checkFlat returns a usage error when the likelihood of e does not depend on the parameter
// of one of the axes: its grid would be flat.
func checkFlat(e *likelihood.Evaluator, axes []study.Axis) error {
	identifiable := e.Identifiable()
	for _, ax := range axes {
		if !identifiable[ax.Index] {
			o := e.Options()
			return usagef("--vary %s: the likelihood (method %s, observe %s, planner %s) does not depend on it; its grid would be flat",
				ax.Param.Name, o.Method, o.Observe, o.Planner)
		}
	}
	return nil
}

// gridOutputs checks grid's output, the CSV file out, and returns the heat map's path beside
// it; force is --force.
func gridOutputs(out, dataPath string, force bool) (png string, err error) {
	if err := checkWritable(out); err != nil {
		return "", err
	}
	png = strings.TrimSuffix(out, ".csv") + ".png"
	for _, p := range []string{out, png} {
		if sameFile(p, dataPath) {
			return "", usagef("%s would overwrite the data file; choose another --out", p)
		}
	}
	if !force {
		if err := refuseExisting(forceHint, out, png); err != nil {
			return "", err
		}
	}
	return png, nil
}

// gridSubject reads the data file at path and returns the trials of its subject id, or of
// its only subject when id is "".
func gridSubject(path, id string, spec models.Spec, stderr io.Writer) ([][][]float64, error) {
	set, err := readData(path, spec)
	if err != nil {
		return nil, err
	}
	if err := noteLengths(stderr, set, spec, path); err != nil {
		return nil, err
	}
	subj := set.Subjects[0]
	if id != "" {
		s, ok := set.Subject(id)
		if !ok {
			return nil, fmt.Errorf("%s has no subject %q", path, id)
		}
		subj = *s
	} else if len(set.Subjects) > 1 {
		return nil, usagef("%s has %d subjects: choose one with --subject", path, len(set.Subjects))
	}
	return subj.States(), nil
}

// parseTruth parses --truth for the two varied parameters (nil if not given).
func parseTruth(truth string, axes []study.Axis) ([]float64, error) {
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
		v, ok := tv[ax.Param.Name]
		if !ok {
			return nil, usagef("--truth must give both %s and %s", axes[0].Param.Name, axes[1].Param.Name)
		}
		if err := ax.Param.Validate(v); err != nil || (ax.Param.Scale == models.Log10Scale && v <= 0) {
			return nil, usagef("--truth %s=%g: not a valid value for a %s-scale parameter", ax.Param.Name, v, ax.Param.Scale)
		}
		out[i] = v
	}
	return out, nil
}
