package graph

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

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
	c, err := newDiskCache(dir, []byte("salt A"))
	require.NoError(t, err)
	other, err := newDiskCache(dir, []byte("salt B"))
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

	_, err = newDiskCache(filepath.Join(path, "sub"), nil) // a file where a directory should be
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
	assert.False(t, ok, "no cache without %s", EnvXLACache)
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
