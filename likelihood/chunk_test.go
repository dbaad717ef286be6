package likelihood

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestChunkRows(t *testing.T) {
	tests := []struct {
		name                      string
		rows, most, Most, workers int
		slow, host                bool
		want                      int
	}{
		{"10 restarts start: two chunks of 5", 10, 50, 10, 2, false, true, 5},
		{"7 rows left: still the top rung", 7, 50, 10, 2, false, true, 5},
		{"3 rows left: one padded chunk beats two rounds", 3, 50, 10, 2, false, true, 5},
		{"2 rows left: one row per core", 2, 50, 10, 2, false, true, 1},
		{"1 row left", 1, 50, 10, 2, false, true, 1},
		{"50 restarts: 25, then 6, then 1", 50, 50, 50, 2, false, true, 25},
		{"12 of 50 restarts left", 12, 50, 50, 2, false, true, 6},
		{"13 of 50 restarts left", 13, 50, 50, 2, false, true, 25},
		{"many subjects: capped by MaxBatch", 5000, 50, 5000, 2, false, true, 50},
		{"many subjects, 90 left", 90, 50, 5000, 2, false, true, 50},
		{"many subjects, 24 left", 24, 50, 5000, 2, false, true, 12},
		{"unknown Most: the ladder from MaxBatch", 10, 50, 0, 2, false, true, 12},
		{"one core", 10, 50, 10, 1, false, true, 10},
		{"one core, 2 left", 2, 50, 10, 1, false, true, 2},
		{"one core, 1 left", 1, 50, 10, 1, false, true, 1},
		{"xla on a GPU: one size", 3, 50, 10, 2, true, false, 10},
		{"xla on a GPU: one size, 10 rows", 10, 50, 10, 2, true, false, 10},
		{"xla on a GPU: capped", 3, 50, 5000, 2, true, false, 50},
		{"xla on the CPU: one size, a chunk a core", 10, 50, 10, 2, true, true, 5},
		{"xla on the CPU: 3 rows pad one chunk", 3, 50, 10, 2, true, true, 5},
		{"xla on the CPU: 1 row still the one size", 1, 50, 10, 2, true, true, 5},
		{"xla on the CPU: many subjects, capped", 3, 50, 5000, 2, true, true, 50},
		{"xla on the CPU: odd rows round up", 7, 50, 7, 2, true, true, 4},
		{"xla on the CPU, one core", 10, 50, 10, 1, true, true, 10},
	}
	for _, tc := range tests {
		got := chunkRows(tc.rows, tc.most, tc.Most, tc.workers, tc.slow, tc.host)
		assert.Equal(t, tc.want, got, tc.name)
	}
	// The Go backend's sizes over a whole fit form a short ladder.
	sizes := map[int]bool{}
	for rows := 50; rows >= 1; rows-- {
		sizes[chunkRows(rows, 50, 50, 2, false, true)] = true
	}
	assert.Equal(t, map[int]bool{25: true, 6: true, 1: true}, sizes)
}

func TestChunkMost(t *testing.T) {
	tests := []struct {
		name             string
		maxBatch, trials int
		slow, host       bool
		want             int
	}{
		{"go", 2500, 50, false, true, 50},
		{"xla on a GPU", 2500, 50, true, false, 50},
		{"xla on the CPU: HostBatch", 2500, 50, true, true, 10},
		{"xla on the CPU: a smaller MaxBatch stands", 200, 50, true, true, 4},
		{"xla on the CPU: long rows, one a chunk", 2500, 800, true, true, 1},
		{"go: long rows", 2500, 3000, false, true, 1},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, chunkMost(tc.maxBatch, tc.trials, tc.slow, tc.host), tc.name)
	}
	// 12 subjects of 50 trials, 5 restarts each, on XLA's CPU plugin, 2 cores: chunks of 10.
	assert.Equal(t, 10, chunkRows(60, chunkMost(2500, 50, true, true), 60, 2, true, true))
}

// The planner pads into a built size until the padding has cost a build, then builds the
// ideal size; it never pads into a size that has not run, and uses a built ideal size at once.
func TestChunkPlannerRentsThenBuilds(t *testing.T) {
	var p chunkPlanner
	ladder := []int{5, 1}
	build := 300 * time.Millisecond
	// Nothing built: the ideal size.
	assert.Equal(t, 5, p.choose(5, 10, 2, 50, 50, ladder, build))
	p.done(5, 50, 50, 2*time.Second, true) // the run that built it is not timed
	assert.Equal(t, 1, p.choose(1, 2, 2, 50, 50, ladder, build), "5 has not been timed yet")
	p.done(5, 50, 50, 100*time.Millisecond, false)
	// 2 rows on 2 cores: one padded chunk of 5 (0.1 s) against 1-row chunks (0.02 s): 0.08 s
	// wasted per call, so the fourth call (0.32 s ≥ 0.3 s) builds the 1-row graph.
	for call := 1; call <= 3; call++ {
		assert.Equal(t, 5, p.choose(1, 2, 2, 50, 50, ladder, build), "call %d pads", call)
	}
	assert.Equal(t, 1, p.choose(1, 2, 2, 50, 50, ladder, build), "call 4 builds")
	p.done(1, 50, 50, 30*time.Millisecond, true)
	assert.Equal(t, 1, p.choose(1, 1, 2, 50, 50, ladder, build), "built: used at once")
	// Another data shape has its own sizes.
	assert.Equal(t, 1, p.choose(1, 2, 2, 50, 200, ladder, build))
}
