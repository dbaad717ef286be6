package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/models/taskfile"
)

func init() {
	register(command{name: "tasks", summary: "list the tasks with their states, parameters, bounds and horizons", run: runTasks})
}

// taskJSON is one task in the output of `tasks --json`.
type taskJSON struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	States      []string    `json:"states"`
	StateBound  float64     `json:"state_bound"` // the plausible range of state values in data, |x| <= state_bound
	Controls    []string    `json:"controls"`
	Steps       int         `json:"steps"`
	PlanOver    string      `json:"plan_over"` // trial (each trial its own plan) or task (plans over steps)
	Planner     string      `json:"planner"`
	Temperature float64     `json:"temperature"`
	Jitter      float64     `json:"jitter"`    // the likelihood's, added to each step's state covariance
	Linearize   string      `json:"linearize"` // where the likelihood linearizes by default: data, mean or ilqg
	X0          []float64   `json:"x0"`
	Params      []paramJSON `json:"params"`
}

// paramJSON is one parameter of a taskJSON.
type paramJSON struct {
	Name    string  `json:"name"`
	Default float64 `json:"default"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	Scale   string  `json:"scale"`
	Doc     string  `json:"doc"`
}

func runTasks(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tasks", "[--task-file FILE] [--json]", stderr)
	asJSON := fs.Bool("json", false, "print one JSON array with an object per task")
	taskFile := fs.String("task-file", "", "print only the task of this TOML `file` (docs/tasks.md, \"Tasks from a file\")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var specs []models.Spec
	if *taskFile != "" {
		m, err := taskfile.Load(*taskFile)
		if err != nil {
			return err
		}
		specs = append(specs, m.Spec())
	}
	for _, name := range models.Names() {
		m, err := models.Get(name)
		if err != nil {
			return err
		}
		if *taskFile == "" {
			specs = append(specs, m.Spec())
		}
	}
	var all []taskJSON
	for _, s := range specs {
		if *asJSON {
			t := taskJSON{Name: s.Name, Description: s.Description, States: s.States, StateBound: s.MaxState(), Controls: s.Controls,
				Steps: s.Steps, PlanOver: string(s.PlanningHorizon()), Planner: string(s.Planner), Temperature: s.Temperature, Jitter: likelihood.TaskJitter(s), Linearize: string(likelihood.TaskLinearization(s)), X0: s.X0}
			for _, p := range s.Params {
				t.Params = append(t.Params, paramJSON{p.Name, p.Default, p.Lo, p.Hi, p.Scale.String(), p.Doc})
			}
			all = append(all, t)
			continue
		}
		fmt.Fprintf(stdout, "%s — %s\n", s.Name, s.Description)
		fmt.Fprintf(stdout, "  states:   %s (values in data within ±%g)\n  controls: %s\n", strings.Join(s.States, ", "), s.MaxState(), strings.Join(s.Controls, ", "))
		over := "a trial of another length is a plan of its own length"
		if s.PlanningHorizon() == models.HorizonTask {
			over = "the agent always plans over them; a shorter trial is the plan's first steps"
		}
		fmt.Fprintf(stdout, "  horizon:  %d steps (%s); planner under partial observability: %s; MCE temperature %g; likelihood jitter %g, linearized at %s\n", s.Steps, over, s.Planner, s.Temperature, likelihood.TaskJitter(s), likelihood.TaskLinearization(s))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  parameter\tdefault\tsearch box\tscale\t")
		for _, p := range s.Params {
			fmt.Fprintf(tw, "  %s\t%g\t[%g, %g]\t%s\t%s\n", p.Name, p.Default, p.Lo, p.Hi, p.Scale, p.Doc)
		}
		tw.Flush()
		fmt.Fprintln(stdout)
	}
	if !*asJSON {
		return nil
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(b))
	return err
}
