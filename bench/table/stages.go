package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// stageColumns groups the pipeline's stages (likelihood.GraphSizes) into the table's columns.
var stageColumns = []struct {
	title  string
	stages []string
}{
	{"controls", []string{"controls", "mean", "mean_controls"}},
	{"linearization", []string{"linearize", "linearize_final", "gaps"}},
	{"backward pass", []string{"backward_init", "backward", "backward_partial_init", "backward_partial"}},
	{"filter gains", []string{"sigma0", "kalman", "moments_init", "moments"}},
	{"belief tracking", []string{"belief_init", "tracking", "full", "baseline"}},
}

// compareStages prints, for each task, the graph nodes each stage of the unrolled likelihood
// adds (forward computation) and the whole graph's with the gradient, for the default
// likelihood and the paper's (--temperature task --linearize data --nominal-filter
// --ignore-gaps --first-order-noise): on the Go backend an evaluation of a fit's few parameter vectors
// costs about a fixed time per node (docs/benchmarks.md, "Speed").
func compareStages(b backends.Backend, tasks string) {
	fmt.Println("## Where an evaluation's work is: graph nodes per stage (forward), 1 × 50 trials")
	fmt.Println()
	head := []string{"task", "likelihood"}
	for _, c := range stageColumns {
		head = append(head, c.title)
	}
	head = append(head, "forward", "with gradient")
	fmt.Println("| " + strings.Join(head, " | ") + " |")
	fmt.Println("|---|---|" + strings.Repeat("---:|", len(head)-2))
	for _, name := range names(tasks) {
		m, err := models.Get(name)
		if err != nil {
			fail(err)
		}
		steps := m.Spec().Steps
		for _, lk := range []struct {
			name string
			opts likelihood.Options
		}{
			{"default", likelihood.Options{FitTemperature: true, Form: likelihood.FormUnrolled}},
			{"paper", likelihood.Options{Linearize: likelihood.LinearizeData, NominalFilter: true, IgnoreGaps: true, FirstOrderNoise: true, RawAngles: true, Form: likelihood.FormUnrolled}},
		} {
			e, err := likelihood.New(m, b, lk.opts)
			if err != nil {
				fail(err)
			}
			sizes, total, err := e.GraphSizes(steps, 1, 50)
			if err != nil {
				fail(err)
			}
			by := map[string]int{}
			forward := 0
			for _, s := range sizes {
				by[s.Name] += s.Nodes
				forward += s.Nodes
			}
			row := []string{name, lk.name}
			for _, c := range stageColumns {
				n := 0
				for _, s := range c.stages {
					n += by[s]
				}
				row = append(row, fmt.Sprintf("%d (%.0f %%)", n, 100*float64(n)/float64(forward)))
			}
			for _, st := range sizes {
				if st.Nodes > 0 && !hasColumn(st.Name) {
					fail(fmt.Errorf("stage %s of the likelihood has no column in the table", st.Name))
				}
			}
			row = append(row, fmt.Sprint(forward), fmt.Sprint(total))
			fmt.Println("| " + strings.Join(row, " | ") + " |")
		}
	}
	fmt.Println()
}

// hasColumn reports whether stage name is counted in a column (or is one of the stages too
// small to show: θ's transform and the row sums).
func hasColumn(name string) bool {
	if name == "theta" || name == "rows" {
		return true
	}
	for _, c := range stageColumns {
		if slices.Contains(c.stages, name) {
			return true
		}
	}
	return false
}
