// Command sample measures the speed of `nioc-gpu sample`: effective draws per second per
// subject (the smallest bulk ESS over the parameters, Vehtari et al. 2021) for some tasks,
// sampling 1 subject alone and N subjects together (all their chains in lockstep, one batched
// likelihood call per leapfrog step), and prints a Markdown table.
//
//	go run ./bench/sample [-tasks pendulum,reaching] [-subjects 1,10] [-chains 4] [-warmup 150] [-draws 100] [-metric dense]
//
// The subjects are simulated at the task's default parameters (50 trials each); the
// likelihood uses the task's temperature, as `sample --temperature task` does.
//
// Beside the wall time it prints the chains' batched likelihood calls (each a leapfrog step of
// every chain that asks; the climbs to the starting points not counted) with the rows a call
// averages, and the effective draws of all subjects together per call: on a GPU, where a call
// of a few hundred rows costs little more than one of a few (docs/backends.md), the sampling
// time is about calls × the time of a call, so these columns measured on a CPU already say
// which settings (-chains, -warmup, -draws) a GPU favours. The largest R-hat of any parameter
// of any subject says whether short chains still agree.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nioc-gpu/nioc-gpu/bench"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/internal/xlaenv"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior/ioc"
)

func main() {
	tasks := flag.String("tasks", "pendulum,reaching", "tasks to measure")
	counts := flag.String("subjects", "1,10", "numbers of subjects sampled together")
	chains := flag.Int("chains", 4, "chains per subject")
	warmup := flag.Int("warmup", 150, "warm-up iterations per chain")
	draws := flag.Int("draws", 100, "draws per chain")
	metric := flag.String("metric", "dense", "dense or diag")
	crossChain := flag.Bool("cross-chain", false, "estimate the metric from all of a subject's chains' window draws (sample --cross-chain)")
	maxWarmup := flag.Int("max-warmup", 0, "with -cross-chain, warm up to this many iterations while the chains disagree (sample --max-warmup)")
	backend := flag.String("backend", "", "go or xla (default $NIOC_BACKEND or go)")
	every := flag.Duration("progress", 0, "print a progress line to stderr at most this often (0: none): what a run cut short still reports")
	flag.Parse()
	// Compile times are compiles: no programs loaded from an earlier run (NIOC_XLA_CACHE=DIR to share).
	xlaenv.CacheOffUnlessSet()
	exact := true // as the sample command opens the plugin, where no task's trials are lanes
	for _, name := range strings.Split(*tasks, ",") {
		if m, err := models.Get(name); err == nil && likelihood.TrialsAsLanes(m.Spec(), likelihood.Options{}) {
			exact = false
		}
	}
	if exact {
		graph.ExactRowsOnCPU()
	}
	b, err := graph.NewBackend(*backend)
	if err != nil {
		fail(err)
	}
	var ns []int
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fail(fmt.Errorf("-subjects: %q is not a count", s))
		}
		ns = append(ns, n)
	}
	pooled := ""
	if *crossChain {
		pooled = fmt.Sprintf(", cross-chain (warm-up up to %d)", max(*maxWarmup, *warmup))
	}
	fmt.Printf("# nioc-gpu sample speed\n\nbackend %s, %s/%s, %d CPUs, %s; %d chains × (%d warm-up + %d draws), %s metric%s, 50 trials a subject\n\n",
		b.Name(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format("2006-01-02"), *chains, *warmup, *draws, *metric, pooled)
	fmt.Println("| task | subjects together | wall | per subject | min bulk ESS (median over subjects) | ESS/s per subject | leapfrog steps a draw | chains' calls (rows a call) | effective draws a call | largest R-hat |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range strings.Split(*tasks, ",") {
		m, err := models.Get(name)
		if err != nil {
			fail(err)
		}
		ds, err := bench.Dataset(m, b, slices.Max(ns), 50, 1)
		if err != nil {
			fail(err)
		}
		e, err := likelihood.New(m, b, likelihood.Options{})
		if err != nil {
			fail(err)
		}
		for _, n := range ns {
			var last, from ioc.Progress // the latest progress, and the chains' first
			var printed time.Duration   // when the latest progress line was printed
			climbed := 0                // the climbs' evaluations (Together: n, so all before the chains')
			subjects := make([]fit.Subject, n)
			for i := range subjects {
				subjects[i] = fit.Subject{ID: strconv.Itoa(i + 1), Trials: ds[i]}
			}
			s, err := ioc.New(e, ioc.Options{Chains: *chains, Warmup: *warmup, Draws: *draws, Seed: 1,
				DenseMetric: *metric == "dense", CrossChain: *crossChain, MaxWarmup: *maxWarmup, Together: n,
				MaxBatch: likelihood.MaxBatchFor(b, m.Spec().Steps), // as nioc-gpu sample chooses it
				Progress: func(p ioc.Progress) {
					if p.Climbing {
						climbed = p.Evaluations
					}
					if !p.Climbing && p.Transitions > 0 && from.Elapsed == 0 {
						from = p // the chains' first step: the pace is measured from here
					}
					if *every > 0 && p.Elapsed-printed >= *every {
						printProgress(name, n, p, from, climbed)
						printed = p.Elapsed
					}
					last = p
				}})
			if err != nil {
				fail(err)
			}
			var ess []float64
			worst := 0.0 // the largest R-hat of any parameter of any subject
			var steps, nDraws float64
			t0 := time.Now()
			err = s.Sample(context.Background(), subjects, func(rs []ioc.Result) error {
				for _, r := range rs {
					if r.Err != "" {
						return fmt.Errorf("subject %s: %s", r.Subject, r.Err)
					}
					low := math.Inf(1)
					for _, sum := range r.Summary {
						low = math.Min(low, sum.ESSBulk)
						worst = math.Max(worst, sum.RHat)
					}
					ess = append(ess, low)
					for _, c := range r.Chains {
						for _, l := range c.NLeapfrog {
							steps += float64(l)
							nDraws++
						}
					}
				}
				return nil
			})
			if err != nil {
				fail(err)
			}
			wall := time.Since(t0).Seconds()
			slices.Sort(ess)
			med := ess[len(ess)/2]
			// The chains' calls: what a GPU's sampling time is proportional to while a call's
			// time barely grows with its rows (docs/posterior.md, "Many chains on a GPU").
			fmt.Printf("| %s | %d | %.0f s | %.1f s | %.0f | %.2f | %.1f | %d (%.0f) | %.2f | %.3f |\n", name, n, wall, wall/float64(n), med,
				med/(wall/float64(n)), steps/nDraws, last.Calls, float64(last.Evaluations-climbed)/float64(max(last.Calls, 1)),
				med*float64(n)/float64(max(last.Calls, 1)), worst)
		}
	}
}

