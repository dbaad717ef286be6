package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/study"
)

func init() {
	register(command{name: "loglik", summary: "evaluate the log-likelihood of a data file and its gradient", run: runLoglik})
}

func runLoglik(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("loglik", "--task NAME --data FILE.csv [--params name=value,...] [--observe partial|full] [--method ours|baseline] [--planner full|partial] [--timing act-then-see|see-then-act] [--linearize data|mean|ilqg]", stderr)
	var tf taskFlags
	tf.register(fs, true)
	dataPath := fs.String("data", "", "trajectory CSV (header subject,trial,t,<states>)")
	params := fs.String("params", "", "parameter values name=value,... in natural units (others: the task's defaults)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tf.model()
	if err != nil {
		return err
	}
	if err := required(fs, "data"); err != nil {
		return err
	}
	opts, err := tf.likelihoodOptions(m.Spec())
	if err != nil {
		return err
	}
	e, err := tf.evaluator(m, opts)
	if err != nil {
		return err
	}
	spec := e.Spec() // with --temperature fit, θ includes the temperature
	theta, err := paramValues(spec, *params, "params")
	if err != nil {
		return err
	}
	warnParamsOutsideBox(stderr, spec, *params, "params", theta)
	set, err := readData(*dataPath, spec)
	if err != nil {
		return err
	}
	if err := noteLengths(stderr, set, spec, *dataPath); err != nil {
		return err
	}
	ll, grad, err := study.LogLik(e, set, theta)
	if err != nil {
		return err
	}
	var failed []string // "subject ID: value" of the subjects whose log-likelihood is not finite
	for i, s := range set.Subjects {
		if math.IsNaN(ll[i]) || math.IsInf(ll[i], 0) {
			failed = append(failed, fmt.Sprintf("subject %s: %v", s.ID, ll[i]))
		}
	}
	if len(failed) == len(set.Subjects) {
		return fmt.Errorf("no subject could be evaluated: the log-likelihood of every subject of %s is not finite at these parameters (%s)",
			*dataPath, strings.Join(failed, "; "))
	}
	for _, f := range failed {
		fmt.Fprintf(stderr, "warning: log-likelihood not finite for %s\n", f)
	}
	for i, s := range set.Subjects {
		obj := map[string]any{"loglik": jsonFloat(ll[i]), "trials": len(s.Trials)}
		g := map[string]any{}
		for j, p := range spec.Params {
			g[p.Name] = jsonFloat(grad[i][j])
		}
		obj["grad"] = g
		if len(set.Subjects) > 1 {
			obj["subject"] = s.ID
		}
		line, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(line))
	}
	return nil
}
