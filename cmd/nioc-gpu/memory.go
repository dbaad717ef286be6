package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// memoryFlag is --max-memory: a size ("1.5GB", "800MB", "2GiB"), "auto" (the default: half of
// the machine's memory where it can be read, else none) or 0 for no budget.
type memoryFlag struct {
	explicit bool
	bytes    int64
}

func (m *memoryFlag) String() string {
	if m == nil || !m.explicit {
		return "auto"
	}
	return strconv.FormatInt(m.bytes, 10)
}

func (m *memoryFlag) Set(s string) error {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "auto") {
		*m = memoryFlag{}
		return nil
	}
	v, err := humanize.ParseBytes(t) // 1.5GB = 1.5e9 bytes, 2GiB = 2³¹
	if err != nil || v > math.MaxInt64 {
		return fmt.Errorf("want a size such as 1.5GB or 800MB, auto, or 0 for no budget, got %q", s)
	}
	*m = memoryFlag{explicit: true, bytes: int64(v)}
	return nil
}

// register adds --max-memory to fs: fit, sample (also --population) and population take the
// same flag with the same meaning.
func (m *memoryFlag) register(fs *flag.FlagSet) {
	fs.Var(m, "max-memory", "memory `budget|auto`: a size (1.5GB, 800MB) that the likelihood's evaluations keep within, choosing the form (unrolled, or looped with fewer trajectories per run) by it; auto (default): half of the machine's memory; 0: none (docs/speed.md, \"Long trials\")")
}

// budget returns the budget in bytes: 0 for none.
func (m memoryFlag) budget() int64 {
	if m.explicit {
		return m.bytes
	}
	return machineMemory() / 2
}

// machineMemory returns the machine's memory (MemTotal of /proc/meminfo), 0 where it cannot be read.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// readPlanned reads the subjects of the data file path (--data) and applies --max-memory to
// their evaluations (planMemory), lowering *maxBatch (--max-batch) where the budget needs it:
// the one place where fit, sample, sample --population and population read their data and plan
// their memory, before they make the evaluator of the returned options.
func readPlanned(tf *taskFlags, path string, maxBatch *int, m models.Model, opts likelihood.Options, mem memoryFlag, stderr io.Writer) (*data.Set, likelihood.Options, error) {
	set, err := readData(path, m.Spec())
	if err != nil {
		return nil, opts, err
	}
	if *maxBatch == 0 { // --max-batch's default: by backend
		b, err := tf.backendFor(m, opts)
		if err != nil {
			return nil, opts, err
		}
		_, steps := set.StepRange()
		*maxBatch = likelihood.MaxBatchFor(b, steps)
	}
	opts, err = planMemory(tf, m, opts, set, mem, maxBatch, stderr)
	return set, opts, err
}

// checkMaxBatch returns a usage error where --max-batch was given a count below 1 (like every
// count, 0 is not a default); left out, it is chosen by backend (readPlanned).
func checkMaxBatch(fs *flag.FlagSet, maxBatch int) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "max-batch" })
	if given && maxBatch < 1 {
		return usagef("--max-batch must be >= 1, got %d", maxBatch)
	}
	return nil
}

// maxBatchDoc is the help of --max-batch, what counts toward it first.
func maxBatchDoc(what string) string {
	return fmt.Sprintf("%s evaluated per graph run (bounds memory); by default chosen by backend: %d, on a GPU %d trajectory steps (%d trials of 50 steps); where XLA's CPU plugin runs trials as lanes, rounded up to a multiple of %d trials",
		what, likelihood.DefaultMaxBatch, likelihood.AcceleratorBatchSteps, likelihood.AcceleratorBatchSteps/50, likelihood.LaneWidth)
}

// planMemory applies --max-memory to the evaluations of set: likelihood.PlanMemory chooses the
// form and bounds the trajectories per graph run (lowering *maxBatch), and the budget becomes
// the Go runtime's memory limit (debug.SetMemoryLimit; GOMEMLIMIT where lower), so that the
// collector keeps to it, also while it builds a graph (graph's pauseGC keeps a lower limit);
// a budget that holds no trajectory is a usage error, and leaves the limit as it was. It says
// on stderr when the budget changes how the likelihood is evaluated.
func planMemory(tf *taskFlags, m models.Model, opts likelihood.Options, set *data.Set, mem memoryFlag, maxBatch *int, stderr io.Writer) (likelihood.Options, error) {
	budget := mem.budget()
	if budget <= 0 {
		return opts, nil
	}
	b, err := tf.backendFor(m, opts)
	if err != nil {
		return opts, err
	}
	_, steps := set.StepRange()
	planned, plan, err := likelihood.PlanMemory(m, b, opts, steps, budget)
	if err != nil {
		return opts, usagef("--max-memory: %v", err)
	}
	debug.SetMemoryLimit(min(budget, debug.SetMemoryLimit(-1))) // once the plan holds: its probe graphs are small
	if plan.MaxTrajectories > 0 {
		*maxBatch = min(*maxBatch, plan.MaxTrajectories)
	}
	if plan.Form == likelihood.FormLooped {
		fmt.Fprintf(stderr, "note: trials of %d steps: the unrolled graph would take about %s, more than --max-memory %s; the looped form runs instead, %d trajectories at a time per core (about %s each)\n",
			steps, likelihood.Bytes(plan.Unrolled), likelihood.Bytes(budget), *maxBatch, likelihood.Bytes(plan.Looped))
	}
	return planned, nil
}
