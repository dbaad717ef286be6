//go:build cgo && !noxla && linux

package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// keepHostHeap sets glibc's thresholds unless the user has set malloc's own.
func TestKeepHostHeap(t *testing.T) {
	for _, v := range []string{"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} {
		t.Setenv(v, "")
	}
	assert.True(t, keepHostHeap(), "glibc accepts both thresholds")
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072")
	assert.False(t, keepHostHeap(), "the user's tunables stand")
	t.Setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F")
	assert.True(t, keepHostHeap(), "tunables that do not name malloc")
	t.Setenv("MALLOC_TRIM_THRESHOLD_", "131072")
	assert.False(t, keepHostHeap(), "the user's malloc variable stands")
}
