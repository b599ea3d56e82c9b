package plots

import (
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/report"
)

// Plot draws the background of the timeline: lane stripes, fault windows
// and cycle starts. The holds and findings are drawn over the grid by
// foreground.
func (tl *timeline) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	lanesTop := y(float64(len(tl.lanes)) - 0.5)
	lanesBottom := y(-0.5)
	for i := range tl.lanes {
		if i%2 == 1 {
			yc := tl.laneY(i)
			fillRect(&c, c.Min.X, c.Max.X, y(yc-0.5), y(yc+0.5), laneStripe)
		}
	}
	// Fault windows: translucent bands over all the lanes and the label
	// strip, with a solid edge where the fault began (and healed).
	for _, w := range tl.faults {
		col := tl.fcolor[w.Fault]
		x0, x1 := x(tl.sp.Sec(w.Start)), x(tl.sp.Sec(tl.sp.WindowEnd(w)))
		x1 = max(x1, x0+vg.Points(2))
		fillRect(&c, x0, x1, lanesBottom, c.Max.Y, col)
		edge := draw.LineStyle{Color: darken(col), Width: vg.Points(1.2)}
		c.StrokeLine2(edge, x0, lanesBottom, x0, c.Max.Y)
		if w.End != 0 {
			c.StrokeLine2(edge, x1, lanesBottom, x1, c.Max.Y)
		}
	}
	for _, f := range tl.findings {
		if f.Class == checker.ClassStuck {
			x0, x1 := x(tl.sp.Sec(f.From)), x(tl.sp.Sec(f.To))
			fillRect(&c, x0, x1, lanesBottom, c.Max.Y, stuckFill)
		}
	}
	// Overlaps: translucent boxes behind the holds (outlined in front).
	xs := func(t int64) vg.Length { return x(tl.sp.Sec(t)) }
	for _, f := range tl.findings {
		fill := overlapFill
		switch f.Class {
		case checker.ClassFenced:
			fill = fencedFill
		case checker.ClassOverlap:
		default:
			continue
		}
		for _, b := range tl.overlapBoxes(f, xs, y) {
			fillRect(&c, b.Min.X, b.Max.X, b.Min.Y, b.Max.Y, fill)
		}
	}
	// Header labels, one row under the other from the top.
	for _, h := range tl.header {
		if h.row < 0 {
			continue
		}
		sty := labelStyle(10, true, h.col)
		sty.YAlign = draw.YTop
		xl := min(x(tl.sp.Sec(h.t))+vg.Points(3), c.Max.X-sty.Width(h.text)-vg.Points(2))
		pt := vg.Point{X: xl, Y: c.Max.Y - vg.Points(2) - vg.Length(h.row)*vg.Points(tlLabelRow)}
		c.FillText(sty, pt, h.text)
	}
	// Cycle starts: dashed lines with their number underneath the lanes.
	cyc := draw.LineStyle{Color: color.Gray{Y: 90}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	var lastLabel vg.Length = -1e9
	for _, cs := range tl.cycles {
		xc := x(tl.sp.Sec(cs.T))
		c.StrokeLine2(cyc, xc, c.Min.Y, xc, lanesTop)
		s := "cycle " + strconv.Itoa(cs.N)
		sty := labelStyle(9, false, color.Gray{Y: 60})
		sty.YAlign = draw.YCenter
		if xc >= lastLabel {
			c.FillText(sty, vg.Point{X: xc + vg.Points(3), Y: (c.Min.Y + lanesBottom) / 2}, s)
			lastLabel = xc + sty.Width(s) + vg.Points(6)
		}
	}
	// Lane separators.
	sep := draw.LineStyle{Color: color.Gray{Y: 200}, Width: vg.Points(0.5)}
	for i := 0; i <= len(tl.lanes); i++ {
		yy := y(float64(i) - 0.5)
		c.StrokeLine2(sep, c.Min.X, yy, c.Max.X, yy)
	}
}

// foreground draws holds, accesses and findings.
type foreground struct{ tl *timeline }

func (tl *timeline) foreground() foreground { return foreground{tl} }

// Plot implements plot.Plotter.
func (fg foreground) Plot(c draw.Canvas, p *plot.Plot) {
	tl := fg.tl
	x, y := p.Transforms(&c)
	xs := func(t int64) vg.Length { return x(tl.sp.Sec(t)) }
	tl.drawHolds(&c, xs, y)
	tl.drawMarks(&c, xs, y)
	tl.drawFindings(&c, xs, y)
}

