package likelihood

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
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
		{"xla on a GPU: the whole batch", 10, 50, 10, 2, true, false, 10},
		{"xla on a GPU: 3 rows pad the top size", 3, 50, 10, 2, true, false, 10},
		{"xla on a GPU: 1 row, the small size", 1, 50, 10, 2, true, false, 1},
		{"xla on a GPU: capped", 300, 2500, 5000, 16, true, false, 2500},
		{"xla on a GPU: 156 rows, the small size", 156, 2500, 5000, 16, true, false, 156},
		{"xla on a GPU: 157 rows, one chunk of the top size, not two", 157, 2500, 5000, 16, true, false, 2500},
		{"xla on the CPU: one size, a chunk a core", 10, 50, 10, 2, true, true, 5},
		{"xla on the CPU: 3 rows pad one chunk", 3, 50, 10, 2, true, true, 5},
		{"xla on the CPU: 1 row still the one size", 1, 50, 10, 2, true, true, 5},
		{"xla on the CPU: many subjects, capped", 3, 50, 5000, 2, true, true, 50},
		{"xla on the CPU: odd rows round up", 7, 50, 7, 2, true, true, 4},
		{"xla on the CPU, one core", 10, 50, 10, 1, true, true, 10},
		{"xla on the CPU: 12 rows of at most 5, two chunks of 3 a core", 12, 5, 12, 2, true, true, 3},
		{"xla on the CPU: 50 rows of at most 5", 50, 5, 50, 2, true, true, 5},
		{"xla on the CPU: 25 rows of at most 10, two chunks of 7 a core", 25, 10, 25, 2, true, true, 7},
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
	// XLA's: two sizes on an accelerator, one on the CPU plugin.
	for host, want := range map[bool]map[int]bool{false: {2500: true, 156: true}, true: {5: true}} {
		sizes := map[int]bool{}
		for rows := 5000; rows >= 1; rows-- {
			sizes[chunkRows(rows, chunkMost(125000, 50, 50, host, true), 5000, 16, true, host)] = true
		}
		assert.Equal(t, want, sizes, "on the host: %v", host)
	}
}

func TestMaxBatchFor(t *testing.T) {
	bg, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxBatch, MaxBatchFor(bg, 50), "the Go backend")
	defer func(f func(backends.Backend) bool) { runsOnHost = f }(runsOnHost)
	runsOnHost = func(backends.Backend) bool { return false } // as on a GPU
	for _, tc := range [][2]int{{50, 25000}, {200, 6250}, {100, 12500}, {500, 2500}, {2000, DefaultMaxBatch}, {0, AcceleratorBatchSteps}} {
		assert.Equal(t, tc[1], MaxBatchFor(bg, tc[0]), "an accelerator, trials of %d steps", tc[0])
	}
}

func TestChunkMost(t *testing.T) {
	tests := []struct {
		name                    string
		maxBatch, trials, steps int
		host                    bool // the Go backend or XLA's CPU plugin
		xla                     bool
		want                    int
	}{
		{"on the CPU: HostBatch", 2500, 50, 50, true, false, 10},
		{"on the CPU: a smaller MaxBatch stands", 200, 50, 50, true, false, 4},
		{"on the CPU: long rows, one a chunk", 2500, 800, 50, true, false, 1},
		{"on the CPU: rows longer than MaxBatch", 2500, 3000, 50, true, false, 1},
		{"the Go backend: long trials keep HostBatch", 2500, 50, 200, true, false, 10},
		{"XLA's CPU plugin: XLAHostBatch", 2500, 50, 50, true, true, 5},
		{"XLA's CPU plugin: trials of 200 steps", 2500, 50, 200, true, true, 5},
		{"XLA's CPU plugin: trials of 500 steps, HostBatchSteps", 2500, 10, 500, true, true, 10},
		{"XLA's CPU plugin: very long trials, one row", 2500, 50, 5000, true, true, 1},
		{"xla on a GPU", 2500, 50, 200, false, true, 50},
		{"xla on a GPU: its default batch", 25000, 50, 50, false, true, 500},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, chunkMost(tc.maxBatch, tc.trials, tc.steps, tc.host, tc.xla), tc.name)
	}
	// 12 subjects of 50 trials, 5 restarts each, on 2 cores: chunks of 10 on the Go backend,
	// of 5 on XLA's CPU plugin.
	assert.Equal(t, 10, chunkRows(60, chunkMost(2500, 50, 50, true, false), 60, 2, false, true))
	assert.Equal(t, 5, chunkRows(60, chunkMost(2500, 50, 50, true, true), 60, 2, true, true))
}

