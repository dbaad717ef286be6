package likelihood

import (
	"github.com/gomlx/gomlx/backends"

	"github.com/nioc-gpu/nioc-gpu/graph"
)

// WholeRecursion as Options.StepsPerCall runs each recursion of the looped form in one program
// call: on XLA a while loop over the program of one step, elsewhere a block of all its steps.
const WholeRecursion = -1

// DefaultStepsPerCall is the number of time steps each program of the looped form runs on
// backend b when Options.StepsPerCall is 0: on XLA the whole recursion, as a while loop
// (docs/backends.md, "While loops": on 2 CPU cores 23 calls an evaluation instead of 219 for
// reaching, 24 instead of 820 for cart-pole, faster evaluations and compiles); elsewhere one
// (the Go backend runs the looped form only when asked, and blocks of steps did not pay there).
func DefaultStepsPerCall(b backends.Backend) int {
	if graph.BuildsStableHLO(b) {
		return WholeRecursion
	}
	return 1
}
