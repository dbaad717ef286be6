package likelihood

import (
	"sync"
	"time"
)

// chunkPlanner chooses EvalRows' chunk sizes so that a graph of a new size is built only
// once it pays. A chunk's time on the Go backend is about proportional to its rows (the tape
// runs a fixed list of element-wise instructions over every trajectory of the chunk), while
// building the graph of another size costs 0.1–2 s (docs/benchmarks.md, "Speed"); on XLA a
// size costs a compile of all its programs (seconds on a CPU, tens of seconds on a GPU; less
// where NIOC_XLA_CACHE holds them), and a chunk's time grows more slowly than its rows on a
// GPU, so the estimate below errs toward building. When fewer rows are left than the built
// sizes fit well, the planner pads them into a built size and adds up what that padding costs
// beyond a chunk of the ideal size (estimated from the built size's measured time, pro rata);
// once the sum reaches the mean time of a build it builds the ideal size (the ski-rental
// rule: never more than twice the cost of the better choice in hindsight).
type chunkPlanner struct {
	mu    sync.Mutex
	sizes map[chunkKey]*chunkStats
}

// chunkKey is a graph shape of EvalRows: rows per chunk, trials per row, steps.
type chunkKey struct{ rows, trials, steps int }

type chunkStats struct {
	built    bool
	building bool // its build runs in the background (choose's background)
	runs     int
	mean     float64 // seconds per run, builds excluded
	waste    float64 // seconds spent padding into a larger size instead of this one
}

func (p *chunkPlanner) stats(k chunkKey) *chunkStats {
	if p.sizes == nil {
		p.sizes = map[chunkKey]*chunkStats{}
	}
	s := p.sizes[k]
	if s == nil {
		s = &chunkStats{}
		p.sizes[k] = s
	}
	return s
}

// choose returns the chunk size for rows rows on workers cores: ideal (chunkRows) when it is
// built or no larger size of the ladder is, else the smallest built larger size, until the
// padding has cost as much as build, the mean time of a build. Then it returns ideal, to be
// built by the call that runs it, or, with background, the larger size still and start: the
// caller builds ideal beside the calls that follow (built marks it built), which pad into
// the larger size until it is. With anySize, a larger size built for another ladder (another
// caller's, as a sampler's Laplace approximation after its fit) counts too: on an
// accelerator, where a chunk of a few rows costs what one of hundreds does and a size costs
// a compile of tens of seconds, a few calls of a new size pad instead of compiling it.
func (p *chunkPlanner) choose(ideal, rows, workers, trials, steps int, ladder []int, build time.Duration, background, anySize bool) (chunk int, start bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := p.stats(chunkKey{ideal, trials, steps})
	if want.built {
		return ideal, false
	}
	larger := 0
	for _, c := range ladder {
		if c > ideal && p.stats(chunkKey{c, trials, steps}).built && p.stats(chunkKey{c, trials, steps}).runs > 0 {
			larger = c
		}
	}
	if anySize {
		for k, st := range p.sizes {
			if k.trials == trials && k.steps == steps && k.rows > ideal && (larger == 0 || k.rows < larger) && st.built && st.runs > 0 {
				larger = k.rows
			}
		}
	}
	if larger == 0 {
		return ideal, false
	}
	if want.building {
		return larger, false
	}
	big := p.stats(chunkKey{larger, trials, steps})
	rounds := func(c int) float64 { return float64(((rows+c-1)/c + workers - 1) / workers) }
	padded := rounds(larger) * big.mean
	exact := rounds(ideal) * big.mean * float64(ideal) / float64(larger)
	want.waste += max(padded-exact, 0)
	if want.waste < build.Seconds() {
		return larger, false
	}
	if background {
		want.building = true
		return larger, true
	}
	return ideal, false
}

// built records that a background build of size rows (choose's start) ended: ok, the size is
// built; else it stays unused.
func (p *chunkPlanner) built(rows, trials, steps int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats(chunkKey{rows, trials, steps}).built = ok
}

// isBuilt reports whether a chunk of size rows has run before.
func (p *chunkPlanner) isBuilt(rows, trials, steps int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats(chunkKey{rows, trials, steps}).built
}

// done records a run of a chunk of size rows that took d; fresh says that the size had not
// run before the call (its runs then include building the graph and are not timed).
func (p *chunkPlanner) done(rows, trials, steps int, d time.Duration, fresh bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats(chunkKey{rows, trials, steps})
	s.built = true
	if fresh {
		return
	}
	s.runs++
	s.mean += (d.Seconds() - s.mean) / float64(s.runs)
}

// startBuild marks size rows as building in the background and reports true, unless it is
// built or building already (then false: nothing to start).
func (p *chunkPlanner) startBuild(rows, trials, steps int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats(chunkKey{rows, trials, steps})
	if s.built || s.building {
		return false
	}
	s.building = true
	return true
}