// The planner pads into a built size until the padding has cost a build, then builds the
// ideal size; it never pads into a size that has not run, and uses a built ideal size at once.
// In the background (XLA) it keeps padding until the build is done, and a failed build is
// never used.
func TestChunkPlannerRentsThenBuilds(t *testing.T) {
	choose := func(p *chunkPlanner, ideal, rows, steps int, background bool) (int, bool) {
		return p.choose(ideal, rows, 2, 50, steps, []int{5, 1}, 300*time.Millisecond, background, false)
	}
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprint("background ", background), func(t *testing.T) {
			var p chunkPlanner
			// Nothing built: the ideal size.
			c, start := choose(&p, 5, 10, 50, background)
			assert.Equal(t, []any{5, false}, []any{c, start})
			p.done(5, 50, 50, 2*time.Second, true) // the run that built it is not timed
			c, start = choose(&p, 1, 2, 50, background)
			assert.Equal(t, []any{1, false}, []any{c, start}, "5 has not been timed yet")
			p.done(5, 50, 50, 100*time.Millisecond, false)
			// 2 rows on 2 cores: one padded chunk of 5 (0.1 s) against 1-row chunks (0.02 s):
			// 0.08 s wasted per call, so the fourth call (0.32 s ≥ 0.3 s) builds the 1-row graph.
			for call := 1; call <= 3; call++ {
				c, start = choose(&p, 1, 2, 50, background)
				assert.Equal(t, []any{5, false}, []any{c, start}, "call %d pads", call)
			}
			c, start = choose(&p, 1, 2, 50, background)
			if background {
				assert.Equal(t, []any{5, true}, []any{c, start}, "call 4 starts the build and pads")
				c, start = choose(&p, 1, 2, 50, background)
				assert.Equal(t, []any{5, false}, []any{c, start}, "pads while it builds, starts no other")
				p.built(1, 50, 50, true)
			} else {
				assert.Equal(t, []any{1, false}, []any{c, start}, "call 4 builds")
				p.done(1, 50, 50, 30*time.Millisecond, true)
			}
			c, _ = choose(&p, 1, 1, 50, background)
			assert.Equal(t, 1, c, "built: used at once")
			// Another data shape has its own sizes.
			c, _ = choose(&p, 1, 2, 200, background)
			assert.Equal(t, 1, c)
		})
	}
	// A build that failed is never used.
	var p chunkPlanner
	p.done(5, 50, 50, 100*time.Millisecond, true)
	p.done(5, 50, 50, 100*time.Millisecond, false)
	for range 4 {
		choose(&p, 1, 2, 50, true)
	}
	p.built(1, 50, 50, false)
	for range 10 {
		c, start := choose(&p, 1, 2, 50, true)
		assert.Equal(t, []any{5, false}, []any{c, start})
	}
}

