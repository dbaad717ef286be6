package xlaenv

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCacheOffUnlessSet: unset becomes off; a directory, empty and off stay as they are.
func TestCacheOffUnlessSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  bool
		in   string
		want string
	}{
		{"unset", false, "", "off"},
		{"a directory", true, "/scratch/xla", "/scratch/xla"},
		{"empty", true, "", ""},
		{"off", true, "off", "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envXLACache, tc.in)
			if !tc.set {
				assert.NoError(t, os.Unsetenv(envXLACache)) // t.Setenv restores it afterwards
			}
			CacheOffUnlessSet()
			got, ok := os.LookupEnv(envXLACache)
			assert.True(t, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
