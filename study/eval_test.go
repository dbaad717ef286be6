package study

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func linearSpec(t *testing.T) models.Spec {
	t.Helper()
	m, err := models.Get("linear")
	require.NoError(t, err)
	return m.Spec()
}

func TestConfigSameData(t *testing.T) {
	base := Config{Task: "linear", Observe: "partial", Sets: 3, Trials: 4, Steps: 20, Seed: 1, Restarts: 2,
		Methods: []string{"ours"}, Linearize: "data", TaskDigest: "builtin:linear", Version: "v1"}
	for _, c := range []struct {
		name   string
		change func(*Config)
		same   bool
	}{
		{"identical", func(*Config) {}, true},
		{"restarts", func(c *Config) { c.Restarts = 50 }, true},
		{"methods", func(c *Config) { c.Methods = []string{"ours", "baseline"} }, true},
		{"excluded", func(c *Config) { c.Excluded = []string{"set002"} }, true},
		{"version", func(c *Config) { c.Version = "v2" }, true},
		{"no digest (an earlier version)", func(c *Config) { c.TaskDigest = "" }, true},
		{"task digest", func(c *Config) { c.TaskDigest = "sha256:0123" }, false},
		{"trials", func(c *Config) { c.Trials = 5 }, false},
		{"seed", func(c *Config) { c.Seed = 2 }, false},
		{"truth", func(c *Config) { c.Truth = map[string]float64{"obs_noise": 0.3} }, false},
		{"observe", func(c *Config) { c.Observe = "full" }, false},
	} {
		o := base
		c.change(&o)
		assert.Equal(t, c.same, base.SameData(o), c.name)
		assert.Equal(t, c.same, o.SameData(base), c.name+", swapped")
	}
}

func TestConfigDraw(t *testing.T) {
	spec := linearSpec(t)
	c := Config{Sets: 50, Seed: 7, Truth: map[string]float64{"obs_noise": 0.3}}
	thetas := c.Draw(spec)
	require.Len(t, thetas, 50)
	assert.Equal(t, thetas, c.Draw(spec), "the same seed draws the same sets")
	c2 := c
	c2.Seed = 8
	assert.NotEqual(t, thetas, c2.Draw(spec))
	var below, above int // action_cost's box [0.001, 10] is split at 0.1 in log10 scale
	for _, th := range thetas {
		for i, p := range spec.Params {
			assert.True(t, th[i] >= p.Lo && th[i] <= p.Hi, "%s=%g in its box", p.Name, th[i])
		}
		assert.Equal(t, 0.3, th[2], "obs_noise fixed by the truth")
		if th[0] < 0.1 {
			below++
		} else {
			above++
		}
	}
	assert.True(t, below > 10 && above > 10, "uniform in log10 scale: %d below 0.1, %d above", below, above)
}

func TestEstimateError(t *testing.T) {
	pos := models.Param{Name: "c", Lo: 0.1, Hi: 10}
	signed := models.Param{Name: "x", Lo: -1, Hi: 1, Signed: true}
	for _, c := range []struct {
		p          models.Param
		truth, est float64
		want       float64
	}{
		{pos, 2, 3, 0.5},
		{pos, 2, 1, 0.5},
		{pos, 2, 2, 0},
		{pos, 0, 0.25, 0.25}, // a true value of 0: absolute
		{signed, 0.5, 0.75, 0.25},
		{signed, -0.5, 0.5, 1},
	} {
		assert.InDelta(t, c.want, EstimateError(c.p, c.truth, c.est), 1e-15, "%s: truth %g, estimate %g", c.p.Name, c.truth, c.est)
	}
}

func TestTruthFile(t *testing.T) {
	spec := linearSpec(t)
	path := filepath.Join(t.TempDir(), TruthFile)
	thetas := [][]float64{{0.1, 0.05, 0.2}, {1.5, 1.0 / 3, 0.01}}
	require.NoError(t, WriteTruth(path, spec, thetas))
	truth, order, err := ReadTruth(path, spec)
	require.NoError(t, err)
	assert.Equal(t, []string{"set001", "set002"}, order)
	assert.Equal(t, map[string][]float64{"set001": thetas[0], "set002": thetas[1]}, truth, "exact values back")

	other := spec
	other.Params = spec.Params[:2]
	_, _, err = ReadTruth(path, other)
	assert.ErrorContains(t, err, "header does not match task linear")
	require.NoError(t, os.WriteFile(path, []byte("set,action_cost,motor_noise,obs_noise\nset001,1,x,2\n"), 0o644))
	_, _, err = ReadTruth(path, spec)
	assert.ErrorContains(t, err, `line 2, column "motor_noise"`)
}

func TestAddWallTime(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, AddWallTime(dir, "ours", 1.5))
	require.NoError(t, AddWallTime(dir, "baseline", 2))
	require.NoError(t, AddWallTime(dir, "ours", 0.25))
	raw, err := os.ReadFile(filepath.Join(dir, TimesFile))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ours": 1.75, "baseline": 2}`, string(raw))
}

func TestPaths(t *testing.T) {
	for _, c := range []struct {
		method     string
		k, n       int
		fit, start string
	}{
		{"ours", 1, 1, "d/fit-ours.jsonl", "d/start-ours.jsonl"},
		{"baseline", 2, 3, "d/fit-baseline.shard-2-of-3.jsonl", "d/start-baseline.shard-2-of-3.jsonl"},
	} {
		f := FitPath("d", c.method, c.k, c.n)
		assert.Equal(t, filepath.FromSlash(c.fit), f)
		assert.Equal(t, filepath.FromSlash(c.start), StartPath(f))
	}
	assert.Equal(t, "set001", SetID(0))
	assert.Equal(t, "set120", SetID(119))
}

func TestBeyond(t *testing.T) {
	trials := [][][]float64{{{0, 1}, {2, -3}}, {{0, 0}, {0.5, 4}}}
	assert.False(t, beyond(trials, 4))
	assert.True(t, beyond(trials, 3.5))
	trials[0][1][1] = math.Inf(-1)
	assert.True(t, beyond(trials, 1e6))
}
