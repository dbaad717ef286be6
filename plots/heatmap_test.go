package plots

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeatMapWritesPNG(t *testing.T) {
	g := Grid{Xs: []float64{0, 1, 2}, Ys: []float64{0, 1}, Values: [][]float64{{1, 2, 3}, {4, math.Inf(-1), 6}}}
	path := filepath.Join(t.TempDir(), "h.png")
	require.NoError(t, HeatMap(path, g, "title", "x", "y", 0, Point(1, 0.5, "truth"), Cross(2, 1, "MLE")))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Greater(t, img.Bounds().Dx(), 500)
	require.Error(t, HeatMap(filepath.Join(t.TempDir(), "e.png"), Grid{Xs: []float64{0}, Ys: []float64{0}, Values: [][]float64{{math.NaN()}}}, "", "", "", 0))
}
