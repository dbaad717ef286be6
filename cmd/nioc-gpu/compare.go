package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
)

func init() {
	register(command{name: "compare", summary: "print true against estimated parameters of results files", run: runCompare})
}

func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", "(--task NAME | --task-file FILE) [--truth name=value,...] results.jsonl [more.jsonl ...]", stderr)
	var tf taskFlags
	tf.registerTask(fs)
	truth := fs.String("truth", "", "true parameter values, `name=value,...` (default: the task's defaults)")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("give one or more results files")
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	spec := m.Spec()
	trueVals, err := paramValues(spec, *truth, "truth")
	if err != nil {
		return err
	}
	type column struct {
		name string
		recs []fit.Record
	}
	var cols []column
	for _, path := range fs.Args() {
		recs, _, err := fit.ReadRecords(path)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return fmt.Errorf("%s has no results", path)
		}
		digest := models.Digest(m)
		for _, r := range recs {
			if r.Task != spec.Name {
				return fmt.Errorf("%s holds results of task %s (subject %s), not of task %s (--task)", path, r.Task, r.Subject, spec.Name)
			}
		}
		for _, r := range recs {
			if r.TaskDigest != "" && r.TaskDigest != digest {
				fmt.Fprintf(stderr, "note: %s holds results of another definition of task %s (subject %s: %s, here %s); compared by parameter name\n", path, spec.Name, r.Subject, r.TaskDigest, digest)
				break
			}
		}
		recs = trusted(path, recs, stderr)
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		if recs[0].Method != "" {
			name = recs[0].Method + " (" + name + ")"
		}
		cols = append(cols, column{name, recs})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "parameter\ttruth")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.name)
	}
	fmt.Fprintln(tw, "\t")
	errs := make([][]float64, len(cols))
	for i, p := range spec.Params {
		fmt.Fprintf(tw, "%s\t%.4g", p.Name, trueVals[i])
		for ci, c := range cols {
			var est, rel []float64
			for _, r := range c.recs {
				if v, ok := r.Params[p.Name]; ok && slices.Contains(r.Fitted, p.Name) {
					est = append(est, v)
					if trueVals[i] != 0 {
						rel = append(rel, math.Abs(v-trueVals[i])/math.Abs(trueVals[i]))
					}
				}
			}
			if len(est) == 0 {
				fmt.Fprint(tw, "\tnot fitted")
				continue
			}
			errs[ci] = append(errs[ci], rel...)
			label := "%.4g"
			if len(est) > 1 {
				label = "median %.4g"
			}
			cell := fmt.Sprintf(label, fit.Median(est))
			if len(rel) > 0 {
				cell += fmt.Sprintf(" (|rel. err.| %.2f)", fit.Median(rel))
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw, "\t")
	}
	fmt.Fprint(tw, "median |rel. err.|\t")
	for ci := range cols {
		fmt.Fprintf(tw, "\t%.3f", fit.Median(errs[ci]))
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprint(tw, "log-likelihood\t")
	for _, c := range cols {
		var ll []float64
		for _, r := range c.recs {
			if r.LogLik != nil {
				ll = append(ll, *r.LogLik)
			}
		}
		fmt.Fprintf(tw, "\t%.2f", fit.Median(ll))
	}
	fmt.Fprintln(tw, "\t")
	return tw.Flush()
}

// trusted returns the records of recs (read from path) that compare uses, a subject's last
// record where a file holds several (the latest fit appended), and says on stderr what it
// uses: how many subjects, what produced them, and those whose estimates their data do not
// determine (fit.Record.Identified).
func trusted(path string, recs []fit.Record, stderr io.Writer) []fit.Record {
	last := map[string]int{}
	for i, r := range recs {
		last[r.Subject] = i
	}
	var out []fit.Record
	var repeated, unidentified []string
	for i, r := range recs {
		if last[r.Subject] != i {
			if !slices.Contains(repeated, r.Subject) {
				repeated = append(repeated, r.Subject)
			}
			continue
		}
		if r.Identified != nil && !*r.Identified {
			unidentified = append(unidentified, r.Subject)
		}
		out = append(out, r)
	}
	what := "written before results recorded their data and version"
	if r := out[0]; r.Version != "" {
		what = fmt.Sprintf("task definition %s, nioc-gpu %s", r.TaskDigest, r.Version)
	}
	fmt.Fprintf(stderr, "%s: %d subject(s) (%s)\n", path, len(out), what)
	if len(repeated) > 0 {
		fmt.Fprintf(stderr, "  subject(s) %s appear more than once: compared is each one's last record\n", strings.Join(repeated, ", "))
	}
	if len(unidentified) > 0 {
		fmt.Fprintf(stderr, "  subject(s) %s: the data do not determine the estimate (see the record's warnings); their errors say little about the method\n", strings.Join(unidentified, ", "))
	}
	return out
}
