package plots

import (
	"fmt"
	"image/color"
	"os"
	"strings"

	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/report"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Claims picture geometry, in points.
const (
	cpMargin     = 14.0
	cpLabelWidth = 250.0 // claim column, text wraps inside
	cpMinCol     = 130.0
	cpMaxCol     = 200.0
	cpHeaderMin  = 30.0
	cpCellMin    = 58.0
	cpPad        = 6.0
	cpLine       = 14.0
)

// writeClaimsPNG draws the matrix: rows are claims, columns locks; a cell
// is green when every run in it matched its expectation, red otherwise,
// grey without runs, and shows the observed verdict and its rate.
func writeClaimsPNG(path string, m *pages.Matrix) error {
	head := labelStyle(11, true, color.Black)
	body := labelStyle(11, false, color.Black)
	verdict := labelStyle(12, true, color.Black)
	small := labelStyle(9.5, false, color.Gray{Y: 50})

	colW, headLines, headH, rows := claimsLayout(m, head, body, small)

	titleH := 40.0
	width := 2*cpMargin + cpLabelWidth
	for _, w := range colW {
		width += w
	}
	height := 2*cpMargin + titleH + headH
	for _, r := range rows {
		height += r.h
	}
	cv := vgimg.NewWith(vgimg.UseWH(vg.Points(width), vg.Points(height)), vgimg.UseDPI(110))
	c := draw.New(cv)
	top := func(y float64) vg.Length { return vg.Points(height - y) } // y from the top

	title := labelStyle(14, true, color.Black)
	title.YAlign = draw.YTop
	c.FillText(title, vg.Point{X: vg.Points(cpMargin), Y: top(cpMargin)}, "lockfault claims × locks")
	sub := labelStyle(10, false, color.Gray{Y: 60})
	sub.YAlign = draw.YTop
	c.FillText(sub, vg.Point{X: vg.Points(cpMargin), Y: top(cpMargin + 19)}, "green: the lock behaved as the claim predicts · red: it did not · grey: not run · in each cell: the observed verdict, then the expectation")

	grid := draw.LineStyle{Color: color.Gray{Y: 160}, Width: vg.Points(0.8)}
	y := cpMargin + titleH
	x := cpMargin + cpLabelWidth
	for i := range m.Locks {
		drawLines(&c, head, headLines[i], x+cpPad, y+cpPad, top)
		x += colW[i]
	}
	drawLines(&c, head, []string{"claim"}, cpMargin+cpPad, y+headH-cpPad-cpLine, top)
	y += headH
	c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 90}, Width: vg.Points(1.2)}, vg.Points(cpMargin), top(y), vg.Points(width-cpMargin), top(y))
	for ri, r := range rows {
		drawLines(&c, body, r.label, cpMargin+cpPad, y+cpPad, top)
		x := cpMargin + cpLabelWidth
		for i, l := range m.Locks {
			rs := m.Cells[[2]string{m.Claims[ri], l}]
			fill, edge := emptyCell, color.NRGBA{0xbb, 0xbb, 0xbb, 0xff}
			if len(rs) > 0 {
				fill, edge = badCell, badEdge
				if pages.CellMatched(rs) {
					fill, edge = goodCell, goodEdge
				}
			}
			x0, x1 := vg.Points(x+2), vg.Points(x+colW[i]-2)
			y0, y1 := top(y+r.h-2), top(y+2)
			fillRect(&c, x0, x1, y0, y1, fill)
			outline(&c, x0, x1, y0, y1, draw.LineStyle{Color: edge, Width: vg.Points(1.5)})
			lines := r.cells[i]
			if len(lines) > 0 {
				vs := verdict
				vs.Color = edge
				drawLines(&c, vs, lines[:1], x+cpPad, y+cpPad+2, top)
				drawLines(&c, small, lines[1:], x+cpPad, y+cpPad+2+cpLine+1, top)
			}
			x += colW[i]
		}
		y += r.h
		c.StrokeLine2(grid, vg.Points(cpMargin), top(y), vg.Points(width-cpMargin), top(y))
	}

	return writePNG(path, cv)
}

