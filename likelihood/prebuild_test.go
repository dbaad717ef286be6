package likelihood

import (
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrebuild runs XLA's CPU plugin as an accelerator: Prebuild compiles the chunk size a
// call of those rows will run in the background, after which the call compiles nothing more
// and gives the values of an evaluator that did not prebuild, to the bit. On the host (the
// plugin as it is) and on the Go backend it builds nothing. Skipped without a plugin.
func TestPrebuild(t *testing.T) {
	bx, bg := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	subj := simulateTrials(t, m, control.ObservePartial, natural, 2, 6, 5)
	theta := withTemperature(m.Spec(), Options{})
	rows, thetas := make([][][][]float64, 6), make([][]float64, 6)
	for i := range rows {
		rows[i], thetas[i] = subj, append([]float64(nil), theta...)
		thetas[i][0] += 0.01 * float64(i)
	}
	b := Batching{Most: 6, MaxBatch: 6 * len(subj), Keep: true}

	for _, backend := range []backends.Backend{bx, bg} { // on the host: nothing
		e, err := New(m, backend, Options{Form: FormLooped})
		require.NoError(t, err)
		e.Prebuild(rows, thetas, b)
		time.Sleep(50 * time.Millisecond)
		assert.Zero(t, e.Stats().Compiles+e.Stats().Builds, "%s: nothing built on the host", backend.Name())
	}

	defer func(f func(backends.Backend) bool) { runsOnHost = f }(runsOnHost)
	runsOnHost = func(backends.Backend) bool { return false } // as on a GPU
	plain, err := New(m, bx, Options{Form: FormLooped})
	require.NoError(t, err)
	wantLL, wantGrad, err := plain.EvalRows(rows, thetas, b)
	require.NoError(t, err)

	e, err := New(m, bx, Options{Form: FormLooped})
	require.NoError(t, err)
	_, _, _, ideal := e.plan(rows, b)
	e.Prebuild(rows, thetas, b)
	e.Prebuild(rows, thetas, b) // building already: nothing more
	deadline := time.Now().Add(2 * time.Minute)
	for !e.chunks.isBuilt(ideal, len(subj), 6) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, e.chunks.isBuilt(ideal, len(subj), 6), "built in the background")
	compiles := e.Stats().Compiles
	assert.Positive(t, compiles)
	ll, grad, err := e.EvalRows(rows, thetas, b)
	require.NoError(t, err)
	assert.Equal(t, compiles, e.Stats().Compiles, "the call compiled nothing more")
	assert.Equal(t, wantLL, ll)
	assert.Equal(t, wantGrad, grad)
}
