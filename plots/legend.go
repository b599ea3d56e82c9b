package plots

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legend is a row (or rows) of swatches and labels drawn under a picture.
type legend struct{ entries []legendEntry }

type legendEntry struct {
	label  string
	swatch func(c *draw.Canvas, r vg.Rectangle)
}

const (
	legendFont   = 11.0
	legendSwatch = 26.0 // points
	legendRow    = 18.0 // points
	legendGap    = 16.0 // points between entries
)

func (l *legend) add(label string, swatch func(c *draw.Canvas, r vg.Rectangle)) {
	l.entries = append(l.entries, legendEntry{label, swatch})
}

// layout places the entries left to right, wrapping at width; it returns
// each entry's offset from the top-left corner and the number of rows.
func (l *legend) layout(width vg.Length) ([]vg.Point, int) {
	sty := labelStyle(legendFont, false, nil)
	var pts []vg.Point
	var x vg.Length
	row := 0
	for _, e := range l.entries {
		w := vg.Points(legendSwatch+4) + sty.Width(e.label)
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		pts = append(pts, vg.Point{X: x, Y: vg.Length(row) * vg.Points(legendRow)})
		x += w + vg.Points(legendGap)
	}
	if len(l.entries) == 0 {
		return nil, 0
	}
	return pts, row + 1
}

// height is the height the legend needs at the given width.
func (l *legend) height(width vg.Length) vg.Length {
	_, rows := l.layout(width)
	return vg.Length(rows)*vg.Points(legendRow) + vg.Points(6)
}

func (l *legend) draw(c draw.Canvas) {
	pts, _ := l.layout(c.Max.X - c.Min.X)
	sty := labelStyle(legendFont, false, nil)
	sty.YAlign = draw.YCenter
	for i, e := range l.entries {
		x0 := c.Min.X + pts[i].X
		yc := c.Max.Y - pts[i].Y - vg.Points(legendRow/2)
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: yc - vg.Points(6)}, Max: vg.Point{X: x0 + vg.Points(legendSwatch), Y: yc + vg.Points(6)}}
		e.swatch(&c, r)
		c.FillText(sty, vg.Point{X: r.Max.X + vg.Points(4), Y: yc}, e.label)
	}
}

// Swatches.

func boxSwatch(fill color.Color, edge *draw.LineStyle, hfrac float64) func(*draw.Canvas, vg.Rectangle) {
	return func(c *draw.Canvas, r vg.Rectangle) {
		h := (r.Max.Y - r.Min.Y) * vg.Length(hfrac)
		mid := (r.Max.Y + r.Min.Y) / 2
		fillRect(c, r.Min.X, r.Max.X, mid-h/2, mid+h/2, fill)
		if edge != nil {
			outline(c, r.Min.X, r.Max.X, mid-h/2, mid+h/2, *edge)
		}
	}
}

// stripesSwatch shows one stripe per client colour.
func stripesSwatch(n int) func(*draw.Canvas, vg.Rectangle) {
	n = max(1, min(n, len(clientPalette)))
	return func(c *draw.Canvas, r vg.Rectangle) {
		w := (r.Max.X - r.Min.X) / vg.Length(n)
		for i := 0; i < n; i++ {
			x0 := r.Min.X + vg.Length(i)*w
			fillRect(c, x0, x0+w, r.Min.Y+vg.Points(1), r.Max.Y-vg.Points(1), clientColor(i))
		}
	}
}

func lineSwatch(sty draw.LineStyle) func(*draw.Canvas, vg.Rectangle) {
	return func(c *draw.Canvas, r vg.Rectangle) {
		xm := (r.Min.X + r.Max.X) / 2
		c.StrokeLine2(sty, xm, r.Min.Y-vg.Points(2), xm, r.Max.Y+vg.Points(2))
	}
}

func crossSwatch(col color.Color) func(*draw.Canvas, vg.Rectangle) {
	return func(c *draw.Canvas, r vg.Rectangle) {
		cross(c, (r.Min.X+r.Max.X)/2, (r.Min.Y+r.Max.Y)/2, vg.Points(5), col)
	}
}
