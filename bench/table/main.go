// Command table runs nioc-gpu's benchmarks and prints them as Markdown tables: likelihood
// evaluations by task and batch size, batching across restarts and subjects, and whole fits
// next to the paper's timings.
//
//	go run ./bench/table [-backend go|xla] [-tasks reaching,pendulum] [-rows 1,50,500] [-fits=false]
//	                     [-restarts 50] [-xla auto|on|off] [-xla-tasks lightdark] [-xla-restarts 2]
//	                     [-forward reaching] [-stages pendulum,navigation]
//
// With an XLA CPU plugin installed (make xla-cpu) it also runs the same evaluations and fits on
// the Go and XLA backends side by side, with compile time reported separately.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/bench"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/internal/xlaenv"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
)

func main() {
	backend := flag.String("backend", "", "go or xla (default $NIOC_BACKEND or go)")
	tasks := flag.String("tasks", "reaching,navigation,pendulum,cartpole,lightdark", "tasks to measure (\"\" for none: only -forward or the go-vs-xla comparison)")
	fits := flag.Bool("fits", true, "also time whole fits (50 trials, -restarts restarts), the slow part")
	restarts := flag.Int("restarts", 50, "restarts per fit")
	subjects := flag.Int("subjects", 10, "subjects for the batching comparison")
	xlaMode := flag.String("xla", "auto", "go-vs-xla comparison: auto (when the plugin of $NIOC_PJRT, default cpu, is installed), on or off")
	xlaTasks := flag.String("xla-tasks", "reaching,navigation,pendulum,cartpole,lightdark", "tasks of the go-vs-xla comparison")
	xlaRestarts := flag.Int("xla-restarts", 50, "restarts per fit in the go-vs-xla comparison")
	fitPath := flag.Bool("as-fit", true, "also time each evaluation of the first table as a fit makes it: its rows in chunks, one per core, on XLA's CPU plugin as lanes (likelihood.Evaluator.EvalRows); the first columns time one call of all rows")
	rowList := flag.String("rows", "1,50", "parameter vectors per evaluation in the first table, ascending; a task's list stops at the first size that fails (out of memory, say)")
	forward := flag.String("forward", "", "tasks on which to compare the looped form's reverse-mode gradient with forward mode (e.g. reaching); none by default")
	stages := flag.String("stages", "", "tasks whose likelihood graph to break down by stage, default and paper's likelihood (e.g. pendulum,navigation); none by default")
	forwardSmall := flag.Bool("forward-1", true, "-forward: also measure 1 parameter vector × 50 trials (each batch size compiles its own programs: false saves a GPU's minutes)")
	blocks := flag.String("blocks", "", "tasks on which to measure the looped form with -steps steps per program call (e.g. reaching,cartpole); none by default")
	steps := flag.String("steps", "1,2,5,10", "-blocks: the steps per call to measure, 1 first (the reference); \"all\" runs each recursion in one call (a while loop on XLA)")
	flag.Parse()
	// Compile times are compiles: no programs loaded from an earlier run (NIOC_XLA_CACHE=DIR to share).
	xlaenv.CacheOffUnlessSet()
	defer compareXLA(*xlaMode, *xlaTasks, *xlaRestarts)
	b, err := graph.NewBackend(*backend)
	if err != nil {
		fail(err)
	}
	fmt.Printf("# nioc-gpu benchmarks\n\nbackend %s, %s/%s, %d CPUs, %s\n\n", b.Name(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format("2006-01-02"))
	if *forward != "" {
		compareModes(modeBackends(b, *xlaMode), *forward, *forwardSmall)
	}
	if *blocks != "" {
		compareBlocks(b, *blocks, parseSteps(*steps))
	}
	if *stages != "" {
		compareStages(b, *stages)
	}
	if len(names(*tasks)) == 0 {
		return
	}
	fmt.Println("## Log-likelihood value + exact gradient, 50 trials per parameter vector")
	fmt.Println()
	fmt.Println("| task | parameter vectors | programs | largest program (nodes) | build+compile | calls per evaluation | per evaluation | vectors/s | transitions/s | as a fit evaluates: per evaluation | calls |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	data := map[string][][][][]float64{}
	for _, name := range names(*tasks) {
		m, err := models.Get(name)
		if err != nil {
			fail(err)
		}
		// simulated on the Go backend: the iLQG solver's graphs are still unrolled
		ds, err := bench.Dataset(m, goBackend(), *subjects, 50, 1)
		if err != nil {
			fail(err)
		}
		data[name] = ds
		for _, rows := range parseInts(*rowList) {
			rep := 5
			if rows > 1 {
				rep = 2
			}
			et, err := bench.TimeEval(m, b, ds[0], rows, rep)
			if err != nil {
				fmt.Printf("| %s | %d | failed: %s | | | | | | | | |\n", name, rows, strings.ReplaceAll(err.Error(), "\n", " "))
				break
			}
			var asFit string
			if *fitPath {
				if ft, err := bench.TimeEvalRows(m, b, ds[0], rows, max(rep, 4)); err == nil {
					asFit = fmt.Sprintf("%.4f s | %d", ft.PerEval.Seconds(), ft.Calls)
				} else {
					asFit = "failed: " + strings.ReplaceAll(err.Error(), "\n", " ") + " |"
				}
			} else {
				asFit = "— | —"
			}
			fmt.Printf("| %s | %d | %d | %d | %.2f s | %d | %.4f s | %.1f | %.3g | %s |\n", name, rows, et.Builds, et.Nodes, et.Build.Seconds(), et.Calls, et.PerEval.Seconds(), et.EvalsPerSec, et.TransitionsPS, asFit)
		}
	}
	if !*fits {
		return
	}
	fmt.Println()
	fmt.Printf("## Fits: 50 trials, %d restarts, partially observable (wall time, graph building included)\n\n", *restarts)
	fmt.Println("| task | subjects | wall | per subject | subjects/hour | paper per fit (1 core) | evaluations | batches | median abs. rel. error |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range names(*tasks) {
		m, _ := models.Get(name)
		counts := []int{1}
		if name == "pendulum" && *subjects > 1 {
			counts = append(counts, *subjects)
		}
		for _, s := range counts {
			ft, err := bench.TimeFit(m, b, data[name][:s], *restarts, 200, false)
			if err != nil {
				fail(err)
			}
			paper := "—"
			if p, ok := bench.PaperFitSeconds[name]; ok {
				paper = fmt.Sprintf("%.0f s", p)
			}
			fmt.Printf("| %s | %d | %.1f s | %.1f s | %.0f | %s | %d | %d | %.3f |\n", name, s, ft.Wall.Seconds(), ft.PerSubject.Seconds(),
				3600/ft.PerSubject.Seconds(), paper, ft.Evaluations, ft.Batches, ft.MedianRelErr)
		}
	}
}

// compareXLA times evaluations and fits of the tasks on the Go backend and on XLA with the
// plugin of $NIOC_PJRT (cpu by default).
func compareXLA(mode, tasks string, restarts int) {
	plugin, ok := xlaPlugin(mode, "\n(go-vs-xla comparison skipped: %v)\n")
	if !ok {
		return
	}
	bg, err := graph.NewBackend(graph.BackendGo)
	if err != nil {
		fail(err)
	}
	bx, err := graph.NewBackend(graph.BackendXLA)
	if err != nil {
		fail(err)
	}
	fmt.Println()
	fmt.Printf("## Go vs XLA (plugin %s, XLA_FLAGS=%q): value+gradient at 1 and 50 parameter vectors × 50 trials; fits of 50 trials with %d restarts\n\n", plugin, os.Getenv("XLA_FLAGS"), restarts)
	fmt.Println("XLA runs the looped form (a program per stage group and a while loop per recursion), Go the unrolled one. Evaluations are timed as a fit makes them: rows in chunks, one per core, on XLA's CPU plugin as lanes.")
	fmt.Println()
	fmt.Println("| task | backend | largest graph (nodes) | build+compile | per evaluation, 1 × 50 | per evaluation, 50 × 50 | fit wall | of which build+compile | fit again, built | estimate error |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range strings.Split(tasks, ",") {
		m, err := models.Get(name)
		if err != nil {
			fail(err)
		}
		ds, err := bench.Dataset(m, bg, 1, 50, 1)
		if err != nil {
			fail(err)
		}
		var per, per50, fitNet [2]float64
		for i, b := range []backends.Backend{bg, bx} {
			et, err := bench.TimeEvalRows(m, b, ds[0], 1, 5)
			if err != nil {
				fail(err)
			}
			et50, err := bench.TimeEvalRows(m, b, ds[0], 50, 3)
			if err != nil {
				fail(err)
			}
			ft, err := bench.TimeFit(m, b, ds, restarts, 200, true)
			if err != nil {
				fail(err)
			}
			per[i], per50[i], fitNet[i] = et.PerEval.Seconds(), et50.PerEval.Seconds(), ft.Warm.Seconds()
			fmt.Printf("| %s | %s | %d | %.1f s | %.4f s | %.4f s | %.1f s | %.1f s | %.1f s | %.3f |\n", name, b.Name(), et.Nodes,
				et.Build.Seconds(), et.PerEval.Seconds(), et50.PerEval.Seconds(), ft.Wall.Seconds(), max(ft.Wall-ft.Warm, 0).Seconds(), fitNet[i], ft.MedianRelErr)
		}
		fmt.Printf("| %s | go / xla | | | %.2f× | %.2f× | | | %.2f× | |\n", name, per[0]/per[1], per50[0]/per50[1], fitNet[0]/fitNet[1])
	}
}

// modeBackends returns the backends of the -forward table: b, and XLA's plugin ($NIOC_PJRT,
// default cpu) beside the Go backend where it is installed and the -xla mode (auto, on, off)
// allows. Each runs the looped form as its default does: on the Go backend a program call per
// step of a recursion, on XLA a while loop per recursion (docs/backends.md, "While loops").
func modeBackends(b backends.Backend, mode string) []backends.Backend {
	out := []backends.Backend{b}
	if graph.CompilesSlowly(b) {
		return out
	}
	if _, ok := xlaPlugin(mode, "(-forward on the Go backend alone: %v)\n\n"); !ok {
		return out
	}
	bx, err := graph.NewBackend(graph.BackendXLA)
	if err != nil {
		fail(err)
	}
	return append(out, bx)
}

// xlaPlugin returns the XLA plugin of $NIOC_PJRT (default cpu) and whether a comparison on it
// runs in -xla mode (auto, on, off): where the plugin is installed and mode is not off. Where
// it is missing, mode on fails and auto prints skipped (a format with the error's %v).
func xlaPlugin(mode, skipped string) (string, bool) {
	if mode == "off" {
		return "", false
	}
	plugin := os.Getenv(graph.EnvPJRT)
	if plugin == "" {
		plugin = "cpu"
	}
	if _, err := graph.FindPlugin(plugin); err != nil {
		if mode == "on" {
			fail(err)
		}
		fmt.Printf(skipped, err)
		return "", false
	}
	return plugin, true
}

// compareModes times the looped form's gradient in reverse mode over the recorded calls and in
// forward mode (tangents along the parameters carried through every step) on each backend of
// bs.
func compareModes(bs []backends.Backend, tasks string, small bool) {
	fmt.Println("## Looped form: reverse vs forward mode, value + gradient, 50 trials per parameter vector")
	fmt.Println()
	fmt.Println("The Go backend's looped form makes a program call per step of each recursion; XLA's runs each recursion as a while loop (two calls, forward and VJP, whatever T).")
	fmt.Println()
	fmt.Println("| task | backend | parameters | gradient | programs | largest program (nodes) | build+compile | calls per evaluation | per evaluation, 1 × 50 | per evaluation, 50 × 50 |")
	fmt.Println("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, name := range strings.Split(tasks, ",") {
		for _, b := range bs {
			compareModesOn(b, name, small)
		}
	}
	fmt.Println()
}

// compareModesOn prints compareModes' rows of task name on backend b.
func compareModesOn(b backends.Backend, name string, small bool) {
	m, trials := taskTrials(name)
	var per [2]float64
	for i, mode := range []string{"reverse", "forward"} {
		opts := likelihood.Options{Form: likelihood.FormLooped, ForwardGradient: mode == "forward"}
		one := "—"
		if small {
			e1, err := bench.TimeEvalWith(m, b, opts, trials, 1, 3)
			if err != nil {
				fail(err)
			}
			one = fmt.Sprintf("%.4f s", e1.PerEval.Seconds())
		}
		e50, err := bench.TimeEvalWith(m, b, opts, trials, 50, 2)
		if err != nil {
			fail(err)
		}
		per[i] = e50.PerEval.Seconds()
		fmt.Printf("| %s | %s | %d | %s | %d | %d | %.1f s | %d | %s | %.4f s |\n", name, b.Name(), len(m.Spec().Params), mode, e50.Builds, e50.Nodes,
			e50.Build.Seconds(), e50.Calls, one, e50.PerEval.Seconds())
	}
	fmt.Printf("| %s | %s | | forward / reverse, 50 × 50 | | | | | | %.2f× |\n", name, b.Name(), per[1]/per[0])
}

// names splits a comma-separated list of task names; "" is none.
func names(list string) []string {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// parseInts parses a comma-separated list of positive integers.
// parseSteps parses -steps: positive integers, or "all" (likelihood.WholeRecursion).
func parseSteps(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "all" {
			out = append(out, likelihood.WholeRecursion)
			continue
		}
		out = append(out, parseInts(f)...)
	}
	return out
}

func parseInts(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-rows: %q is not a positive integer", f))
		}
		out = append(out, n)
	}
	return out
}

func goBackend() backends.Backend {
	b, err := graph.NewBackend(graph.BackendGo)
	if err != nil {
		fail(err)
	}
	return b
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
