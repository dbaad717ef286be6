//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outputs are shared as files normally are: 0666 less the umask (0644 under the usual 022),
// also those written atomically through a temporary file (summary.json, the tables).
func TestCLIOutputModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3")
	cliFit(t, data, filepath.Join(dir, "r.jsonl"))
	cliSample(t, data, filepath.Join(dir, "s"), "--plots=false")
	for _, f := range []string{"d.csv", "r.jsonl", "r.csv", "s/draws.csv", "s/summary.csv", "s/summary.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), f)
	}
}
