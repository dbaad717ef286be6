package ioc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputColumnNames: a sampled parameter named as another column of draws.csv is refused
// before anything is written, as it would make the header ambiguous; others are not.
func TestOutputColumnNames(t *testing.T) {
	for _, name := range []string{"energy", "accept_stat", "n_leapfrog", "log_posterior", "step_size", "draw"} {
		dir := t.TempDir()
		_, err := Create(dir, Run{Sampled: []string{"action_cost", name}}, nil)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `parameter "`+name+`" has the name of another column of draws.csv`)
		_, err = Resume(dir, Run{Sampled: []string{name}}, nil)
		require.Error(t, err, name)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "nothing written")
	}
	dir := t.TempDir()
	o, err := Create(dir, Run{Sampled: []string{"energy_cost"}}, nil)
	require.NoError(t, err)
	require.NoError(t, o.Close())
	head := readHeader(filepath.Join(dir, DrawsFile))
	assert.Equal(t, []string{"subject", "chain", "draw", "energy_cost", "log_posterior", "divergent", "tree_depth", "step_size",
		"energy", "accept_stat", "n_leapfrog"}, head)
	assert.False(t, o.EarlierDrawsLayout())
}
