package reports

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/lockfault/lockfault/card"
)

// WriteCardsTable writes the side-by-side table of several locks' cards
// (property × lock) as Markdown, each cell linking to that lock's card,
// and as a picture (green held, red violated, grey not claimed, amber
// harness error). cardDirs[i] is the folder of cards[i]. expected, when
// it has an entry {lock, property}, is the outcome the promise table
// expects; a cell that differs says so.
func WriteCardsTable(mdPath, pngPath string, cards []*card.Card, cardDirs []string, expected map[[2]string]card.Outcome) error {
	props := cardProperties(cards)
	if pngPath != "" {
		if err := os.MkdirAll(filepath.Dir(pngPath), 0o755); err != nil {
			return err
		}
		if err := writeCardsPNG(pngPath, props, cards); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(pngPath), err)
		}
	}
	d := &document{}
	d.h(1, "lockfault: report cards")
	d.p(txt(fmt.Sprintf("The property suite against %d locks. A cell is the property's outcome for the lock: "+
		"✅ held, ❌ violated (what was observed), — not claimed (the lock does not declare the kind or capability it tests), "+
		"⚠️ harness error. Each lock's name links to its card, each violation to the run's report.", len(cards))))
	if pngPath != "" {
		rel, err := filepath.Rel(filepath.Dir(mdPath), pngPath)
		if err != nil {
			rel = pngPath
		}
		d.img("lock × property", filepath.ToSlash(rel))
	}
	base, _ := filepath.Abs(filepath.Dir(mdPath))
	relTo := func(p string) string {
		abs, _ := filepath.Abs(p)
		if r, err := filepath.Rel(base, abs); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(p)
	}
	t := table{header: []string{"property"}}
	for _, c := range cards {
		t.header = append(t.header, c.Lock)
	}
	for _, p := range props {
		row := []cell{{spans: []inline{code(p)}}}
		for i, c := range cards {
			r, ok := c.Row(p)
			if !ok {
				row = append(row, plain(""))
				continue
			}
			spans := []inline{txt(outcomeMark(r.Outcome))}
			if r.Outcome == card.Violated || r.Outcome == card.HarnessError || r.Outcome == card.Unknown {
				spans = []inline{bold(outcomeMark(r.Outcome))}
			}
			if r.Outcome == card.Violated {
				spans = append(spans, txt(" "+strings.Join(r.Observed, ", ")))
				if r.Cycles > 0 {
					spans = append(spans, txt(fmt.Sprintf(" %d/%d", r.BadCycles, r.Cycles)))
				}
			}
			if r.Report != "" && r.Outcome != card.Held && r.Outcome != card.NotClaimed {
				spans = append(spans, txt(" "), link("report", relTo(filepath.Join(cardDirs[i], r.Report))))
			}
			tone := outcomeTone(r.Outcome)
			if exp, ok := expected[[2]string{c.Lock, p}]; ok {
				if exp != r.Outcome {
					spans = append(spans, txt(" "), bold("≠ expected "+exp.Text()))
					tone = -1
				} else if r.Outcome == card.Violated {
					spans = append(spans, txt(" (as expected)"))
				}
			}
			row = append(row, cell{spans: spans, tone: tone})
		}
		t.rows = append(t.rows, row)
	}
	d.tab(t)
	if len(expected) > 0 {
		var diffs [][]inline
		for _, c := range cards {
			for _, r := range c.Rows {
				if exp, ok := expected[[2]string{c.Lock, r.Property}]; ok && exp != r.Outcome {
					diffs = append(diffs, item(bold(c.Lock), txt(" × "), code(r.Property), txt(": expected "+exp.Text()+", got "+r.Summary())))
				}
			}
		}
		d.h(2, "Against the promise table")
		if len(diffs) == 0 {
			d.p(txt("Every outcome of the built-in locks is the one the promise table (suite/promises.go) expects."))
		} else {
			d.p(txt(fmt.Sprintf("%d outcomes differ from the promise table (suite/promises.go):", len(diffs))))
			d.ul(diffs...)
		}
	}
	var items [][]inline
	for i, c := range cards {
		items = append(items, item(bold(c.Lock), txt(": "+c.Tally()+", "+c.Duration.Round(1e9).String()+" on "+c.Backend+" — "),
			link("card", relTo(filepath.Join(cardDirs[i], FileSuiteMarkdown)))))
	}
	d.h(2, "Cards")
	d.ul(items...)
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(d.markdown()), 0o644)
}

func cardProperties(cards []*card.Card) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cards {
		for _, r := range c.Rows {
			if !seen[r.Property] {
				seen[r.Property] = true
				out = append(out, r.Property)
			}
		}
	}
	sort.Strings(out)
	return out
}

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
