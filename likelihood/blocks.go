package likelihood

import (
	"github.com/gomlx/gomlx/backends"
)

// DefaultStepsPerCall is the number of time steps each program of the looped form runs on
// backend b when Options.StepsPerCall is 0 (docs/backends.md, "Steps per call").
func DefaultStepsPerCall(b backends.Backend) int {
	return 1
}
