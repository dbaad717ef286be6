package graph

import (
	"runtime/debug"
	"sync"
)

// gcPause holds the garbage collector off while graphs are built (see pauseGC).
var gcPause struct {
	mu  sync.Mutex
	n   int // builds under way
	old int // the GC percentage to restore
}

// pauseGC turns the garbage collector off until every caller has called the function it
// returns. Building an unrolled graph (GoMLX nodes, their gradient, the tape) allocates
// millions of small objects that nearly all stay live until the build ends, so collections
// during a build find little garbage but mark the whole growing heap again each time: on
// cart-pole, 1.1 s of a 7.9 s fit at about the same peak memory (docs/speed.md). The
// percentage in effect before (GOGC) is restored when the last build ends.
func pauseGC() (resume func()) {
	gcPause.mu.Lock()
	if gcPause.n == 0 {
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
			}
		})
	}
}
