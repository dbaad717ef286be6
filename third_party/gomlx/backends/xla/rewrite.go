package xla

// This file is a patch of nioc-gpu's vendored copy of GoMLX v0.26.0 (third_party/README.md).
// It lets a caller read a computation's StableHLO program and replace the program that is
// compiled, keeping the computation's parameters and outputs: nioc-gpu uses it to run a
// recursion of many steps as one StableHLO while loop over the program of one step, which
// GoMLX v0.26's graph API cannot express.

import (
	"github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/gomlx/backends"
	"github.com/pkg/errors"
)

// SetProgramRewrite makes Compile pass the StableHLO program text through rewrite before it
// compiles it. The rewritten program must keep the main function's parameters and results
// (their order and shapes), which the Executable takes from the builder.
func (b *Builder) SetProgramRewrite(rewrite func(program string) (string, error)) {
	b.rewrite = rewrite
}

// StableHLO finishes the builder's main function with outputs and returns the StableHLO
// program text without compiling it. The builder cannot be used afterwards.
func (b *Builder) StableHLO(outputs []backends.Op) (string, error) {
	if err := b.CheckValid(); err != nil {
		return "", err
	}
	nodes, err := b.verifyAndCastValues("StableHLO", outputs...)
	if err != nil {
		return "", err
	}
	values := make([]*stablehlo.Value, len(nodes))
	for i, n := range nodes {
		values[i] = n.value
	}
	if err := b.fn.Return(values...); err != nil {
		return "", errors.WithMessagef(err, "backend %q: finishing StableHLO program %q", BackendName, b.name)
	}
	program, err := b.builder.Build()
	if err != nil {
		return "", errors.WithMessagef(err, "backend %q: building StableHLO program %q", BackendName, b.name)
	}
	b.compiled = true
	return string(program), nil
}
