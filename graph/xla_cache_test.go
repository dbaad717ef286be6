package graph

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiskCache checks the compiled-program cache's files: what is stored loads back by its
// program and salt only; a damaged file, an empty serialization or a failure reported by the
// backend count as failures and load nothing; concurrent writers of one key leave one whole
// file and no temporary ones.
func TestDiskCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c, err := newDiskCache(dir, []byte("salt A"), 0)
	require.NoError(t, err)
	other, err := newDiskCache(dir, []byte("salt B"), 0)
	require.NoError(t, err)

	prog, exe := []byte("module @p {}"), []byte("compiled code")
	assert.Nil(t, c.Load(prog))
	c.Store(prog, exe, nil)
	assert.Equal(t, exe, c.Load(prog))
	assert.Nil(t, c.Load([]byte("module @q {}")), "another program")
	assert.Nil(t, other.Load(prog), "another salt (plugin, flags, device)")
	assert.Equal(t, CacheStats{Hits: 1, Misses: 2, Stored: 1}, c.stats())

	// A damaged file is compiled again, and the new executable replaces it.
	path := c.path(prog)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o644))
	assert.Nil(t, c.Load(prog))
	c.Store(prog, exe, nil)
	assert.Equal(t, exe, c.Load(prog))

	c.Store(prog, nil, assert.AnError)
	c.Store([]byte("module @r {}"), nil, nil)
	s := c.stats()
	assert.Equal(t, int64(2), s.Failed)
	assert.Equal(t, "empty serialization", s.LastErr)
	assert.Nil(t, c.Load([]byte("module @r {}")))

	var wg sync.WaitGroup
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Store([]byte("module @big {}"), big, nil)
		}()
	}
	wg.Wait()
	assert.Equal(t, big, c.Load([]byte("module @big {}")))
	tmp, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	require.NoError(t, err)
	assert.Empty(t, tmp)

	_, err = newDiskCache(filepath.Join(path, "sub"), nil, 0) // a file where a directory should be
	assert.ErrorContains(t, err, EnvXLACache)
}

// TestXLACacheSalt: the key changes with the plugin file, the platform version, the device and
// XLA_FLAGS, and on a CPU platform it holds the processor's features.
func TestXLACacheSalt(t *testing.T) {
	plugin := filepath.Join(t.TempDir(), "plugin.so")
	require.NoError(t, os.WriteFile(plugin, []byte("v1"), 0o644))
	t.Setenv("XLA_FLAGS", "--a")
	base := string(xlaCacheSalt(plugin, "cpu", "1.0", "cpu:0"))
	assert.Contains(t, base, cpuFingerprint())
	assert.NotEqual(t, base, string(xlaCacheSalt(plugin, "cpu", "1.1", "cpu:0")))
	assert.NotEqual(t, base, string(xlaCacheSalt(plugin, "cuda", "1.0", "cpu:0")))
	assert.NotEqual(t, base, string(xlaCacheSalt(plugin, "cpu", "1.0", "other")))
	t.Setenv("XLA_FLAGS", "--b")
	assert.NotEqual(t, base, string(xlaCacheSalt(plugin, "cpu", "1.0", "cpu:0")))
	t.Setenv("XLA_FLAGS", "--a")
	require.NoError(t, os.WriteFile(plugin, []byte("v2, longer"), 0o644))
	assert.NotEqual(t, base, string(xlaCacheSalt(plugin, "cpu", "1.0", "cpu:0")))
	assert.NotContains(t, string(xlaCacheSalt(plugin, "cuda", "1.0", "H100")), cpuFingerprint())
}