// printProgress writes one line on stderr of how far n subjects of task sampled together
// have come (p; from: at the chains' first step): the chains' transitions done (warm-up
// included), their calls and the calls' rate, and the wall time the run would take at the pace
// of the chains so far.
func printProgress(task string, n int, p, from ioc.Progress, climbed int) {
	phase := "sampling"
	if p.Climbing {
		phase = "climbing to the chains' starting points"
	}
	line := fmt.Sprintf("progress %s × %d: %.0f s, %s; transitions %d of %d (%.1f %%); chains' calls %d (%.1f a second); evaluations %d (climbs %d)",
		task, n, p.Elapsed.Seconds(), phase, p.Transitions, p.Total, 100*float64(p.Transitions)/float64(max(p.Total, 1)),
		p.Calls, float64(p.Calls)/p.Elapsed.Seconds(), p.Evaluations, climbed)
	if done := p.Transitions - from.Transitions; !p.Climbing && done > 0 && p.Elapsed > from.Elapsed {
		rate := float64(done) / (p.Elapsed - from.Elapsed).Seconds()
		line += fmt.Sprintf("; at this pace about %.0f s in all", p.Elapsed.Seconds()+float64(p.Total-p.Transitions)/rate)
	}
	fmt.Fprintln(os.Stderr, line)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sample bench:", err)
	os.Exit(1)
}
