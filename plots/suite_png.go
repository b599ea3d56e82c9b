package plots

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/report"
)

// Card picture geometry, in points.
const (
	scPropWidth  = 330.0 // property name and its promise
	scBadgeWidth = 120.0
	scNoteWidth  = 380.0 // classes, cycles, finding
	scRowMin     = 40.0
)

var (
	harnessCell = color.NRGBA{0xff, 0xe8, 0xb0, 0xff}
	harnessEdge = color.NRGBA{0xb0, 0x70, 0x00, 0xff}
	greyEdge    = color.NRGBA{0x80, 0x80, 0x80, 0xff}
)

// outcomeColours: held green, violated red, harness error amber, not
// claimed grey.
func outcomeColours(o card.Outcome) (fill, edge color.NRGBA) {
	switch o {
	case card.Held:
		return goodCell, goodEdge
	case card.Violated:
		return badCell, badEdge
	case card.HarnessError, card.Unknown:
		return harnessCell, harnessEdge
	}
	return emptyCell, greyEdge
}

// writeCardPNG draws the card: one row per property, its name and promise
// on the left, a coloured badge with the outcome, and for a violation what
// was observed and the first finding.
func writeCardPNG(path string, c *card.Card) error {
	name := labelStyle(11, true, color.Black)
	small := labelStyle(9.5, false, color.Gray{Y: 70})
	badge := labelStyle(12, true, color.Black)
	note := labelStyle(10, false, color.Black)

	type rowLayout struct {
		prop, note []string
		h          float64
	}
	var rows []rowLayout
	for _, r := range c.Rows {
		l := rowLayout{prop: append([]string{r.Property}, wrap(small, r.Explanation, scPropWidth-2*cpPad)...)}
		switch r.Outcome {
		case card.Violated:
			obs := strings.Join(r.Observed, ", ")
			if r.Cycles > 0 {
				obs += fmt.Sprintf(" in %d/%d cycles", r.BadCycles, r.Cycles)
			}
			l.note = append(wrap(note, obs, scNoteWidth-2*cpPad), wrap(note, r.Finding, scNoteWidth-2*cpPad)...)
		case card.NotClaimed, card.HarnessError:
			l.note = wrap(note, r.Finding, scNoteWidth-2*cpPad)
		}
		if len(l.note) > 6 {
			l.note = append(l.note[:5], "…")
		}
		l.h = max(scRowMin, float64(max(len(l.prop), len(l.note)))*cpLine+2*cpPad+2)
		rows = append(rows, l)
	}
	titleH := 48.0
	width := 2*cpMargin + scPropWidth + scBadgeWidth + scNoteWidth
	height := 2*cpMargin + titleH
	for _, r := range rows {
		height += r.h
	}
	cv := vgimg.NewWith(vgimg.UseWH(vg.Points(width), vg.Points(height)), vgimg.UseDPI(110))
	dc := draw.New(cv)
	fillRect(&dc, 0, vg.Points(width), 0, vg.Points(height), color.White)
	top := func(y float64) vg.Length { return vg.Points(height - y) }

	title := labelStyle(14, true, color.Black)
	who := c.Lock
	if c.Worker != "" {
		who += " (external worker)"
	}
	drawLines(&dc, title, []string{"lockfault report card: " + who}, cpMargin, cpMargin, top)
	drawLines(&dc, labelStyle(10, false, color.Gray{Y: 60}),
		[]string{fmt.Sprintf("%s   ·   needs %s, claims %s   ·   backend %s   ·   run %s", c.Tally(), report.OrDash(c.Needs),
			report.OrDash(strings.Join(c.Caps, ", ")), c.Backend, c.RunID)}, cpMargin, cpMargin+20, top)

	grid := draw.LineStyle{Color: color.Gray{Y: 210}, Width: vg.Points(0.5)}
	y := cpMargin + titleH
	dc.StrokeLine2(grid, vg.Points(cpMargin), top(y), vg.Points(width-cpMargin), top(y))
	for i, r := range rows {
		row := c.Rows[i]
		drawLines(&dc, name, r.prop[:1], cpMargin+cpPad, y+cpPad, top)
		drawLines(&dc, small, r.prop[1:], cpMargin+cpPad, y+cpPad+cpLine+1, top)
		fill, edge := outcomeColours(row.Outcome)
		bx := cpMargin + scPropWidth
		x0, x1 := vg.Points(bx+4), vg.Points(bx+scBadgeWidth-4)
		y0, y1 := top(y+r.h-4), top(y+4)
		fillRect(&dc, x0, x1, y0, y1, fill)
		outline(&dc, x0, x1, y0, y1, draw.LineStyle{Color: edge, Width: vg.Points(1.5)})
		bs := badge
		bs.Color = edge
		bs.XAlign = draw.XCenter
		bs.YAlign = draw.YCenter
		dc.FillText(bs, vg.Point{X: vg.Points(bx + scBadgeWidth/2), Y: top(y + r.h/2)}, row.Outcome.Text())
		ns := note
		if row.Outcome == card.Violated {
			ns.Color = badEdge
		}
		drawLines(&dc, ns, r.note, bx+scBadgeWidth+cpPad, y+cpPad, top)
		y += r.h
		dc.StrokeLine2(grid, vg.Points(cpMargin), top(y), vg.Points(width-cpMargin), top(y))
	}
	return writePNG(path, cv)
}
