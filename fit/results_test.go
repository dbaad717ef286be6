package fit

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewRecordSplitsFixed: the record holds the estimates in params, the parameters that
// were not fitted in fixed, and the intervals in both scales under names that say which.
func TestNewRecordSplitsFixed(t *testing.T) {
	res := Result{Subject: "s", Params: map[string]float64{"a": 0.1, "b": 2, "c": 3}, Fitted: []string{"a", "b"},
		StdErr: map[string]float64{"a": 0.5, "b": 0.1}, CI95: map[string][2]float64{"a": {-2, 0}, "b": {1.8, 2.2}},
		CI95Natural: map[string][2]float64{"a": {0.01, 1}, "b": {1.8, 2.2}}, HessianPD: true}
	rec := NewRecord(res, Run{Task: "t"}, map[string]string{"a": "log10", "b": "linear", "c": "log10"})
	assert.Equal(t, map[string]float64{"a": 0.1, "b": 2}, rec.Params)
	assert.Equal(t, map[string]float64{"c": 3}, rec.Fixed)
	assert.Equal(t, map[string]string{"a": "log10", "b": "linear"}, rec.Scale)
	assert.Equal(t, res.Params, rec.Values())

	b, err := json.Marshal(rec)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, key := range []string{"params", "fixed", "scale", "stderr_scaled", "ci95_scaled", "ci95_natural"} {
		assert.Contains(t, m, key)
	}
	for _, key := range []string{"stderr", "ci95"} {
		assert.NotContains(t, m, key)
	}
	var back Record
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, rec, back, "a record reads back as written")

	all := NewRecord(Result{Subject: "s", Params: map[string]float64{"a": 1}, Fitted: []string{"a"}}, Run{}, nil)
	assert.Nil(t, all.Fixed, "nothing fixed, no fixed")
	failed := NewRecord(Result{Subject: "s", Err: "boom"}, Run{}, nil)
	assert.Nil(t, failed.Params)
	assert.Nil(t, failed.Values())
}

// TestRecordReadsEarlierVersions: the names written before issue 13 (stderr, ci95, fixed
// parameters in params) read with their meaning.
func TestRecordReadsEarlierVersions(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Record
	}{
		{"old names", `{"subject":"1","params":{"a":0.1,"b":2,"c":3},"fitted":["a","b"],"scale":{"a":"log10","b":"linear"},` +
			`"stderr":{"a":0.5,"b":0.1},"ci95":{"a":[-2,0],"b":[1.8,2.2]},"hessian_pd":true}`,
			Record{Subject: "1", Params: map[string]float64{"a": 0.1, "b": 2}, Fixed: map[string]float64{"c": 3},
				Fitted: []string{"a", "b"}, Scale: map[string]string{"a": "log10", "b": "linear"},
				StdErr: map[string]float64{"a": 0.5, "b": 0.1}, CI95: map[string][2]float64{"a": {-2, 0}, "b": {1.8, 2.2}},
				CI95Natural: map[string][2]float64{"a": {0.01, 1}, "b": {1.8, 2.2}}, HessianPD: true}},
		{"no Hessian", `{"subject":"1","params":{"a":0.1},"fitted":["a"],"scale":{"a":"log10"},"hessian_pd":false}`,
			Record{Subject: "1", Params: map[string]float64{"a": 0.1}, Fitted: []string{"a"}, Scale: map[string]string{"a": "log10"}}},
		{"failed", `{"subject":"1","error":"boom","hessian_pd":false}`, Record{Subject: "1", Error: "boom"}},
		{"natural end beyond float64", `{"subject":"1","params":{"a":0.1},"fitted":["a"],"scale":{"a":"log10"},"ci95":{"a":[-2,400]},"hessian_pd":true}`,
			Record{Subject: "1", Params: map[string]float64{"a": 0.1}, Fitted: []string{"a"}, Scale: map[string]string{"a": "log10"},
				CI95: map[string][2]float64{"a": {-2, 400}}, CI95Natural: map[string][2]float64{}, HessianPD: true}},
		{"new names win", `{"subject":"1","params":{"a":0.1},"fitted":["a"],"stderr_scaled":{"a":1},"stderr":{"a":2},"hessian_pd":true}`,
			Record{Subject: "1", Params: map[string]float64{"a": 0.1}, Fitted: []string{"a"}, StdErr: map[string]float64{"a": 1}, HessianPD: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Record
			require.NoError(t, json.Unmarshal([]byte(tc.line), &got))
			for name, ci := range tc.want.CI95Natural { // 10^x is exact only to rounding
				for k := range ci {
					assert.InEpsilon(t, ci[k], got.CI95Natural[name][k], 1e-15)
				}
			}
			got.CI95Natural = tc.want.CI95Natural
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestWriteCSVMarksFixed(t *testing.T) {
	rec := NewRecord(Result{Subject: "s", Params: map[string]float64{"a": 0.1, "c": 3}, Fitted: []string{"a"},
		StdErr: map[string]float64{"a": 0.5}, CI95: map[string][2]float64{"a": {-1.5, -0.5}},
		CI95Natural: map[string][2]float64{"a": {math.Pow(10, -1.5), math.Pow(10, -0.5)}}, HessianPD: true},
		Run{Task: "t"}, map[string]string{"a": "log10"})
	path := filepath.Join(t.TempDir(), "r.csv")
	require.NoError(t, WriteCSV(path, []Record{rec}, ParamNames([]Record{rec}, nil)))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	header, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	cells := map[string]string{}
	for i, h := range header {
		cells[h] = row[i]
	}
	for col, want := range map[string]string{
		"a": "0.1", "a_fixed": "", "a_scale": "log10", "a_stderr_scaled": "0.5", "a_ci95_scaled_lo": "-1.5",
		"a_ci95_scaled_hi": "-0.5", "a_ci95_natural_lo": "0.03162277660168379", "a_ci95_natural_hi": "0.31622776601683794",
		"c": "", "c_fixed": "3", "c_scale": "", "c_stderr_scaled": "", "c_ci95_natural_lo": "",
	} {
		assert.Equal(t, want, cells[col], "column %s", col)
	}
}
