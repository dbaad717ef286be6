package graph

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// gcPercent returns the GC percentage in effect.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// Builds that overlap keep the collector off until the last ends, which restores GOGC; a
// resume called twice counts once.
func TestPauseGCNests(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	r1 := pauseGC()
	r2 := pauseGC()
	assert.Equal(t, -1, gcPercent())
	r1()
	r1()
	assert.Equal(t, -1, gcPercent(), "one build still under way")
	assert.Less(t, debug.SetMemoryLimit(-1), int64(math.MaxInt64), "a memory limit while paused")
	r2()
	assert.Equal(t, 150, gcPercent())
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "the limit restored")
}
