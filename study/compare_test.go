package study

import (
	"encoding/csv"
	"math"
	"os"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

func TestLatest(t *testing.T) {
	no, yes := false, true
	recs := []fit.Record{
		{Subject: "a", Seconds: 1},
		{Subject: "b", Identified: &no},
		{Subject: "a", Seconds: 2, Identified: &no},
		{Subject: "c", Identified: &yes},
		{Subject: "a", Seconds: 3},
	}
	latest, repeated, unidentified := Latest(recs)
	require.Len(t, latest, 3)
	assert.Equal(t, []string{"b", "c", "a"}, []string{latest[0].Subject, latest[1].Subject, latest[2].Subject})
	assert.Equal(t, 3.0, latest[2].Seconds, "a's last record")
	assert.Equal(t, []string{"a"}, repeated)
	assert.Equal(t, []string{"b"}, unidentified, "a's unidentified record is not its last")
}

func TestCompare(t *testing.T) {
	spec := linearSpec(t)
	ll := func(v float64) *float64 { return &v }
	recs := []fit.Record{
		{Subject: "1", Fitted: []string{"action_cost", "motor_noise"}, Params: map[string]float64{"action_cost": 0.2, "motor_noise": 0.05}, LogLik: ll(-10)},
		{Subject: "2", Fitted: []string{"action_cost", "motor_noise"}, Params: map[string]float64{"action_cost": 0.15, "motor_noise": 0.1}, LogLik: ll(-20)},
		{Subject: "3", Fitted: []string{"action_cost"}, Params: map[string]float64{"action_cost": 0.05}, Error: "not converged"},
	}
	truth := []float64{0.1, 0, 0.2} // a true motor noise of 0 has no relative error
	cs := Compare(spec, truth, recs)
	require.Len(t, cs, 3)
	assert.Equal(t, 3, cs[0].N)
	assert.InDelta(t, 0.15, cs[0].Median, 1e-15)
	assert.InDeltaSlice(t, []float64{1, 0.5, 0.5}, cs[0].RelErrors, 1e-12)
	assert.Equal(t, 2, cs[1].N)
	assert.InDelta(t, 0.075, cs[1].Median, 1e-15)
	assert.Empty(t, cs[1].RelErrors)
	assert.Equal(t, 0, cs[2].N, "obs_noise: not fitted")
	assert.True(t, math.IsNaN(cs[2].Median))
	assert.InDelta(t, 0.5, MedianRelError(cs), 1e-12)
	assert.Equal(t, -15.0, MedianLogLik(recs))
	assert.True(t, math.IsNaN(MedianLogLik(nil)))
}