// TestChunkPlannerAnySize: on an accelerator (anySize) a call whose ladder has no built size
// larger than its ideal one pads into the smallest larger size built for another ladder (the
// fit's, say), rents it as TestChunkPlannerRentsThenBuilds does and builds its own size in the
// background once the padding has cost a build; without anySize it builds its own at once,
// and a size of other trials or steps never counts.
func TestChunkPlannerAnySize(t *testing.T) {
	var p chunkPlanner
	for _, size := range []int{150, 40} { // sizes of other ladders, built and timed
		p.done(size, 20, 50, 5*time.Second, true)
		p.done(size, 20, 50, 40*time.Millisecond, false)
	}
	p.done(12, 30, 50, 5*time.Second, true) // other trials
	p.done(12, 30, 50, 10*time.Millisecond, false)
	choose := func(ideal int, anySize bool) (int, bool) {
		return p.choose(ideal, ideal, 1, 20, 50, []int{ideal, 1}, 300*time.Millisecond, true, anySize)
	}
	c, start := choose(10, false)
	assert.Equal(t, []any{10, false}, []any{c, start}, "its own ladder only: compile")
	// 10 rows padded into 40 (40 ms) against 10 ms for its own: 30 ms wasted a call, so the
	// tenth call (0.3 s) starts its build.
	for call := 1; call <= 9; call++ {
		c, start = choose(10, true)
		assert.Equal(t, []any{40, false}, []any{c, start}, "call %d pads into the smallest larger size", call)
	}
	c, start = choose(10, true)
	assert.Equal(t, []any{40, true}, []any{c, start}, "then starts its own build")
	c, start = choose(45, true)
	assert.Equal(t, []any{150, false}, []any{c, start}, "45 rows pad into 150")
	c, start = choose(200, true)
	assert.Equal(t, []any{200, false}, []any{c, start}, "no larger size built")
}

// TestSmallChunksBuildInTheBackground runs XLA's CPU plugin as an accelerator: once padding
// small calls into the fit's size has cost what a compile does, the small size compiles in
// the background while calls still pad, and small calls then run in it, with the values of
// that shape to the bit (Eval on a chunk of its size) and of the padded one to rounding. It
// runs where a plugin is installed (make xla-cpu) and is skipped otherwise.
func TestSmallChunksBuildInTheBackground(t *testing.T) {
	if _, err := graph.FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	defer func(f func(backends.Backend) bool) { runsOnHost = f }(runsOnHost)
	runsOnHost = func(backends.Backend) bool { return false }
	bx, err := graph.NewBackend(graph.BackendXLA)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	subj := simulateTrials(t, m, control.ObservePartial, natural, 2, 6, 5)
	e, err := New(m, bx, Options{Form: FormLooped})
	require.NoError(t, err)
	theta := withTemperature(m.Spec(), Options{})
	b := Batching{Most: 32, MaxBatch: 32 * len(subj), Keep: true}
	call := func(rows int) ([]float64, [][]float64) {
		rs, thetas := make([][][][]float64, rows), make([][]float64, rows)
		for i := range rows {
			rs[i], thetas[i] = subj, append([]float64(nil), theta...)
			thetas[i][0] += 0.01 * float64(i)
		}
		ll, grad, err := e.EvalRows(rs, thetas, b)
		require.NoError(t, err)
		return ll, grad
	}
	call(32) // the fit's size, timed by the next call
	call(32)
	padLL, padGrad := call(1)
	require.Equal(t, []int{32, 2}, chunkLadder(32, 32, 2, true, false))
	assert.False(t, e.chunks.isBuilt(2, len(subj), 6))
	e.chunks.mu.Lock()
	e.chunks.stats(chunkKey{2, len(subj), 6}).waste = math.Inf(1) // padding has cost a compile
	e.chunks.mu.Unlock()
	ll, grad := call(1)
	assert.Equal(t, padLL, ll, "padded while the small size compiles")
	assert.Equal(t, padGrad, grad)
	for start := time.Now(); !e.chunks.isBuilt(2, len(subj), 6); time.Sleep(20 * time.Millisecond) {
		require.Less(t, time.Since(start), 2*time.Minute, "the small size never compiled")
	}
	ll, grad = call(1)
	d, err := e.prepare([][][][]float64{subj, subj}, len(subj), 6)
	require.NoError(t, err)
	wantLL, wantGrad, err := e.Eval(d, [][]float64{theta, theta})
	require.NoError(t, err)
	assert.Equal(t, wantLL[:1], ll, "the small size's values")
	assert.Equal(t, wantGrad[:1], grad)
	assert.InEpsilon(t, padLL[0], ll[0], 1e-12)
	for j := range grad[0] {
		assert.InDelta(t, padGrad[0][j], grad[0][j], 1e-9*math.Max(1, math.Abs(padGrad[0][j])))
	}
}
