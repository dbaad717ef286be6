package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	require.NoError(t, Write(path, []byte("one")))
	require.NoError(t, Write(path, []byte("two")))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(b))
	left, err := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file left behind")
	assert.Error(t, Write(filepath.Join(dir, "missing", "f"), []byte("x")), "a directory that does not exist")
}

// TestRemoveStale removes what a write cut short left beside the file (the name create
// gives), and nothing else: not the file, not another file's temporaries, not look-alikes.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl.ckpt")
	require.NoError(t, Write(path, []byte("saved")))
	f, err := create(path) // a write killed before its rename
	require.NoError(t, err)
	require.NoError(t, f.Close())
	other, err := create(filepath.Join(dir, "other.ckpt"))
	require.NoError(t, err)
	require.NoError(t, other.Close())
	keep := []string{"out.jsonl.ckpt", ".out.jsonl.ckpt.tmp-", ".out.jsonl.ckpt.tmp-123456789", "out.jsonl.ckpt.tmp-12345678"}
	for _, name := range keep[1:] {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}

	n, err := RemoveStale(path)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, f.Name())
	assert.FileExists(t, other.Name(), "another file's temporary file is kept")
	for _, name := range keep {
		assert.FileExists(t, filepath.Join(dir, name))
	}
	n, err = RemoveStale(path)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left to remove")
	_, err = RemoveStale(filepath.Join(dir, "missing", "f"))
	assert.Error(t, err, "a directory that does not exist")
}
