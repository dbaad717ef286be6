// Package xlaenv sets XLA's environment for the programs that time or test it: the tests of
// the packages that run XLA, and the benchmarks.
package xlaenv

import (
	"os"
	"testing"
)

// envXLACache is graph.EnvXLACache (graph's own tests import this package).
const envXLACache = "NIOC_XLA_CACHE"

// CacheOffUnlessSet turns XLA's compiled-program cache off where NIOC_XLA_CACHE is unset, so
// that the process compiles every program it runs and writes nothing to the cache's default
// directory in the user's cache directory (graph.XLACacheDir): a benchmark's compile times are
// then compiles, not loads left by an earlier run, and a test's programs are its own. Set,
// the variable is left as it is.
func CacheOffUnlessSet() {
	if _, ok := os.LookupEnv(envXLACache); !ok {
		os.Setenv(envXLACache, "off")
	}
}

// TestMain runs a package's tests with CacheOffUnlessSet; call it from the package's
// TestMain. A test of the cache sets its own directory.
func TestMain(m *testing.M) {
	CacheOffUnlessSet()
	os.Exit(m.Run())
}
