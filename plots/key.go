package plots

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The figures' keys (legends) are drawn above the panels, below the title, never inside a
// panel, where they would cover data.

// keyEntry is one entry of a figure's key: samples of how a thing is drawn, and what it is.
type keyEntry struct {
	label  string
	thumbs []plot.Thumbnailer
}

// header is what a figure draws above its panels: a title (lines centred across the figure)
// and a key, its entries side by side in rows, centred, as many in a row as fit the width.
type header struct {
	title string
	key   []keyEntry
}

// keyBox is a key entry placed on the figure: its sample in thumb, its label starting at text
// (the baseline's left end); box holds both.
type keyBox struct {
	entry keyEntry
	thumb vg.Rectangle
	text  vg.Point
	box   vg.Rectangle
}

var (
	titleStyle = func() draw.TextStyle {
		s := plot.New().Title.TextStyle
		s.XAlign, s.YAlign = draw.XCenter, draw.YTop
		return s
	}()
	keyStyle = plot.New().Legend.TextStyle
)

const (
	keyThumb = vg.Length(20) // width of an entry's sample, points
	keyGap   = vg.Length(14) // between entries of a row
)

// minWidth returns the width the header needs: its widest title line or key entry, with
// 2 mm on each side.
func (h header) minWidth() vg.Length {
	w := vg.Length(0)
	if h.title != "" {
		w = titleStyle.Width(h.title)
	}
	for _, e := range h.key {
		w = max(w, entryWidth(e))
	}
	return w + 4*vg.Millimeter
}

// entryWidth is the width of a key entry: its sample, a space, its label.
func entryWidth(e keyEntry) vg.Length {
	return keyThumb + keyStyle.Width(" ") + keyStyle.Width(e.label)
}

// place lays the header out across [0, width] below top and returns where the key's entries
// go and the height the header takes (0 for none).
func (h header) place(width, top vg.Length) ([]keyBox, vg.Length) {
	y := top
	if h.title != "" {
		y -= titleStyle.Height(h.title) + 2*vg.Millimeter
	}
	if len(h.key) == 0 {
		return nil, top - y
	}
	rowH := keyStyle.Height("Mg") * 1.3
	avail := width - 4*vg.Millimeter
	var boxes []keyBox
	for start := 0; start < len(h.key); {
		// As many entries as fit in the row (one at least).
		end, w := start+1, entryWidth(h.key[start])
		for end < len(h.key) && w+keyGap+entryWidth(h.key[end]) <= avail {
			w += keyGap + entryWidth(h.key[end])
			end++
		}
		x := (width - w) / 2
		for _, e := range h.key[start:end] {
			ew := entryWidth(e)
			b := keyBox{entry: e,
				box:   vg.Rectangle{Min: vg.Point{X: x, Y: y - rowH}, Max: vg.Point{X: x + ew, Y: y}},
				thumb: vg.Rectangle{Min: vg.Point{X: x, Y: y - rowH}, Max: vg.Point{X: x + keyThumb, Y: y}},
			}
			b.text = vg.Point{X: x + keyThumb + keyStyle.Width(" "), Y: y - rowH/2 - keyStyle.Height("M")/2 + keyStyle.FontExtents().Descent}
			boxes = append(boxes, b)
			x += ew + keyGap
		}
		y -= rowH
		start = end
	}
	y -= vg.Millimeter
	return boxes, top - y
}

// draw draws the header across [0, width] of dc below top and returns its height.
func (h header) draw(dc draw.Canvas, width, top vg.Length) vg.Length {
	if h.title != "" {
		dc.FillText(titleStyle, vg.Point{X: width / 2, Y: top - vg.Millimeter}, h.title)
	}
	boxes, height := h.place(width, top)
	for _, b := range boxes {
		c := draw.Canvas{Canvas: dc.Canvas, Rectangle: b.thumb}
		for _, t := range b.entry.thumbs {
			t.Thumbnail(&c)
		}
		sty := keyStyle
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
		dc.FillText(sty, b.text, b.entry.label)
	}
	return height
}

// lineKey is a key entry for lines of colour c, width w and dashes.
func lineKey(label string, c color.Color, w vg.Length, dashes ...vg.Length) keyEntry {
	return keyEntry{label: label, thumbs: []plot.Thumbnailer{&refLine{LineStyle: draw.LineStyle{Color: c, Width: w, Dashes: dashes}}}}
}

// glyphKey is a key entry for points drawn as glyph g of colour c.
func glyphKey(label string, c color.Color, g draw.GlyphDrawer, r vg.Length) keyEntry {
	s := &plotter.Scatter{GlyphStyleFunc: nil}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Shape: g, Radius: r}
	return keyEntry{label: label, thumbs: []plot.Thumbnailer{s}}
}

// markKeys returns key entries for the labelled marks.
func markKeys(marks []Mark) []keyEntry {
	var out []keyEntry
	for _, m := range marks {
		if m.Label != "" {
			out = append(out, glyphKey(m.Label, m.Color, m.Shape, vg.Points(4)))
		}
	}
	return out
}

// figureLayout is where a figure of a header over a grid of rows × cols panels, each w × h,
// puts things: the image's size, the key's entries and the rectangle of the panels.
type figureLayout struct {
	size   vg.Point
	margin vg.Length // on each side of the panels where the header is wider than they are
	header vg.Length // its height
	keys   []keyBox
	panels vg.Rectangle
}

// layoutFigure lays out a figure of hd over a grid of rows × cols panels, each w × h.
func layoutFigure(hd header, rows, cols int, w, h vg.Length) figureLayout {
	width := w * vg.Length(cols)
	margin := max(0, (hd.minWidth()-width)/2)
	width += 2 * margin
	_, band := hd.place(width, 0)
	height := h*vg.Length(rows) + band
	keys, _ := hd.place(width, height)
	return figureLayout{size: vg.Point{X: width, Y: height}, margin: margin, header: band, keys: keys,
		panels: vg.Rectangle{Min: vg.Point{X: margin, Y: 0}, Max: vg.Point{X: width - margin, Y: height - band}}}
}
