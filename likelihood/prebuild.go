package likelihood

import "github.com/nioc-gpu/nioc-gpu/graph"

// Prebuild starts compiling, in the background, the programs of the chunk size that EvalRows
// would choose for a call of rows at theta (fitting scale) with b, where programs compile
// slowly on an accelerator (XLA on a GPU), so that the compile runs on host cores beside
// other work on the device instead of before the call: `sample` starts its sampler's shape
// so while its fit runs. It evaluates one chunk of rows (padded with copies of the last) and
// discards the result; a call of that size meanwhile waits for the compile where it has no
// built size to pad into. It does nothing elsewhere (on a CPU the compile would take the
// cores the other work runs on), for a size built or building already, for no rows, or
// where rows have more trials than b.MaxBatch (evaluated in parts).
func (e *Evaluator) Prebuild(rows [][][][]float64, theta [][]float64, b Batching) {
	if len(rows) == 0 || len(rows) != len(theta) || !graph.CompilesSlowly(e.Backend()) || runsOnHost(e.Backend()) {
		return
	}
	trials, steps, _, ideal := e.plan(rows, b)
	if b.MaxBatch > 0 && trials > b.MaxBatch {
		return
	}
	if e.chunks.startBuild(ideal, trials, steps) {
		e.buildChunk(ideal, rows, theta, trials, steps)
	}
}