// claimRow is a claim's row of the matrix laid out: its wrapped label,
// each lock's cell as lines of text, its height.
type claimRow struct {
	label []string
	cells [][]string // per lock: lines of text
	h     float64
}

// claimsLayout sizes the matrix: column widths from the lock names (their
// wrapped lines and the header's height), row heights from the wrapped
// claims and cells.
func claimsLayout(m *pages.Matrix, head, body, small text.Style) (colW []float64, headLines [][]string, headH float64, rows []claimRow) {
	colW = make([]float64, len(m.Locks))
	headH = cpHeaderMin
	for i, l := range m.Locks {
		w := float64(head.Width(l)) + 2*cpPad
		colW[i] = min(max(w, cpMinCol), cpMaxCol)
		lines := wrap(head, l, colW[i]-2*cpPad)
		headLines = append(headLines, lines)
		headH = max(headH, float64(len(lines))*cpLine+2*cpPad)
	}
	for _, c := range m.Claims {
		r := claimRow{label: wrap(body, c, cpLabelWidth-2*cpPad)}
		r.h = max(cpCellMin, float64(len(r.label))*cpLine+2*cpPad)
		for i, l := range m.Locks {
			lines := cellLines(m.Cells[[2]string{c, l}], small, colW[i]-2*cpPad)
			r.cells = append(r.cells, lines)
			r.h = max(r.h, float64(len(lines))*cpLine+2*cpPad+4)
		}
		rows = append(rows, r)
	}

	return colW, headLines, headH, rows
}

// cellLines is the text of a cell: the observed verdict first, then the
// rate and the expectation (and a line per further run).
func cellLines(rs []pages.ClaimRow, sty text.Style, width float64) []string {
	if len(rs) == 0 {
		return nil
	}
	var obs []string
	for _, r := range rs {
		obs = append(obs, report.ClassList(r.Observed))
	}
	lines := []string{strings.Join(obs, " / ")}
	for _, r := range rs {
		s := "expected " + report.ClassList(r.Expect)
		if len(rs) > 1 {
			s = r.Scenario + ": " + s
		}
		lines = append(lines, wrap(sty, s, width)...)
		if r.Cycles > 0 {
			lines = append(lines, wrap(sty, fmt.Sprintf("seen in %d/%d cycles", r.Hits, r.Cycles), width)...)
		}
		if r.Rate != "" {
			lines = append(lines, wrap(sty, r.Rate, width)...)
		}
	}
	return lines
}

// drawLines writes lines downward from (x, y), y measured from the top.
func drawLines(c *draw.Canvas, sty text.Style, lines []string, x, y float64, top func(float64) vg.Length) {
	sty.YAlign = draw.YTop
	for i, l := range lines {
		c.FillText(sty, vg.Point{X: vg.Points(x), Y: top(y + float64(i)*cpLine)}, l)
	}
}

// wrap breaks s into lines no wider than width points, at spaces (or
// hyphens and slashes in a long word).
func wrap(sty text.Style, s string, width float64) []string {
	fits := func(t string) bool { return float64(sty.Width(t)) <= width }
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		cand := w
		if cur != "" {
			cand = cur + " " + w
		}
		if fits(cand) {
			cur = cand
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
		}
		cur = w
		for !fits(cur) {
			rs := []rune(cur)
			cut := len(rs) - 1
			for cut > 1 && !fits(string(rs[:cut])) {
				cut--
			}
			if i := strings.LastIndexAny(string(rs[:cut]), "-/_."); i > 0 {
				cut = len([]rune(string(rs[:cut])[:i])) + 1
			}
			lines = append(lines, string(rs[:cut]))
			cur = string(rs[cut:])
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// writePNG writes a drawn canvas to path as PNG.
func writePNG(path string, cv *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
