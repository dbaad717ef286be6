package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/graph/xlapatch"
)

func init() {
	register(command{name: "backend", summary: "show the computation backends and the XLA plugins that are installed and usable", run: runBackend})
}

func runBackend(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backend", "[--check]", stderr)
	check := fs.Bool("check", false, "load each installed XLA plugin and compare a small computation with the pure-Go backend")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "default backend: %s (set with --backend or $%s)\n", graph.DefaultBackendName(), graph.EnvBackend)
	fmt.Fprintf(stdout, "go:  pure-Go simplego backend, embedded, always available\n")
	if !graph.HasXLA {
		fmt.Fprintf(stdout, "xla: not in this build (built without cgo or with -tags noxla); build with cgo (make build) to use PJRT plugins\n")
		return nil
	}
	pjrt := os.Getenv(graph.EnvPJRT)
	if pjrt == "" {
		pjrt = "cpu"
	}
	fmt.Fprintf(stdout, "xla: uses the PJRT plugin $%s=%s; searched in %v\n", graph.EnvPJRT, pjrt, graph.PluginSearchDirs())
	for _, name := range []string{"cpu", "cuda"} {
		path, err := graph.FindPlugin(name)
		if err != nil {
			fmt.Fprintf(stdout, "  %-4s not installed (make xla-%s)\n", name, name)
			continue
		}
		fmt.Fprintf(stdout, "  %-4s %s\n", name, path)
		if name == "cpu" {
			fmt.Fprintf(stdout, "       %s\n", cpuThunks(path))
		}
		if *check {
			fmt.Fprintf(stdout, "       %s\n", smokeTest(path))
		}
	}
	fmt.Fprintf(stdout, "compiled-program cache: %s\n", cacheLine())
	switch f := os.Getenv(graph.EnvXLAFusion); f {
	case "":
		fmt.Fprintf(stdout, "fusion: XLA's own on GPUs; on the CPU plugin with a barrier after each shared value ($%s=barriers|xla|off)\n", graph.EnvXLAFusion)
	default:
		fmt.Fprintf(stdout, "fusion: $%s=%s\n", graph.EnvXLAFusion, f)
	}
	fmt.Fprintln(stdout, flagsLine())
	switch m := os.Getenv(graph.EnvXLASinCos); m {
	case "":
		fmt.Fprintf(stdout, "sine and cosine: written out as element-wise operations on the CPU plugin with fusion on, XLA's elsewhere ($%s=own|libm)\n", graph.EnvXLASinCos)
	default:
		fmt.Fprintf(stdout, "sine and cosine: $%s=%s\n", graph.EnvXLASinCos, m)
	}
	switch a := os.Getenv(graph.EnvAgentBackend); a {
	case "":
		fmt.Fprintf(stdout, "simulated agents (a fit's bootstrap and check, the sampler's predictive checks): on the Go backend where the likelihood is on the CPU plugin, on the GPU with it ($%s=go|same)\n", graph.EnvAgentBackend)
	default:
		fmt.Fprintf(stdout, "simulated agents: $%s=%s\n", graph.EnvAgentBackend, a)
	}
	if os.Getenv(graph.EnvFuseCalls) == "off" {
		fmt.Fprintf(stdout, "fused calls: off ($%s=off): each map between two recursions is a program call of its own\n", graph.EnvFuseCalls)
	}
	switch os.Getenv(graph.EnvReplay) {
	case "off":
		fmt.Fprintf(stdout, "replays: off ($%s=off): every evaluation runs on a tape\n", graph.EnvReplay)
	case "program":
		fmt.Fprintf(stdout, "replays: as one program each ($%s=program): an evaluation is one call, its numbers those of the linked program (docs/backends.md)\n", graph.EnvReplay)
	}
	if os.Getenv(graph.EnvXLAAsync) == "1" {
		fmt.Fprintf(stdout, "calls that do not wait: on for GPU plugins ($%s=1); the CPU plugin's calls wait (its buffers share host memory)\n", graph.EnvXLAAsync)
	}
	return nil
}

