package graph

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// gcPause holds the garbage collector off while graphs are built (see pauseGC).
var gcPause struct {
	mu       sync.Mutex
	n        int   // builds under way
	old      int   // the GC percentage to restore
	oldLimit int64 // the memory limit to restore
}

// pauseHeadroom is how much the heap may grow while the collector is paused before it runs
// anyway (a memory limit): a build's own growth stays below it (cart-pole's two builds side
// by side: 1.9 GB at its peak), but other goroutines that allocate meanwhile cannot exhaust the machine.
const pauseHeadroom = 2 << 30

// pauseGC turns the garbage collector off until every caller has called the function it
// returns. Building an unrolled graph (GoMLX nodes, their gradient, the tape) allocates
// millions of small objects that nearly all stay live until the build ends, so collections
// during a build find little garbage but mark the whole growing heap again each time: on
// cart-pole, 1.1 s of a 7.9 s fit at about the same peak memory (docs/speed.md). The
// percentage in effect before (GOGC) is restored when the last build ends. While paused, a
// memory limit of the heap then in use plus pauseHeadroom makes the collector run anyway
// should the heap grow that far (the limit in effect before, GOMEMLIMIT, is restored too, and
// kept where it is lower).
func pauseGC() (resume func()) {
	gcPause.mu.Lock()
	if gcPause.n == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gcPause.oldLimit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(gcPause.oldLimit, int64(ms.HeapAlloc)+pauseHeadroom))
		gcPause.old = debug.SetGCPercent(-1)
	}
	gcPause.n++
	gcPause.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcPause.mu.Lock()
			defer gcPause.mu.Unlock()
			if gcPause.n--; gcPause.n == 0 {
				debug.SetGCPercent(gcPause.old)
				debug.SetMemoryLimit(gcPause.oldLimit)
			}
		})
	}
}
