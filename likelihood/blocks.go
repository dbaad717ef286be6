package likelihood

import (
	"github.com/gomlx/gomlx/backends"
)

// DefaultStepsPerCall is the number of time steps each program of the looped form runs on
// backend b when Options.StepsPerCall is 0: one on every backend measured (docs/backends.md,
// "Steps per call": on 2 CPU cores, Go and XLA, larger blocks cut calls but not time, and XLA
// compiles them for longer). The GPU's, where a call's latency is most of an evaluation, is
// to be set here from `bench/gpu/run.sh blocks`.
func DefaultStepsPerCall(b backends.Backend) int {
	_ = b // one step per call on every backend measured so far
	return 1
}
