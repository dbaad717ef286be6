package xlapatch

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/graph"
)

// A site as the plugin has it: movq $0x200,-0xb0(%rbp); movq $0x8,-0xa8(%rbp).
var (
	siteOriginal = []byte{0x48, 0xc7, 0x85, 0x50, 0xff, 0xff, 0xff, 0x00, 0x02, 0x00, 0x00,
		0x48, 0xc7, 0x85, 0x58, 0xff, 0xff, 0xff, 0x08, 0x00, 0x00, 0x00}
	sitePatched = []byte{0x48, 0xc7, 0x85, 0x50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
		0x48, 0xc7, 0x85, 0x58, 0xff, 0xff, 0xff, 0x08, 0x00, 0x00, 0x00}
)

// fakePlugin returns the bytes of a file with sites at offsets, as installed and as patched,
// and the Plugin that describes them.
func fakePlugin(t *testing.T, offsets ...int64) (orig, patched []byte, p Plugin) {
	r := rand.New(rand.NewPCG(1, 2))
	orig = make([]byte, 4096)
	for i := range orig {
		orig[i] = byte(r.IntN(256))
	}
	patched = make([]byte, len(orig))
	copy(patched, orig)
	for _, off := range offsets {
		copy(orig[off:], siteOriginal)
		copy(patched[off:], sitePatched)
	}
	return orig, patched, Plugin{Name: "test build", Original: sum(orig), Patched: sum(patched), Sites: offsets}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func write(t *testing.T, b []byte) string {
	path := filepath.Join(t.TempDir(), "pjrt_c_api_cpu_plugin.so")
	require.NoError(t, os.WriteFile(path, b, 0o755))
	return path
}

func TestPatch(t *testing.T) {
	orig, patched, p := fakePlugin(t, 100, 1000, 3000)
	path := write(t, orig)
	st, err := p.Check(path)
	require.NoError(t, err)
	assert.Equal(t, Concurrent, st)

	st, err = p.Patch(path)
	require.NoError(t, err)
	assert.Equal(t, Sequential, st)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, patched, got, "only the thresholds change")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	st, err = p.Check(path)
	require.NoError(t, err)
	assert.Equal(t, Sequential, st)

	// Patching again changes nothing.
	st, err = p.Patch(path)
	require.NoError(t, err)
	assert.Equal(t, Sequential, st)
	got, _ = os.ReadFile(path)
	assert.Equal(t, patched, got)
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temporary file left")
}

func TestPatchRefusesOtherBuilds(t *testing.T) {
	orig, _, p := fakePlugin(t, 100, 1000)
	other := append([]byte{}, orig...)
	other[5]++ // another build: same sites, another hash
	path := write(t, other)
	st, err := p.Patch(path)
	assert.Equal(t, Unknown, st)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), sum(other))
	assert.Contains(t, err.Error(), "test build")
	got, _ := os.ReadFile(path)
	assert.Equal(t, other, got, "left as it is")

	// The right hash but no executor options at a site (a wrong offset): refused.
	q := p
	q.Sites = []int64{100, 1001}
	path = write(t, orig)
	_, err = q.Patch(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0x3e9")
	got, _ = os.ReadFile(path)
	assert.Equal(t, orig, got)

	// A patch that does not give the expected file: refused.
	q = p
	q.Patched = sum([]byte("something else"))
	_, err = q.Patch(path)
	require.Error(t, err)
	got, _ = os.ReadFile(path)
	assert.Equal(t, orig, got)
}

func TestCheck(t *testing.T) {
	orig, patched, p := fakePlugin(t, 100, 1000)
	mixed := append([]byte{}, orig...)
	copy(mixed[1000:], sitePatched)
	broken := append([]byte{}, orig...)
	broken[1000+18] = 9 // the second movq stores 9
	tests := []struct {
		name string
		file []byte
		want State
	}{
		{"as installed", orig, Concurrent},
		{"patched", patched, Sequential},
		{"one site patched", mixed, Unknown},
		{"not the instructions", broken, Unknown},
		{"truncated", orig[:1010], Unknown},
		{"random", make([]byte, 4096), Unknown},
	}
	for _, tc := range tests {
		st, err := p.Check(write(t, tc.file))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, st, tc.name)
	}
	_, err := p.Check(filepath.Join(t.TempDir(), "absent.so"))
	assert.Error(t, err)
}

// The sites of CPU are those of the plugin `make xla-cpu` installs, patched or not.
func TestInstalledCPUPlugin(t *testing.T) {
	path, err := graph.FindPlugin("cpu")
	if err != nil {
		t.Skip("no CPU plugin installed (make xla-cpu):", err)
	}
	st, err := CPU.Check(path)
	require.NoError(t, err)
	assert.Contains(t, []State{Concurrent, Sequential}, st, "%s is not %s", path, CPU.Name)
}