// drawHolds: a bar per grant; a thin pale bar from the hold's end to the
// client's last access when it kept using the resource afterwards.
func (tl *timeline) drawHolds(c *draw.Canvas, xs func(int64) vg.Length, y func(float64) vg.Length) {
	for _, h := range tl.holds {
		l, ok := tl.lane[h.Process]
		if !ok {
			continue
		}
		yc := tl.laneY(l)
		col := clientColor(l)
		x0, x1 := xs(h.Start), xs(h.End)
		x1 = max(x1, x0+vg.Points(1))
		fillRect(c, x0, x1, y(yc-0.27), y(yc+0.27), col)
		if lbl := labelStyle(9, false, color.White); x1-x0 > lbl.Width(h.Lease)+vg.Points(8) {
			lbl.YAlign = draw.YCenter
			c.FillText(lbl, vg.Point{X: x0 + vg.Points(4), Y: y(yc)}, h.Lease)
		}
		if h.EndReason == "expired" || h.EndReason == "crashed" {
			// A ragged end: the hold did not end by release.
			c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}, x1, y(yc-0.33), x1, y(yc+0.33))
		}
		if h.LastAccess > h.End {
			s0, s1 := x1, max(xs(h.LastAccess), x1+vg.Points(2))
			fillRect(c, s0, s1, y(yc-0.1), y(yc+0.1), pale(col))
			outline(c, s0, s1, y(yc-0.1), y(yc+0.1), draw.LineStyle{Color: col, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}})
		}
	}
}

// drawMarks: writes as short ticks under the bars, refused accesses as
// orange triangles, crashes as a black cross.
func (tl *timeline) drawMarks(c *draw.Canvas, xs func(int64) vg.Length, y func(float64) vg.Length) {
	tick := draw.LineStyle{Color: color.Gray{Y: 40}, Width: vg.Points(0.8)}
	for _, m := range tl.writes {
		yc := tl.laneY(m.lane)
		c.StrokeLine2(tick, xs(m.t), y(yc-0.27), xs(m.t), y(yc-0.40))
	}
	for _, m := range tl.stale {
		staleWrite(c, xs(m.t), y(tl.laneY(m.lane)))
	}
	for _, m := range tl.refused {
		c.DrawGlyph(draw.GlyphStyle{Color: fencedEdge, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}, vg.Point{X: xs(m.t), Y: y(tl.laneY(m.lane) - 0.36)})
	}
	for _, m := range tl.crashes {
		cross(c, xs(m.t), y(tl.laneY(m.lane)), vg.Points(6), color.Black)
		sty := labelStyle(9, true, color.Black)
		sty.YAlign = draw.YBottom
		c.FillText(sty, vg.Point{X: xs(m.t) + vg.Points(7), Y: y(tl.laneY(m.lane) + 0.3)}, "crashed")
	}

}

