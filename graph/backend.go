package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// Backend names accepted by NewBackend.
const (
	// BackendGo is GoMLX's pure-Go simplego backend: embedded, needs nothing installed.
	BackendGo = "go"
	// BackendXLA is XLA through a PJRT plugin (github.com/gomlx/go-xla), on CPU or GPU.
	BackendXLA = "xla"
)

// Environment variables read by DefaultBackendName and NewBackend.
const (
	EnvBackend = "NIOC_BACKEND" // "go" (default) or "xla"
	EnvPJRT    = "NIOC_PJRT"    // "cpu" (default), "cuda", or an absolute path to a PJRT plugin .so
	// EnvXLAAsync set to 1 makes XLA program calls return once enqueued instead of once the
	// device has finished (pjrt.Client.SetAsyncExecution), on every plugin but the CPU one,
	// whose buffers share host memory (docs/backends.md, "Calls that do not wait").
	EnvXLAAsync = "NIOC_XLA_ASYNC"
	// EnvXLAFusion chooses how XLA fuses operations: FusionBarriers (the CPU plugin's default),
	// FusionXLA (other plugins' default) or FusionOff (docs/backends.md, "Fusion with barriers").
	EnvXLAFusion = "NIOC_XLA_FUSION"
	// EnvXLASinCos chooses how XLA's CPU plugin computes sines and cosines: SinCosOwn (the
	// default with fusion on: by graph operations, in the fused kernels) or SinCosLibm (the C
	// library's, an element at a time; docs/backends.md, "Sine and cosine on XLA's CPU plugin").
	EnvXLASinCos = "NIOC_XLA_SINCOS"
	// EnvTraceCalls set to 1 writes a line to stderr for every program call of a looped Flow
	// (Engine): the program's name, its first input's dimensions and the call's wall time, to
	// see on a device which calls cost what, and one for every program an Engine compiles
	// (its name and the seconds its compile took); set to "compiles", the compiles' lines
	// alone (docs/backends.md, "Where a call's time goes").
	EnvTraceCalls = "NIOC_TRACE_CALLS"
	// EnvFuseCalls set to off runs each map between two recursions of a looped Flow as a
	// program of its own instead of each run of them as one (Engine.SetFusedCalls;
	// docs/backends.md, "Fused calls"), to compare.
	EnvFuseCalls = "NIOC_FUSE_CALLS"
	// EnvAgentBackend names the backend on which a likelihood's simulated agents plan and
	// act (a fit's bootstrap and check, the sampler's predictive checks): "go", or "same" for
	// the likelihood's own; unset, AgentBackend's default.
	EnvAgentBackend = "NIOC_AGENT_BACKEND"
)

// DefaultBackendName returns $NIOC_BACKEND, or "go" if it is unset.
func DefaultBackendName() string {
	if b := os.Getenv(EnvBackend); b != "" {
		return b
	}
	return BackendGo
}

var (
	backendMu    sync.Mutex
	backendCache = map[string]backends.Backend{}
)

// NewBackend returns the backend of the given name ("go" or "xla"; "" means
// DefaultBackendName). Backends are created once per process and shared.
//
// "go" is simplego with sequential op scheduling, which is faster for the many small
// operations of these graphs than its default parallel scheduling. "xla" loads the PJRT plugin
// named by $NIOC_PJRT ("cpu", "cuda" or an absolute path); it never downloads anything, and
// when no plugin is installed it returns an error that says how to install one.
func NewBackend(name string) (backends.Backend, error) {
	if name == "" {
		name = DefaultBackendName()
	}
	backendMu.Lock()
	defer backendMu.Unlock()
	key := name
	if name == BackendXLA {
		key += ":" + pjrtPlugin()
	}
	if b, ok := backendCache[key]; ok {
		return b, nil
	}
	var (
		b   backends.Backend
		err error
	)
	switch name {
	case BackendGo:
		b, err = simplego.New("ops_sequential")
	case BackendXLA:
		b, err = newXLA(pjrtPlugin())
	default:
		return nil, fmt.Errorf("unknown backend %q: use %q (pure Go, the default) or %q (XLA/PJRT)", name, BackendGo, BackendXLA)
	}
	if err != nil {
		return nil, err
	}
	backendCache[key] = b
	return b, nil
}

