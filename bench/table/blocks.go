package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/bench"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// compareBlocks times the looped form's value + gradient with each recursion run k steps per
// program call, for each k of ks (the first the reference), and checks values and gradients
// against the reference's: the largest relative difference of any row's value or gradient
// entry.
func compareBlocks(b backends.Backend, tasks string, ks []int) {
	fmt.Println("## Looped form: steps per program call, value + gradient, 50 trials per parameter vector")
	fmt.Println()
	fmt.Println("| task | T | steps per call | programs | largest program (nodes) | build+compile | calls per evaluation | per evaluation, 1 × 50 | per evaluation, 50 × 50 | largest relative difference to k = " + fmt.Sprint(ks[0]) + " |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range strings.Split(tasks, ",") {
		m, trials := taskTrials(name)
		var refVal []float64
		var refGrad [][]float64
		for _, k := range ks {
			opts := likelihood.Options{Form: likelihood.FormLooped, StepsPerCall: k}
			e1, err := bench.TimeEvalWith(m, b, opts, trials, 1, 3)
			if err != nil {
				fail(err)
			}
			e50, err := bench.TimeEvalWith(m, b, opts, trials, 50, 2)
			if err != nil {
				fail(err)
			}
			val, grad := evalAt(m, b, opts, trials)
			diff := "—"
			if refVal == nil {
				refVal, refGrad = val, grad
			} else {
				d := 0.0
				for i := range val {
					d = math.Max(d, math.Abs(val[i]-refVal[i])/math.Max(1, math.Abs(refVal[i])))
					for j := range grad[i] {
						d = math.Max(d, math.Abs(grad[i][j]-refGrad[i][j])/math.Max(1, math.Abs(refGrad[i][j])))
					}
				}
				diff = fmt.Sprintf("%.1e", d)
			}
			ks := fmt.Sprint(k)
			if k == likelihood.WholeRecursion {
				ks = "all"
				if graph.BuildsStableHLO(b) {
					ks = "all (while loop)"
				}
			}
			fmt.Printf("| %s | %d | %s | %d | %d | %.1f s | %d | %.4f s | %.4f s | %s |\n", name, len(trials[0])-1, ks, e1.Builds, max(e1.Nodes, e50.Nodes),
				e1.Build.Seconds(), e1.Calls, e1.PerEval.Seconds(), e50.PerEval.Seconds(), diff)
		}
	}
	fmt.Println()
}

// evalAt returns the log-likelihood and gradient of trials at three parameter vectors: the
// defaults and two moved off them, with options opts.
func evalAt(m models.Model, b backends.Backend, opts likelihood.Options, trials [][][]float64) ([]float64, [][]float64) {
	e, err := likelihood.New(m, b, opts)
	if err != nil {
		fail(err)
	}
	spec := e.Spec()
	thetas := make([][]float64, 3)
	for i := range thetas {
		thetas[i] = make([]float64, len(spec.Params))
		for j, p := range spec.Params {
			v := p.Default
			if v <= 0 && p.Scale == models.Log10Scale {
				v = p.Lo
			}
			thetas[i][j] = p.ToScale(v) + 0.05*float64(i)*float64(j%2*2-1)
		}
	}
	data := [][][][]float64{trials, trials, trials}
	d, err := e.Prepare(data, 0)
	if err != nil {
		fail(err)
	}
	val, grad, err := e.Eval(d, thetas)
	if err != nil {
		fail(err)
	}
	return val, grad
}

// taskTrials returns task name's model and 50 trials of its agent at the defaults (the bench
// tables' data: bench.Dataset, seed 1).
func taskTrials(name string) (models.Model, [][][]float64) {
	m, err := models.Get(name)
	if err != nil {
		fail(err)
	}
	ds, err := bench.Dataset(m, goBackend(), 1, 50, 1)
	if err != nil {
		fail(err)
	}
	return m, ds[0]
}
