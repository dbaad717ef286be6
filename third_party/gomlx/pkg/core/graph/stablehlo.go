package graph

// This file is a patch of nioc-gpu's vendored copy of GoMLX v0.26.0 (third_party/README.md):
// access to the StableHLO program of a graph built on the XLA backend (backends/xla/rewrite.go).

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/internal/exceptions"
	"github.com/gomlx/gomlx/pkg/support/xslices"
	"github.com/pkg/errors"
)

// programRewriter is what the XLA backend's builder offers (backends/xla/rewrite.go).
type programRewriter interface {
	SetProgramRewrite(rewrite func(program string) (string, error))
	StableHLO(outputs []backends.Op) (string, error)
}

// HasStableHLO reports whether g's backend builds StableHLO programs that StableHLO and
// CompileRewritten can read and replace (the XLA backend).
func (g *Graph) HasStableHLO() bool {
	_, ok := g.build().(programRewriter)
	return ok
}

// StableHLO returns the StableHLO program text of the computation with the given outputs,
// without compiling it; g cannot be compiled afterwards. It returns an error if g's backend
// does not build StableHLO.
func (g *Graph) StableHLO(outputs ...*Node) (string, error) {
	rw, ok := g.build().(programRewriter)
	if !ok {
		return "", errors.Errorf("graph %q: backend %q does not build StableHLO", g.name, g.backend.Name())
	}
	for i, node := range outputs {
		if node == nil || node.Graph() != g || node.NumOutputs() != 1 {
			return "", errors.Errorf("graph %q: output %d is not a single-output node of it", g.name, i)
		}
	}
	return rw.StableHLO(xslices.Map(outputs, func(node *Node) backends.Op { return node.outputOps[0] }))
}

// CompileRewritten is Compile, with the StableHLO program passed through rewrite before the
// backend compiles it (see the XLA backend's Builder.SetProgramRewrite). It panics if g's
// backend does not build StableHLO.
func (g *Graph) CompileRewritten(rewrite func(program string) (string, error), outputs ...*Node) {
	rw, ok := g.build().(programRewriter)
	if !ok {
		exceptions.Panicf("graph %q: backend %q does not build StableHLO", g.name, g.backend.Name())
	}
	rw.SetProgramRewrite(rewrite)
	g.Compile(outputs...)
}