func pjrtPlugin() string {
	if p := os.Getenv(EnvPJRT); p != "" {
		return p
	}
	return "cpu"
}

// PluginSearchDirs are the directories searched for PJRT plugins named "cpu" or "cuda", in
// order: $PJRT_PLUGIN_LIBRARY_PATH, then where `make xla-cpu` and `make xla-cuda` put them.
func PluginSearchDirs() []string {
	var dirs []string
	if p := os.Getenv("PJRT_PLUGIN_LIBRARY_PATH"); p != "" {
		dirs = append(dirs, filepath.SplitList(p)...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "lib", "go-xla"), filepath.Join(home, ".local", "lib", "go-xla", "nvidia"))
	}
	return append(dirs, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia")
}

// FindPlugin returns the absolute path of the PJRT plugin for name ("cpu", "cuda" or a path).
func FindPlugin(name string) (string, error) {
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("PJRT plugin %s: %w", name, err)
		}
		return name, nil
	}
	file := "pjrt_c_api_" + strings.ToLower(name) + "_plugin.so"
	for _, d := range PluginSearchDirs() {
		p := filepath.Join(d, file)
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("no PJRT %q plugin (%s) found in %s; install one with `make xla-%s`, "+
		"or set %s to the absolute path of a plugin",
		name, file, strings.Join(PluginSearchDirs(), ", "), name, EnvPJRT)
}

// CompilesSlowly reports whether compiling a graph on b takes long (XLA: seconds to minutes
// for these graphs), so that callers should keep the number of distinct shapes to one.
func CompilesSlowly(b backends.Backend) bool {
	return !strings.Contains(strings.ToLower(b.Name()), "simplego")
}

// hostXLA holds the XLA backends loaded from a CPU plugin (backends.Backend → struct{}).
var hostXLA sync.Map

// RunsOnHost reports whether b computes on the host's CPU cores: the Go backend and XLA's CPU
// plugin, where programs run concurrently take a core each, so that a batch is best split into
// a chunk per core; an accelerator runs one program of the whole batch best.
func RunsOnHost(b backends.Backend) bool {
	if !CompilesSlowly(b) {
		return true
	}
	_, ok := hostXLA.Load(b)
	return ok
}

// CPUFlags returns the XLA_FLAGS nioc-gpu sets for the CPU plugin when the user has set none,
// given its fusion mode and whether a row's bits must not depend on its place in its chunk
// (ExactRowsOnCPU): XLA's cpu-parallel-task-assigner pass off, under FusionOff its
// operator-fusion pass too, code generated at optimization level 2 instead of XLA's 3, and
// with exactRows, on amd64, code for at most AVX2 (CPUExactRowsISA).
//
// Level 2 (LLVM's O2 and its default code generation, where 3 is O3 and aggressive code
// generation) made warm fits 6–24 % faster with the same estimates and evaluations (reaching's
// within 4e-15), and compiles no slower: 10 restarts, Hessian only, pendulum 0.37–0.40 against
// 0.42–0.44 s, navigation 0.88–0.90 against 0.95–1.07 s, cart-pole 2.25–2.47 against 2.72–2.93
// s, reaching 1.22–1.25 against 1.28–1.35 s; 50 restarts pendulum 0.87–0.88 against 0.97–1.00
// s, navigation 1.94–2.14 against 2.52–2.57 s (2 cores, 2026-11-29; docs/backends.md,
// "Optimization level 2"). Level 1 was faster than 3 on some tasks and slower on reaching.
//
// The task assigner splits each kernel it finds large enough into parts that XLA's thread pool
// runs (four parts on 2 cores), while the calling thread waits. A fit already runs a chunk of
// rows per core (RunsOnHost), so those parts only hand work from thread to thread and take the
// core of the other chunk: with the pass off warm fits of 10 and 50 restarts took 5–24 % less
// (docs/backends.md, "One thread a chunk"). Fusion without AddFusionBarriers recomputes shared
// values in every fusion that reads them, and takes time that grows steeply with graph size:
// on unrolled graphs (linear task, T = 20, 18k nodes) 10 min with it and 12 s without.
func CPUFlags(fusion string, exactRows bool) string {
	passes := []string{"cpu-parallel-task-assigner"}
	if fusion == FusionOff {
		passes = append(passes, "fusion")
	}
	flags := "--xla_disable_hlo_passes=" + strings.Join(passes, ",") + " " + CPUOptLevel
	if exactRows && runtime.GOARCH == "amd64" {
		flags += " " + CPUExactRowsISA
	}
	return flags
}

