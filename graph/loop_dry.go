// Dry runs of looped Flows: a Flow run on a dry tape builds every program it would run, in
// order, and Compile compiles them concurrently, so that a first evaluation's compile time is
// that of its slowest program rather than the sum.

package graph

import (
	"time"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Dry returns an empty tape of tp's kind (recording or not, reverse or forward mode) that runs
// nothing: a Flow and Backward on it build, in order, every program that they would run on a
// tape of that kind with inputs of the same shapes, and Compile then compiles them
// concurrently. Values on a dry tape carry layouts and shapes but no numbers (Fetch and Grad
// give zeros). Dry suits Flows whose calls do not depend on the numbers (no Fetch between
// stages), such as a likelihood.
func (tp *Tape) Dry() *Tape {
	return &Tape{e: tp.e, record: tp.record, fwd: tp.fwd, ct: map[*Value]ref{}, dry: true, queued: map[*stageProg]bool{}}
}

// Compile compiles, concurrently, the programs that a dry tape's Flow and Backward asked for
// and the Engine has not compiled yet, and returns what failed. It panics if tp is not dry.
func (tp *Tape) Compile() error {
	if !tp.dry {
		panic("graph: Compile of a tape that is not dry")
	}
	tp.flush()
	err := tp.e.parallel(tp.pending)
	tp.pending = nil
	return err
}

// Precompile runs flow on a dry tape of tp's kind and compiles, concurrently, the programs it
// asked for (Dry, Compile), the first time tp's Engine is given key: key names what the
// programs depend on (the flow and its input shapes). flow must call on its tape what it will
// call on tp, Backward included. After a successful Precompile, running flow on tp compiles
// nothing more (ProgramStats.Late stays unchanged) unless its calls depend on the numbers.
func (tp *Tape) Precompile(key string, flow func(dry *Tape)) error {
	e := tp.e
	e.mu.Lock()
	warm := e.warm[key]
	e.mu.Unlock()
	if warm {
		tp.warm = true
		return nil
	}
	dry := tp.Dry()
	t0 := time.Now()
	flow(dry) // builds the programs
	e.mu.Lock()
	e.stats.Waited += time.Since(t0)
	e.mu.Unlock()
	if err := dry.Compile(); err != nil {
		return err
	}
	e.mu.Lock()
	e.warm[key] = true
	e.mu.Unlock()
	tp.warm = true
	return nil
}

// queue has a dry tape's Compile compile p.
func (tp *Tape) queue(p *stageProg) {
	if p.g != nil && !tp.queued[p] && !p.compiled.Load() {
		tp.queued[p] = true
		tp.pending = append(tp.pending, func() { tp.e.compile(p, false) })
	}
}

// dryOuts returns the (nil) tensors that a dry run of c gives for its program's output groups.
func dryOuts(c *call, outs []outGroup, tangents bool) []*tensors.Tensor {
	n := 0
	for j, og := range outs {
		switch {
		case og.lay.nodes == 0:
		case c.loop != nil && j == 0, c.stackOut:
			n++
		default:
			n += max(c.steps, 1)
		}
	}
	if c.loop != nil && c.loop.save {
		n++
	}
	if tangents {
		n *= 2
	}
	return make([]*tensors.Tensor, n)
}
