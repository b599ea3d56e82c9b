package plots

import (
	"image/color"

	"github.com/lockfault/lockfault/card"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeCardsPNG draws the property × lock grid.
func writeCardsPNG(path string, props []string, cards []*card.Card) error {
	head := labelStyle(10.5, true, color.Black)
	body := labelStyle(10.5, false, color.Black)
	cellText := labelStyle(9.5, true, color.Black)
	labelW := 40.0
	for _, p := range props {
		labelW = max(labelW, float64(body.Width(p))+2*cpPad)
	}
	colW := 96.0
	for _, c := range cards {
		colW = max(colW, float64(head.Width(c.Lock))+2*cpPad)
	}
	rowH, headH, titleH := 26.0, 30.0, 40.0
	width := 2*cpMargin + labelW + colW*float64(len(cards))
	height := 2*cpMargin + titleH + headH + rowH*float64(len(props))
	cv := vgimg.NewWith(vgimg.UseWH(vg.Points(width), vg.Points(height)), vgimg.UseDPI(110))
	dc := draw.New(cv)
	fillRect(&dc, 0, vg.Points(width), 0, vg.Points(height), color.White)
	top := func(y float64) vg.Length { return vg.Points(height - y) }
	drawLines(&dc, labelStyle(14, true, color.Black), []string{"lockfault report cards: lock × property"}, cpMargin, cpMargin, top)
	drawLines(&dc, labelStyle(9.5, false, color.Gray{Y: 60}), []string{"green held · red violated · grey not claimed · amber harness error"}, cpMargin, cpMargin+20, top)
	y := cpMargin + titleH
	for i, c := range cards {
		hs := head
		hs.XAlign = draw.XCenter
		hs.YAlign = draw.YCenter
		dc.FillText(hs, vg.Point{X: vg.Points(cpMargin + labelW + colW*(float64(i)+0.5)), Y: top(y + headH/2)}, c.Lock)
	}
	y += headH
	for _, p := range props {
		bs := body
		bs.YAlign = draw.YCenter
		dc.FillText(bs, vg.Point{X: vg.Points(cpMargin + cpPad), Y: top(y + rowH/2)}, p)
		for i, c := range cards {
			r, ok := c.Row(p)
			if !ok {
				continue
			}
			fill, edge := outcomeColours(r.Outcome)
			x := cpMargin + labelW + colW*float64(i)
			x0, x1, y0, y1 := vg.Points(x+2), vg.Points(x+colW-2), top(y+rowH-2), top(y+2)
			fillRect(&dc, x0, x1, y0, y1, fill)
			outline(&dc, x0, x1, y0, y1, draw.LineStyle{Color: edge, Width: vg.Points(1)})
			ts := cellText
			ts.Color = edge
			ts.XAlign = draw.XCenter
			ts.YAlign = draw.YCenter
			label := r.Outcome.Text()
			if r.Outcome == card.Violated && len(r.Observed) > 0 {
				label = r.Observed[0]
			}
			dc.FillText(ts, vg.Point{X: vg.Points(x + colW/2), Y: top(y + rowH/2)}, label)
		}
		y += rowH
	}
	return writePNG(path, cv)
}