// drawFindings: red (or orange when fenced) boxes over the overlap in both
// lanes; a red cross on each lane of a lost update.
func (tl *timeline) drawFindings(c *draw.Canvas, xs func(int64) vg.Length, y func(float64) vg.Length) {
	labelled := len(tl.findings) <= tlMaxLabels
	labelEnd := map[int]vg.Length{}
	// label writes s right of a mark at [xa, xb], or left of it near the
	// right edge, unless it would overprint the lane's previous label.
	label := func(lane int, xa, xb vg.Length, s string, col color.Color) {
		if !labelled {
			return
		}
		sty := labelStyle(10, true, col)
		sty.YAlign = draw.YBottom
		xl := xb + vg.Points(3)
		if xl+sty.Width(s) > c.Max.X {
			xl = xa - vg.Points(3) - sty.Width(s)
		}
		if end, ok := labelEnd[lane]; ok && xl < end {
			return
		}
		yy := y(tl.laneY(lane) + 0.29)
		c.FillText(sty, vg.Point{X: xl, Y: yy}, s)
		labelEnd[lane] = xl + sty.Width(s) + vg.Points(6)
	}
	for _, f := range tl.findings {
		lanes := tl.findingLanes(f)
		switch f.Class {
		case checker.ClassOverlap, checker.ClassFenced:
			boxes := tl.overlapBoxes(f, xs, y)
			if len(boxes) == 0 {
				continue
			}
			edge := overlapEdge
			if f.Class == checker.ClassFenced {
				edge = fencedEdge
			}
			sty := draw.LineStyle{Color: edge, Width: vg.Points(1.5)}
			for _, b := range boxes {
				outline(c, b.Min.X, b.Max.X, b.Min.Y, b.Max.Y, sty)
			}
			if len(boxes) > 1 { // lanes apart: join the boxes
				mid := (boxes[0].Min.X + boxes[0].Max.X) / 2
				c.StrokeLine2(draw.LineStyle{Color: edge, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}},
					mid, boxes[0].Min.Y, mid, boxes[len(boxes)-1].Max.Y)
			}
			s := f.Class + " " + report.Dur(f.To-f.From)
			if f.Class == checker.ClassOverlap && f.Kind == "stale-access" {
				s = "stale access " + report.Dur(f.To-f.From)
			}
			label(lanes[0], boxes[0].Min.X, boxes[0].Max.X, s, edge)
		case checker.ClassCorruption:
			if len(lanes) == 0 { // unattributed: one cross above the lanes
				cross(c, xs(f.To), y(float64(len(tl.lanes))-0.5)+vg.Points(7), vg.Points(6), overlapEdge)
				continue
			}
			for _, l := range lanes {
				cross(c, xs(f.To), y(tl.laneY(l)), vg.Points(7), overlapEdge)
			}
			label(lanes[len(lanes)-1], xs(f.To)-vg.Points(8), xs(f.To)+vg.Points(8), "lost update", overlapEdge)
		}
	}
}

// overlapBoxes are the boxes marking an overlap: one over both lanes when
// they are neighbours, else one per lane, top lane first.
func (tl *timeline) overlapBoxes(f checker.Finding, xs func(int64) vg.Length, y func(float64) vg.Length) []vg.Rectangle {
	lanes := tl.findingLanes(f)
	if len(lanes) == 0 {
		return nil
	}
	x0, x1 := xs(f.From), xs(f.To)
	if x1-x0 < vg.Points(3) { // keep short overlaps visible
		mid := (x0 + x1) / 2
		x0, x1 = mid-vg.Points(1.5), mid+vg.Points(1.5)
	}
	box := func(lo, hi float64) vg.Rectangle {
		return vg.Rectangle{Min: vg.Point{X: x0, Y: y(lo - 0.45)}, Max: vg.Point{X: x1, Y: y(hi + 0.45)}}
	}
	top, bottom := tl.laneY(lanes[0]), tl.laneY(lanes[len(lanes)-1])
	if top-bottom <= 1 {
		return []vg.Rectangle{box(bottom, top)}
	}
	var out []vg.Rectangle
	for _, l := range lanes {
		out = append(out, box(tl.laneY(l), tl.laneY(l)))
	}
	return out
}

// findingLanes are the lanes of a finding's clients, top first.
func (tl *timeline) findingLanes(f checker.Finding) []int {
	var out []int
	for _, cl := range f.Clients {
		if l, ok := tl.lane[cl]; ok {
			out = append(out, l)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func fillRect(c *draw.Canvas, x0, x1, y0, y1 vg.Length, col color.Color) {
	c.FillPolygon(col, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
}

func outline(c *draw.Canvas, x0, x1, y0, y1 vg.Length, sty draw.LineStyle) {
	c.StrokeLines(sty, c.ClipLinesXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}})...)
}

// cross draws an X of half-size r, white-edged so it shows on any colour.
func cross(c *draw.Canvas, x, y, r vg.Length, col color.Color) {
	for _, sty := range []draw.LineStyle{{Color: color.White, Width: vg.Points(4.5)}, {Color: col, Width: vg.Points(2.5)}} {
		c.StrokeLine2(sty, x-r, y-r, x+r, y+r)
		c.StrokeLine2(sty, x-r, y+r, x+r, y-r)
	}
}

// staleWrite marks a write made after the writer's hold had ended.
func staleWrite(c *draw.Canvas, x, y vg.Length) {
	c.DrawGlyph(draw.GlyphStyle{Color: color.White, Radius: vg.Points(5.5), Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: y})
	c.DrawGlyph(draw.GlyphStyle{Color: overlapEdge, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: y})
}
