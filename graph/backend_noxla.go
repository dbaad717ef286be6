//go:build !cgo || noxla

package graph

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
)

// HasXLA reports whether this binary was built with the XLA backend (cgo, and not the noxla
// build tag); a build without it runs the pure-Go backend only and cross-compiles.
const HasXLA = false

func newXLA(plugin string) (backends.Backend, error) {
	return nil, fmt.Errorf("this nioc-gpu was built without the XLA backend (CGO_ENABLED=0 or -tags noxla), so it cannot load the PJRT plugin %q: use --backend go, or build with cgo (make build)", plugin)
}

func openXLA(path string, shared, async bool) (backends.Backend, error) {
	return newXLA(path)
}