// TestXLACacheAcrossBackends: with EnvXLACache set, a second backend (as a second process
// would) loads the programs the first compiled, a while loop's among them, and computes the
// same numbers to the bit. It runs where a plugin is installed (make xla-cpu).
func TestXLACacheAcrossBackends(t *testing.T) {
	cpuPlugin(t)
	t.Setenv(EnvXLACache, t.TempDir())
	t.Setenv("XLA_FLAGS", "")
	run := func(b backends.Backend) ([]float64, []float64) {
		prog := NewProgram(b, "cached", func(g *G.Graph, in []*G.Node) []*G.Node {
			s := N(in[0])
			return []*G.Node{Add(Mul(Sin(s), Exp(s)), Sqrt(Square(s))).Node(g)}
		})
		out, err := prog.Run(NewTensor([]float64{0.3, -1.2, 2.5, 0.7}, 4))
		require.NoError(t, err)
		return out[0].Data, whileLoopValues(t, b)
	}
	first, err := newXLA("cpu")
	require.NoError(t, err)
	a, aw := run(first)
	s1, ok := XLACacheStats(first)
	require.True(t, ok)
	t.Logf("first backend: %+v", s1)
	assert.Zero(t, s1.Hits)
	assert.Zero(t, s1.Failed, s1.LastErr)
	assert.GreaterOrEqual(t, s1.Misses, int64(3))
	assert.Equal(t, s1.Misses, s1.Stored)

	second, err := newXLA("cpu")
	require.NoError(t, err)
	b, bw := run(second)
	s2, _ := XLACacheStats(second)
	t.Logf("second backend: %+v", s2)
	assert.Equal(t, CacheStats{Hits: s1.Stored}, s2, "everything loaded, nothing compiled")
	assert.Equal(t, a, b)
	assert.Equal(t, aw, bw)

	t.Setenv(EnvXLACache, "")
	plain, err := newXLA("cpu")
	require.NoError(t, err)
	_, ok = XLACacheStats(plain)
	assert.False(t, ok, "no cache with %s empty", EnvXLACache)

	// Unset: the CPU plugin keeps its programs in the user's cache directory, as a GPU's.
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	require.NoError(t, os.Unsetenv(EnvXLACache)) // t.Setenv restores it afterwards
	byDefault, err := newXLA("cpu")
	require.NoError(t, err)
	c, cw := run(byDefault)
	s3, ok := XLACacheStats(byDefault)
	require.True(t, ok, "a cache by default")
	assert.Equal(t, CacheStats{Hits: 0, Misses: s1.Misses, Stored: s1.Stored}, s3)
	n, _, err := XLACacheUsage(filepath.Join(xdg, "nioc-gpu", "xla"))
	require.NoError(t, err)
	assert.EqualValues(t, s1.Stored, n, "programs in $XDG_CACHE_HOME/nioc-gpu/xla")
	assert.Equal(t, a, c)
	assert.Equal(t, aw, cw)
}

// whileLoopValues runs TestWhileLoopsEqualSteps's two recursions (T = 7) as while loops on b
// and returns their value and gradient.
func whileLoopValues(t *testing.T, b backends.Backend) []float64 {
	const B, T = 3, 7
	ab := []float64{0.7, 0.8, 0.9, -0.3, -0.2, 0.1}
	x := make([]float64, T*B)
	for i := range x {
		x[i] = 0.25 * float64(i%5)
	}
	e := NewEngine(b)
	e.SetWhileLoops(true)
	require.True(t, e.WhileLoops())
	tp := e.NewTape(true)
	defer tp.Release()
	abv := tp.Input(ab, 2, []int{B}, true)
	out := flowProgram(tp, abv, tp.Series(x, T, 1, []int{B}, false))
	val := tp.Fetch(out)
	tp.Backward(out)
	return append(val, tp.Grad(abv)...)
}

// TestXLAAsyncExecution: with executions that return once enqueued (EnvXLAAsync; here on the
// CPU plugin without shared buffers, the configuration that allows it), chained calls — a while
// loop's forward and VJP programs, the tape's other programs — give the same numbers to the bit
// as calls that wait. It runs where a plugin is installed (make xla-cpu).
func TestXLAAsyncExecution(t *testing.T) {
	path := cpuPlugin(t)
	t.Setenv(EnvXLACache, "")
	sync, err := openXLA(path, true, false)
	require.NoError(t, err)
	async, err := openXLA(path, false, true)
	require.NoError(t, err)
	want := whileLoopValues(t, sync)
	for range 5 {
		assert.Equal(t, want, whileLoopValues(t, async))
	}
}

