package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartRecording: NIOC_CPUPROFILE and NIOC_GOTRACE write their recordings to the file
// they name, nothing when unset, and a path that cannot be created leaves the run going.
func TestStartRecording(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		env   string
		start func(w io.Writer) error
		stop  func()
	}{
		{"NIOC_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile},
		{"NIOC_GOTRACE", trace.Start, trace.Stop},
	} {
		t.Setenv(c.env, "")
		startRecording(c.env, c.start, c.stop)() // nothing to record: a no-op
		path := filepath.Join(dir, c.env)
		t.Setenv(c.env, path)
		end := startRecording(c.env, c.start, c.stop)
		end()
		st, err := os.Stat(path)
		require.NoError(t, err, c.env)
		assert.Positive(t, st.Size(), "%s: a recording", c.env)
		t.Setenv(c.env, filepath.Join(dir, "missing", "file"))
		startRecording(c.env, c.start, c.stop)() // reported on stderr, and the run goes on
		_, err = os.Stat(filepath.Join(dir, "missing"))
		assert.True(t, os.IsNotExist(err), c.env)
	}
}
