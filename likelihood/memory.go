package likelihood

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// The memory model of an evaluation on the Go backend, measured on the tracking task
// (examples/tasks/tracking.toml, 120 trials of 1,200 steps, 845,000 nodes; docs/speed.md,
// "Long trials"): the unrolled form's peak is its graph, live whole until its tape is
// compiled (1.2–1.4 kB per node measured, 1.5 kB assumed, once the runtime's memory limit is
// the budget, which makes the collector run during the build; independent of the batch); the
// looped form keeps, per trajectory and time step, every value its stages pass on and its
// cotangent, about 9 bytes per node of one unrolled step. A run of the unrolled tape adds
// about 1 byte per node and trajectory (0.9 measured: 5.5 GB at 50 restarts of 120 trials of
// 1,200 steps, two runs of 2,400 trajectories). All come on top of the process's own.
const (
	unrolledNodeBytes = 1500
	unrolledTrajBytes = 1
	loopedStepBytes   = 9
	processBytes      = 300 << 20
)

// MemoryPlan is how an evaluation keeps within a memory budget (PlanMemory).
type MemoryPlan struct {
	Form Form // FormAuto: as without a budget; FormLooped: the looped form
	// MaxTrajectories bounds the trajectories (parameter vectors × trials) of one graph run
	// (Batching.MaxBatch; a subject of more trials is evaluated in parts), in either form.
	MaxTrajectories int
	// Unrolled and Looped are the estimated peak bytes of the unrolled form and of one
	// trajectory of the looped form per core.
	Unrolled, Looped int64
	NodesPerStep     int // of the unrolled graph
}

// PlanMemory chooses how evaluations of trials of up to steps steps keep within budget bytes
// on backend b, the runtime's memory limit being the budget (debug.SetMemoryLimit; the caller
// sets it): the unrolled form where its graph fits (the default on the Go backend, and the
// faster one: 4–6× at 1,200 steps) with as many trajectories per run as the rest of the
// budget holds, else the looped form with at most MaxTrajectories trajectories per graph
// run (each of the machine's cores runs one). It builds the unrolled graph of 4 and 8 steps
// to count its nodes per step (linearized at data for LinearizeILQG, whose graph needs a
// nominal trajectory and is about as large). A budget of 0, a backend that compiles slowly (XLA: looped
// already) or a Form other than FormAuto in opts leave opts as they are. It returns an error
// when not even one trajectory per run fits.
func PlanMemory(m models.Model, b backends.Backend, opts Options, steps int, budget int64) (Options, MemoryPlan, error) {
	if budget <= 0 || graph.CompilesSlowly(b) || (opts.Form != FormAuto && opts.Form != "" && opts.Form != "auto") {
		return opts, MemoryPlan{Form: opts.Form}, nil
	}
	probe := opts
	probe.ValueOnly = false
	if probe.Linearize == LinearizeILQG { // its graph needs a nominal; the data's is as large
		probe.Linearize = LinearizeData
	}
	e, err := New(m, b, probe)
	if err != nil {
		return opts, MemoryPlan{}, err
	}
	var nodes [2]int
	for i, T := range []int{4, 8} {
		if _, nodes[i], err = e.GraphSizes(T, 1, 1); err != nil {
			return opts, MemoryPlan{}, fmt.Errorf("memory plan: %w", err)
		}
	}
	perStep := max((nodes[1]-nodes[0])/4, 1)
	fixed := max(nodes[0]-4*perStep, 0)
	plan := MemoryPlan{
		Form:         FormAuto,
		Unrolled:     int64(fixed+perStep*steps)*unrolledNodeBytes + processBytes,
		Looped:       int64(perStep) * int64(steps) * loopedStepBytes,
		NodesPerStep: perStep,
	}
	workers := int64(graph.Workers())
	if plan.Unrolled < budget {
		nodes := int64(fixed + perStep*steps)
		if per := (budget - plan.Unrolled) / (workers * nodes * unrolledTrajBytes); per >= 1 {
			plan.MaxTrajectories = int(min(per, math.MaxInt32))
			return opts, plan, nil
		}
	}
	per := (budget - processBytes) / (workers * plan.Looped)
	if per < 1 {
		return opts, plan, fmt.Errorf("a memory budget of %s holds no trajectory of %d steps of task %s: it needs at least %s (%d cores, %s each, and %s for the process)",
			Bytes(budget), steps, m.Spec().Name, Bytes(processBytes+workers*plan.Looped), workers, Bytes(plan.Looped), Bytes(processBytes))
	}
	plan.Form, plan.MaxTrajectories = FormLooped, int(per)
	opts.Form = FormLooped
	return opts, plan, nil
}

// Bytes writes a number of bytes in MB or GB (powers of 1000), as --max-memory reads them.
func Bytes(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}
