package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheLine: what `nioc-gpu backend` says of the compiled-program cache: the default
// directory where NIOC_XLA_CACHE is unset, a directory set and its programs, off, and
// a bound that is not a size.
func TestCacheLine(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	t.Setenv(graph.EnvXLACacheMax, "")
	t.Setenv(graph.EnvXLACache, "")
	require.NoError(t, os.Unsetenv(graph.EnvXLACache)) // t.Setenv restores it afterwards
	line := cacheLine()
	assert.Contains(t, line, filepath.Join(xdg, "nioc-gpu", "xla")+" (the default; $NIOC_XLA_CACHE=off: none")
	assert.Contains(t, line, "empty, at most 4000 MB")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.xla"), make([]byte, 2e6), 0o644))
	t.Setenv(graph.EnvXLACache, dir)
	assert.Equal(t, "$NIOC_XLA_CACHE="+dir+", 1 programs, 2.0 MB of at most 4000 MB ($NIOC_XLA_CACHE_MAX)", cacheLine())
	t.Setenv(graph.EnvXLACacheMax, "0")
	assert.Contains(t, cacheLine(), "of no bound")
	t.Setenv(graph.EnvXLACacheMax, "big")
	assert.Contains(t, cacheLine(), "NIOC_XLA_CACHE_MAX=\"big\": want a size")

	t.Setenv(graph.EnvXLACache, "off")
	assert.Contains(t, cacheLine(), "off (set $NIOC_XLA_CACHE=DIR")
}

// TestFlagsLine: what `nioc-gpu backend` says of XLA_FLAGS: nioc-gpu's for the CPU plugin where
// unset, the user's otherwise.
func TestFlagsLine(t *testing.T) {
	t.Setenv("XLA_FLAGS", "")
	want := "XLA_FLAGS: unset, so nioc-gpu sets --xla_disable_hlo_passes=cpu-parallel-task-assigner --xla_backend_optimization_level=2 for the CPU plugin (a fit runs a chunk a core; with fusion off, the fusion pass too; optimization level 2: faster code than XLA's 3)"
	if runtime.GOARCH == "amd64" {
		want += ", and --xla_cpu_max_isa=AVX2 besides for a likelihood whose trials are not lanes (linearized at the mean or by iLQG: a row's bits then do not depend on its place in its chunk)"
	}
	assert.Equal(t, want, flagsLine())
	t.Setenv("XLA_FLAGS", "--xla_dump_to=/tmp/d")
	assert.Equal(t, "XLA_FLAGS=--xla_dump_to=/tmp/d: yours; nioc-gpu adds none", flagsLine())
}

// TestXLACompiledNote: what fit and sample say after a run that compiled XLA programs: nothing
// without a cache or when all were loaded, where they are kept, or why none could be.
func TestXLACompiledNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   graph.CacheStats
		ok   bool
		want string
	}{
		{"no cache", graph.CacheStats{}, false, ""},
		{"all loaded", graph.CacheStats{Hits: 7}, true, ""},
		{"compiled and kept", graph.CacheStats{Hits: 2, Misses: 7, Stored: 7}, true,
			"xla: compiled 7 programs and kept them in /c: later runs of this task and batch size load them instead"},
		{"some kept", graph.CacheStats{Misses: 7, Stored: 5, Failed: 2, LastErr: "no space left on device"}, true,
			"xla: compiled 7 programs and kept 5 in /c (the others: no space left on device): later runs of this task and batch size load those instead"},
		{"not kept", graph.CacheStats{Misses: 3, Failed: 3, LastErr: "read-only file system"}, true,
			"xla: compiled 3 programs; none could be kept in /c (read-only file system)"},
	} {
		assert.Equal(t, tc.want, xlaCompiledNote(tc.st, tc.ok, "/c"), tc.name)
	}
	var b strings.Builder
	bg, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	noteXLACompiled(bg, nil, false, &b)
	assert.Empty(t, b.String(), "the Go backend compiles nothing")
}
