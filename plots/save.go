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

// saveStacked draws plots one above the other with the given heights, under a header, into
// a PNG.
func saveStacked(path string, hd header, plots []*plot.Plot, heights []vg.Length, width vg.Length) error {
	width = max(width, hd.minWidth())
	_, band := hd.place(width, 0)
	total := band
	for _, h := range heights {
		total += h
	}
	img := vgimg.NewWith(vgimg.UseWH(width, total), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	top := total - hd.draw(dc, width, total)
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

// saveTitled draws a grid of plots (nil cells stay empty), each cell w×h, under a header (a
// title centred across the figure and a key), into a PNG.
func saveTitled(path string, hd header, plots [][]*plot.Plot, w, h vg.Length) error {
	rows, cols := len(plots), 0
	for _, r := range plots {
		cols = max(cols, len(r))
	}
	lay := layoutFigure(hd, rows, cols, w, h)
	img := vgimg.NewWith(vgimg.UseWH(lay.size.X, lay.size.Y), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	hd.draw(dc, lay.size.X, lay.size.Y)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	padded := make([][]*plot.Plot, rows)
	for i := range plots {
		padded[i] = make([]*plot.Plot, cols)
		copy(padded[i], plots[i])
	}
	canvases := plot.Align(padded, t, draw.Crop(dc, lay.margin, -lay.margin, 0, -lay.header))
	for i := range padded {
		for j, p := range padded[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	return writePNG(path, img)
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
