package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "compare", summary: "print true against estimated parameters of results files", run: runCompare})
}

// compareColumn is one results file of compare: its name in the table and its records.
type compareColumn struct {
	name string
	recs []fit.Record
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
	var cols []compareColumn
	for _, path := range fs.Args() {
		c, err := readColumn(path, m, stderr)
		if err != nil {
			return err
		}
		cols = append(cols, c)
	}
	return printComparison(stdout, spec, trueVals, cols)
}

// readColumn reads the results file path of the task m for compare and says on stderr what
// it uses (trusted). Results of another task are an error; of another definition of the
// task, a note.
func readColumn(path string, m models.Model, stderr io.Writer) (compareColumn, error) {
	spec := m.Spec()
	recs, _, err := fit.ReadRecords(path)
	if err != nil {
		return compareColumn{}, err
	}
	if len(recs) == 0 {
		return compareColumn{}, fmt.Errorf("%s has no results", path)
	}
	digest := models.Digest(m)
	for _, r := range recs {
		if r.Task != spec.Name {
			return compareColumn{}, fmt.Errorf("%s holds results of task %s (subject %s), not of task %s (--task)", path, r.Task, r.Subject, spec.Name)
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
	return compareColumn{name, recs}, nil
}

// printComparison prints the table of compare: each parameter's true value (natural units,
// spec's order) and each column's estimates of it (study.Compare), then each column's median
// relative error and log-likelihood.
func printComparison(stdout io.Writer, spec models.Spec, trueVals []float64, cols []compareColumn) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "parameter\ttruth")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.name)
	}
	fmt.Fprintln(tw, "\t")
	comps := make([][]study.Comparison, len(cols))
	for ci, c := range cols {
		comps[ci] = study.Compare(spec, trueVals, c.recs)
	}
	for i, p := range spec.Params {
		fmt.Fprintf(tw, "%s\t%.4g", p.Name, trueVals[i])
		for ci := range cols {
			c := comps[ci][i]
			if c.N == 0 {
				fmt.Fprint(tw, "\tnot fitted")
				continue
			}
			label := "%.4g"
			if c.N > 1 {
				label = "median %.4g"
			}
			cell := fmt.Sprintf(label, c.Median)
			if len(c.RelErrors) > 0 {
				cell += fmt.Sprintf(" (|rel. err.| %.2f)", fit.Median(c.RelErrors))
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw, "\t")
	}
	fmt.Fprint(tw, "median |rel. err.|\t")
	for ci := range cols {
		fmt.Fprintf(tw, "\t%.3f", study.MedianRelError(comps[ci]))
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprint(tw, "log-likelihood\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%.2f", study.MedianLogLik(c.recs))
	}
	fmt.Fprintln(tw, "\t")
	return tw.Flush()
}

// trusted returns the records of recs (read from path) that compare uses, a subject's last
// record where a file holds several (study.Latest), and says on stderr what it uses: how many
// subjects, what produced them, and those whose estimates their data do not determine
// (fit.Record.Identified).
func trusted(path string, recs []fit.Record, stderr io.Writer) []fit.Record {
	out, repeated, unidentified := study.Latest(recs)
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
