package likelihood

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/internal/xlaenv"
)

// TestMain runs the tests with XLA's compiled-program cache off unless NIOC_XLA_CACHE is set.
func TestMain(m *testing.M) { xlaenv.TestMain(m) }
