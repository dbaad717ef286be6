package plots

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

const dpi = 150

// colorMap returns the figures' colour map spanning [lo, hi].
func colorMap(lo, hi float64) palette.ColorMap {
	cm := moreland.SmoothBlueRed()
	cm.SetMin(lo)
	cm.SetMax(hi)
	return cm
}

// saveStacked draws plots one above the other with the given heights into a PNG.
func saveStacked(path string, plots []*plot.Plot, heights []vg.Length, width vg.Length) error {
	total := vg.Length(0)
	for _, h := range heights {
		total += h
	}
	img := vgimg.NewWith(vgimg.UseWH(width, total), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	top := total
	for i, p := range plots {
		c := draw.Canvas{Canvas: dc, Rectangle: vg.Rectangle{
			Min: vg.Point{X: 0, Y: top - heights[i]},
			Max: vg.Point{X: width, Y: top},
		}}
		p.Draw(c)
		top -= heights[i]
	}
	return writePNG(path, img)
}

// saveGrid draws a grid of plots (nil cells stay empty), each cell w×h, into a PNG.
func saveGrid(path string, plots [][]*plot.Plot, w, h vg.Length) error {
	return saveTitled(path, "", plots, w, h)
}

func writePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing figure: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing figure %s: %w", path, err)
	}
	return f.Close()
}