// CPUExactRowsISA is the flag of CPUFlags that keeps a row's bits wherever it sits in its
// chunk: XLA's CPU code for at most AVX2, on processors that have AVX-512.
//
// Where a likelihood's trials are not lanes (linearized at the mean or by iLQG: a row's trials
// share its nominal), its kernels loop over the rows of a chunk (a row's own values, of
// layout [rows, 1]) or over rows × trials, and XLA's code for AVX-512 rounds some of a loop's
// elements otherwise than others (where, was not found), so that a row's last bits depended on
// where in its chunk it sat: a subject fitted beside others (a study, the subject queue)
// differed from its fit alone by up to 4e-10 relative in its estimates (navigation linearized
// at the mean), its standard errors in the 11th digit. With AVX2 they agree to the bit, the bootstrap and
// check included; on 2 cores of an AMD EPYC with AVX-512 reaching's fits took 0–7 % longer
// (docs/backends.md, "A row's place in its chunk"). Lanes need no cap (their chunks are
// multiples of LaneWidth trials) and lose up to 30 % with it, so it is set only for the
// likelihoods that need it: on a processor without AVX-512 it changes nothing.
const CPUExactRowsISA = "--xla_cpu_max_isa=AVX2"

// exactRows is set by ExactRowsOnCPU.
var exactRows atomic.Bool

// ExactRowsOnCPU has the CPU plugin, if it opens after the call, make code whose bits for a row
// of a chunk do not depend on the row's place in it (CPUExactRowsISA), as a likelihood whose
// trials are not lanes needs for a subject to get the same numbers fitted alone and beside
// others. A process sets it before it opens the XLA backend (NewBackend); it changes nothing
// for a plugin already open, nor where the user has set XLA_FLAGS.
func ExactRowsOnCPU() { exactRows.Store(true) }

// CPUOptLevel is the flag of CPUFlags that sets the CPU plugin's optimization level.
const CPUOptLevel = "--xla_backend_optimization_level=2"

// AgentBackend returns the backend on which the agents of a likelihood on b are planned and
// simulated: the Go backend where b is XLA's CPU plugin, b elsewhere, or as $NIOC_AGENT_BACKEND
// says ("go" or "same"). It returns an error for another value of it, or where the Go backend
// cannot be made.
//
// A fit's bootstrap and check simulate a few agents over a few thousand trials, calls too small
// for XLA's CPU plugin to gain on the Go backend, which has no programs to load: a default fit
// of 10 restarts took 0.54–0.56 s against 0.60–0.67 s (pendulum), 1.29–1.38 against 1.40–1.43
// (navigation), 2.15–2.18 against 2.25–2.35 (reaching), 4.12–4.17 against 4.36–4.46 (cart-pole),
// 12 reaching subjects of 5 restarts 10.7–11.1 against 11.4–11.8 s, one of 300 trials 7.0–7.1
// against 7.4 s, the estimates the same and the intervals within rounding (the noise is
// drawn on the host; cart-pole's within 8e-7 relative): 2 cores, programs
// cached, 2026-11-29 (docs/backends.md, "The simulated agents on the Go backend"). A GPU keeps
// them: there the host's cores are better left to feeding it.
func AgentBackend(b backends.Backend) (backends.Backend, error) {
	switch v := os.Getenv(EnvAgentBackend); v {
	case "same":
		return b, nil
	case BackendGo:
		return NewBackend(BackendGo)
	case "":
		if RunsOnHost(b) && CompilesSlowly(b) {
			return NewBackend(BackendGo)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("%s=%q: use %s or same", EnvAgentBackend, v, BackendGo)
	}
}
