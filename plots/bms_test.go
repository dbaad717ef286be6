package plots

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModelComparison: the figure is a PNG with one group of three bars per model at the
// models' values, the key names the three and the 1/K line, and values outside [0, 1] are
// refused.
func TestModelComparison(t *testing.T) {
	models := []ModelBars{
		{Name: "partial", Frequency: 0.95, FrequencySD: 0.04, Exceedance: 1, ProtectedExceedance: 0.999},
		{Name: "full", Frequency: 0.05, FrequencySD: 0.04, Exceedance: 0, ProtectedExceedance: 0.001},
		{Name: "other", Frequency: 0.2, FrequencySD: 0.1, Exceedance: 0.3, ProtectedExceedance: 0.3},
	}
	_, charts, key, err := modelComparisonPlot(models)
	require.NoError(t, err)
	require.Len(t, key, 4)
	assert.Equal(t, "1/3: no model favoured", key[3].label)
	var bars [][]float64
	for _, b := range charts {
		bars = append(bars, []float64(b.Values))
	}
	require.Len(t, bars, 3)
	assert.Equal(t, []float64{0.95, 0.05, 0.2}, bars[0])
	assert.Equal(t, []float64{1, 0, 0.3}, bars[1])
	assert.Equal(t, []float64{0.999, 0.001, 0.3}, bars[2])

	path := filepath.Join(t.TempDir(), "bms.png")
	require.NoError(t, ModelComparison(path, "20 subjects", models))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 500)

	_, _, _, err = modelComparisonPlot(nil)
	assert.Error(t, err)
	_, _, _, err = modelComparisonPlot([]ModelBars{{Name: "a", Frequency: math.NaN()}})
	assert.ErrorContains(t, err, "model a")
}
