package graph

import (
	"os"
	"runtime"
	"sync"

	"github.com/gomlx/gomlx/backends"
)

// A spare P for the CPU plugin's calls. A program call on XLA's CPU plugin is a cgo call, during
// which the Go runtime counts its goroutine's P as in a system call. With a chunk per core every
// P is in such calls, none idle, and the runtime's monitor thread (sysmon) takes each P back
// after 20 µs to hand it on: it then wakes every 20 µs instead of backing off to 10 ms, and on a
// machine with as many busy threads as cores each wake-up preempts a thread running a compiled
// kernel. With one P more than the fit's workers an idle P is always there, which is all the
// monitor checks before it leaves a P in a cgo call alone. A pendulum fit of 50 restarts on 2
// cores made 15,000 context switches with GOMAXPROCS 2 and 5,700 with 3 (two workers either
// way); ten pendulum subjects of 50 restarts took 8.3–8.6 s and 15.2–15.8 CPU-seconds
// against 7.4–7.9 s and 13.8–14.6 (2026-11-29, docs/backends.md, "A spare P"). The sampler's
// short lockstep calls (4 chains of a pendulum subject) ran 15–20 % slower with it, the cores
// less busy (141 % against 163 %), so `fit` keeps one (KeepSpareP) and the others do not.

// EnvSpareP set to off keeps GOMAXPROCS as it is when XLA's CPU plugin loads, for measurements.
const EnvSpareP = "NIOC_SPARE_P"

var spareP struct {
	mu sync.Mutex
	to int // the GOMAXPROCS keepSpareP set, 0 before
}

// KeepSpareP raises GOMAXPROCS by one, once a process, where b is XLA's CPU plugin, unless
// NIOC_SPARE_P=off; Workers stays what GOMAXPROCS was.
func KeepSpareP(b backends.Backend) {
	if CompilesSlowly(b) && RunsOnHost(b) {
		keepSpareP()
	}
}

// keepSpareP is KeepSpareP for any backend.
func keepSpareP() {
	spareP.mu.Lock()
	defer spareP.mu.Unlock()
	if spareP.to != 0 || os.Getenv(EnvSpareP) == "off" {
		return
	}
	spareP.to = runtime.GOMAXPROCS(0) + 1
	runtime.GOMAXPROCS(spareP.to)
}

// Workers returns how many chunks of work (graph runs, compiles) run at once: GOMAXPROCS, less
// the spare P of KeepSpareP while GOMAXPROCS is still the value it set; at least 1.
func Workers() int {
	n := runtime.GOMAXPROCS(0)
	spareP.mu.Lock()
	to := spareP.to
	spareP.mu.Unlock()
	if to > 1 && n == to {
		n--
	}
	return max(1, n)
}
