package graph

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkers: loading the CPU plugin (keepSpareP) raises GOMAXPROCS by one and Workers stays
// what GOMAXPROCS was; once someone sets GOMAXPROCS to another value Workers follows it; with
// NIOC_SPARE_P=off nothing changes; keepSpareP acts once a process.
func TestWorkers(t *testing.T) {
	freshSpareP(t, 2)
	assert.Equal(t, 2, Workers(), "no spare P yet")

	t.Setenv(EnvSpareP, "off")
	keepSpareP()
	assert.Equal(t, 2, runtime.GOMAXPROCS(0), "NIOC_SPARE_P=off")
	assert.Equal(t, 2, Workers())

	t.Setenv(EnvSpareP, "")
	keepSpareP()
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "a spare P")
	assert.Equal(t, 2, Workers(), "the workers GOMAXPROCS was")
	keepSpareP()
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "once a process")

	runtime.GOMAXPROCS(1)
	assert.Equal(t, 1, Workers(), "GOMAXPROCS set since")
	runtime.GOMAXPROCS(3)
	assert.Equal(t, 2, Workers(), "back to the value with the spare P")
}

// TestKeepSpareP: a spare P for XLA's CPU plugin, none for the Go backend. It runs where a
// plugin is installed (make xla-cpu) and is skipped otherwise.
func TestKeepSpareP(t *testing.T) {
	if !HasXLA {
		t.Skip("built without XLA")
	}
	if _, err := FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	freshSpareP(t, 2)
	t.Setenv(EnvSpareP, "")
	bg, err := NewBackend(BackendGo)
	require.NoError(t, err)
	KeepSpareP(bg)
	assert.Equal(t, 2, runtime.GOMAXPROCS(0), "the Go backend")
	bx, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	defer bx.Finalize()
	assert.Equal(t, 2, runtime.GOMAXPROCS(0), "loading the plugin keeps GOMAXPROCS")
	KeepSpareP(bx)
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "XLA's CPU plugin")
	assert.Equal(t, 2, Workers())
}

// freshSpareP sets GOMAXPROCS to procs and forgets any spare P for the test, restoring both
// after it.
func freshSpareP(t *testing.T, procs int) {
	prev := runtime.GOMAXPROCS(procs)
	spareP.mu.Lock()
	saved := spareP.to
	spareP.to = 0
	spareP.mu.Unlock()
	t.Cleanup(func() {
		runtime.GOMAXPROCS(prev)
		spareP.mu.Lock()
		spareP.to = saved
		spareP.mu.Unlock()
	})
}
