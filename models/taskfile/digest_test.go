package taskfile

import (
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A task file's digest follows its values, not its layout: comments, blank lines, key order
// and number spelling leave it; a changed value or expression changes it.
func TestDigestIsTheContent(t *testing.T) {
	text := []byte(pointFile)
	digest := func(s string) string {
		task, err := Parse("t.toml", []byte(s))
		require.NoError(t, err)
		return models.Digest(task)
	}
	base := digest(string(text))
	assert.Regexp(t, `^sha256:[0-9a-f]{16}$`, base)
	assert.Equal(t, base, digest("# a comment\n\n"+string(text)+"\n# another\n"), "comments and blank lines")
	assert.Equal(t, base, digest(strings.Replace(string(text), "dt = 0.1", "dt = 1e-1", 1)), "how a number is written")
	lines := strings.Split(string(text), "\n")
	first := -1
	for i, l := range lines { // two adjacent top-level keys swapped
		if first < 0 && strings.HasPrefix(l, "dt") {
			first = i
		}
	}
	require.GreaterOrEqual(t, first, 0, "the example has a dt key")
	require.True(t, strings.HasPrefix(lines[first+1], "horizon"), "dt is followed by horizon in the example")
	swapped := append([]string(nil), lines...)
	swapped[first], swapped[first+1] = lines[first+1], lines[first]
	assert.Equal(t, base, digest(strings.Join(swapped, "\n")), "key order")
	changed := strings.Replace(string(text), lines[first], "dt = 0.0123", 1)
	assert.NotEqual(t, base, digest(changed), "another dt")
	builtin, err := models.Get("pendulum")
	require.NoError(t, err)
	assert.Equal(t, "builtin:pendulum", models.Digest(builtin))
}
