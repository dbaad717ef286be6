package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

// summarize writes estimates.csv, summary.json and the figures of an eval directory
// (study.Summarize, study.Evaluation.Figures), and prints the summary table.
func summarize(dir string, m models.Model, b backends.Backend, stdout, stderr io.Writer) error {
	ev, err := study.Summarize(dir, m.Spec())
	if err != nil {
		return err
	}
	if err := ev.Figures(m, b, func(err error) { fmt.Fprintf(stderr, "warning: %v\n", err) }); err != nil {
		return err
	}
	printSummary(stdout, ev)
	fmt.Fprintf(stderr, "wrote %s/{estimates.csv,summary.json,true_vs_estimated.png,errors.png}\n", dir)
	return nil
}

// printSummary prints the table of an evaluation's summary: each method's sets fitted, its
// median error, those of each parameter ("—" where it fits none) and its wall time.
func printSummary(stdout io.Writer, ev *study.Evaluation) {
	spec, cfg := ev.Spec, ev.Config
	fmt.Fprintf(stdout, "%s, %s observability: %d sets × %d trials, %d restarts\n", spec.Name, cfg.Observe, cfg.Sets, cfg.Trials, cfg.Restarts)
	if len(cfg.Excluded) > 0 {
		fmt.Fprintf(stdout, "excluded (the simulated agent diverged): %s\n", strings.Join(cfg.Excluded, ", "))
	}
	fmt.Fprintf(stdout, "%-10s %8s %8s", "method", "sets", "median")
	for _, p := range spec.Params {
		fmt.Fprintf(stdout, " %14s", p.Name)
	}
	fmt.Fprintf(stdout, " %10s\n", "wall (s)")
	for _, method := range ev.Methods {
		ms := ev.Summary.Methods[method]
		fmt.Fprintf(stdout, "%-10s %8d %8.3f", method, ms.Fitted, ms.Median)
		for _, p := range spec.Params {
			if v, ok := ms.PerParam[p.Name]; ok {
				fmt.Fprintf(stdout, " %14.3f", v)
			} else {
				fmt.Fprintf(stdout, " %14s", "—")
			}
		}
		fmt.Fprintf(stdout, " %10.1f\n", ms.WallSeconds)
	}
}