// cpuThunks says how the CPU plugin at path runs a program's kernels (graph/xlapatch).
func cpuThunks(path string) string {
	switch st, err := xlapatch.CPU.Check(path); {
	case err != nil:
		return "thunks: " + err.Error()
	case st == xlapatch.Sequential:
		return "thunks: sequential, on the calling thread (patched by make xla-cpu)"
	case st == xlapatch.Concurrent:
		return "thunks: concurrent, XLA's default (make xla-cpu, or go run ./cmd/xla-cpu-patch " + path + ", runs them sequentially: faster on 2 cores)"
	default:
		return "thunks: XLA's default (not " + xlapatch.CPU.Name + ", which make xla-cpu installs)"
	}
}

// smokeTest loads a plugin and compares sin(x)·y and its gradient with the Go backend.
func smokeTest(path string) string {
	os.Setenv(graph.EnvPJRT, path)
	defer os.Unsetenv(graph.EnvPJRT)
	bx, err := graph.NewBackend(graph.BackendXLA)
	if err != nil {
		return "unusable: " + err.Error()
	}
	bg, _ := graph.NewBackend(graph.BackendGo)
	build := func(g *G.Graph, in []*G.Node) []*G.Node {
		y := G.Mul(G.Sin(in[0]), in[0])
		return []*G.Node{y, G.Gradient(G.ReduceAllSum(y), in[0])[0]}
	}
	x := []float64{0.1, 0.7, -1.3, 2.2}
	var res [2][]graph.Tensor
	var took time.Duration
	for i, b := range []backends.Backend{bg, bx} {
		t0 := time.Now()
		out, err := graph.NewProgram(b, "smoke", build).Run(graph.NewTensor(x, 4))
		if err != nil {
			return "unusable: " + err.Error()
		}
		res[i] = out
		took = time.Since(t0)
	}
	worst := 0.0
	for k := range res[0] {
		for i := range res[0][k].Data {
			worst = math.Max(worst, math.Abs(res[0][k].Data[i]-res[1][k].Data[i]))
		}
	}
	cache := ""
	if st, ok := graph.XLACacheStats(bx); ok {
		switch {
		case st.Failed > 0:
			cache = "; cannot keep its programs in the cache: " + st.LastErr
		case st.Hits > 0:
			cache = "; program loaded from the cache"
		default:
			cache = "; program stored in the cache"
		}
	}
	return fmt.Sprintf("usable: %s, float64 results equal the Go backend's to %.1e (compile+run %v)%s", bx.Name(), worst, took.Round(time.Millisecond), cache)
}

// flagsLine says which XLA_FLAGS apply: the user's, or where unset those nioc-gpu sets for the
// CPU plugin (graph.CPUFlags).
func flagsLine() string {
	if f := os.Getenv("XLA_FLAGS"); f != "" {
		return fmt.Sprintf("XLA_FLAGS=%s: yours; nioc-gpu adds none", f)
	}
	base := graph.CPUFlags(graph.FusionBarriers, false)
	line := fmt.Sprintf("XLA_FLAGS: unset, so nioc-gpu sets %s for the CPU plugin (a fit runs a chunk a core; with fusion off, the fusion pass too; optimization level 2: faster code than XLA's 3)", base)
	if graph.CPUFlags(graph.FusionBarriers, true) != base {
		line += ", and " + graph.CPUExactRowsISA + " besides for a likelihood whose trials are not lanes (linearized at the mean or by iLQG: a row's bits then do not depend on its place in its chunk)"
	}
	return line
}

// cacheLine says where XLA keeps its compiled programs (graph.XLACacheDir), how many it holds
// and in how much of its bound.
func cacheLine() string {
	dir, byDefault := graph.XLACacheDir()
	if dir == "" {
		return fmt.Sprintf("off (set $%s=DIR to keep XLA's compiled programs between runs)", graph.EnvXLACache)
	}
	where := fmt.Sprintf("$%s=%s", graph.EnvXLACache, dir)
	if byDefault {
		where = fmt.Sprintf("%s (the default; $%s=off: none, =DIR: another)", dir, graph.EnvXLACache)
	}
	limit, err := graph.XLACacheMax()
	if err != nil {
		return fmt.Sprintf("%s: %v", where, err)
	}
	bound := "no bound"
	if limit > 0 {
		bound = fmt.Sprintf("at most %.0f MB ($%s)", float64(limit)/1e6, graph.EnvXLACacheMax)
	}
	n, size, err := graph.XLACacheUsage(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s, empty, %s", where, bound)
	case err != nil:
		return fmt.Sprintf("%s: %v", where, err)
	}
	return fmt.Sprintf("%s, %d programs, %.1f MB of %s", where, n, float64(size)/1e6, bound)
}