// TestXLACacheDir: NIOC_XLA_CACHE where set ("" and "off": none); unset, the user's cache
// directory (on every plugin, the CPU's too), none where there is no such directory.
func TestXLACacheDir(t *testing.T) {
	home := func() (string, error) { return "/home/u/.cache", nil }
	for _, tc := range []struct {
		name      string
		set       bool
		value     string
		userCache func() (string, error)
		want      string
		byDefault bool
	}{
		{"unset", false, "", home, "/home/u/.cache/nioc-gpu/xla", true},
		{"unset, no user cache directory", false, "", func() (string, error) { return "", os.ErrNotExist }, "", false},
		{"unset, empty user cache directory", false, "", func() (string, error) { return "", nil }, "", false},
		{"a directory", true, "/scratch/xla", home, "/scratch/xla", false},
		{"a directory, trimmed", true, " /scratch/xla ", home, "/scratch/xla", false},
		{"empty", true, "", home, "", false},
		{"off", true, "off", home, "", false},
		{"OFF", true, " OFF ", home, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) {
				require.Equal(t, EnvXLACache, k)
				return tc.value, tc.set
			}
			dir, byDefault := xlaCacheDir(lookup, tc.userCache)
			assert.Equal(t, tc.want, dir)
			assert.Equal(t, tc.byDefault, byDefault)
		})
	}
}

// TestXLACacheMax: sizes in the units of --max-memory, 0 for no bound, the default where
// unset, and an error naming the variable otherwise.
func TestXLACacheMax(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
		err   bool
	}{{"", DefaultXLACacheMax, false}, {"500MB", 500_000_000, false}, {"2GiB", 2 << 30, false},
		{"1.5 GB", 1_500_000_000, false}, {"0", 0, false}, {"lots", 0, true}, {"-1GB", 0, true}} {
		t.Setenv(EnvXLACacheMax, tc.value)
		got, err := XLACacheMax()
		if tc.err {
			assert.ErrorContains(t, err, EnvXLACacheMax, "%q", tc.value)
			continue
		}
		require.NoError(t, err, "%q", tc.value)
		assert.Equal(t, tc.want, got, "%q", tc.value)
	}
}

// TestDiskCacheTrim: past its bound the cache removes the programs used longest ago, a program
// loaded counting as used then, down to four fifths of the bound; without a bound it keeps
// everything.
func TestDiskCacheTrim(t *testing.T) {
	dir := t.TempDir()
	exe := make([]byte, 1000) // each file: 1,032 bytes with its checksum
	c, err := newDiskCache(dir, nil, 5000)
	require.NoError(t, err)
	prog := func(i int) []byte { return []byte{'p', byte('0' + i)} }
	age := func(i int, ago time.Duration) { // file times are coarse: set them apart by hand
		then := time.Now().Add(-ago)
		require.NoError(t, os.Chtimes(c.path(prog(i)), then, then))
	}
	for i := range 4 {
		c.Store(prog(i), exe, nil)
		age(i, time.Duration(10-i)*time.Minute) // p0 oldest
	}
	require.NotNil(t, c.Load(prog(0)), "p0 used now: the newest")
	c.Store(prog(4), exe, nil) // 5 × 1,032 > 5,000: trimmed to ≤ 4,000, the oldest first
	n, size, err := XLACacheUsage(dir)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.LessOrEqual(t, size, int64(4000))
	assert.Equal(t, int64(2), c.stats().Evicted)
	assert.Nil(t, c.Load(prog(1)), "p1: used longest ago")
	assert.Nil(t, c.Load(prog(2)))
	for _, i := range []int{0, 3, 4} {
		assert.NotNil(t, c.Load(prog(i)), "p%d kept", i)
	}

	// A program larger than four fifths of the bound is removed, not the others.
	c.Store(prog(5), make([]byte, 4500), nil)
	n, size, err = XLACacheUsage(dir)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Nil(t, c.Load(prog(5)))
	for _, i := range []int{0, 3, 4} {
		assert.NotNil(t, c.Load(prog(i)), "p%d kept beside a program too large", i)
	}

	unbounded, err := newDiskCache(t.TempDir(), nil, 0)
	require.NoError(t, err)
	for i := range 8 {
		unbounded.Store(prog(i), exe, nil)
	}
	n, _, err = XLACacheUsage(unbounded.dir)
	require.NoError(t, err)
	assert.Equal(t, 8, n)
	assert.Zero(t, unbounded.stats().Evicted)
}
