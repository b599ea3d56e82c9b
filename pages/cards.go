package pages

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/report"
)

// WriteCardsTable writes the side-by-side table of several locks' cards
// (property × lock) as Markdown, each cell linking to that lock's card,
// and as a picture (green held, red violated, grey not claimed, amber
// harness error). cardDirs[i] is the folder of cards[i]. expected, when
// it has an entry {lock, property}, is the outcome the promise table
// expects; a cell that differs says so.
func WriteCardsTable(mdPath, pngPath string, cards []*card.Card, cardDirs []string, expected map[[2]string]card.Outcome) error {
	props := cardProperties(cards)
	if drawers.Cards == nil {
		pngPath = ""
	}
	if pngPath != "" {
		if err := os.MkdirAll(filepath.Dir(pngPath), 0o755); err != nil {
			return err
		}
		if err := drawers.Cards(pngPath, props, cards); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(pngPath), err)
		}
	}
	d := &report.Document{}
	d.H(1, "lockfault: report cards")
	d.P(report.Txt(fmt.Sprintf("The property suite against %d locks. A cell is the property's outcome for the lock: "+
		"✅ held, ❌ violated (what was observed), — not claimed (the lock does not declare the kind or capability it tests), "+
		"⚠️ harness error. Each lock's name links to its card, each violation to the run's report.", len(cards))))
	if pngPath != "" {
		rel, err := filepath.Rel(filepath.Dir(mdPath), pngPath)
		if err != nil {
			rel = pngPath
		}
		d.Img("lock × property", filepath.ToSlash(rel))
	}
	base, _ := filepath.Abs(filepath.Dir(mdPath))
	relTo := func(p string) string {
		abs, _ := filepath.Abs(p)
		if r, err := filepath.Rel(base, abs); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(p)
	}
	d.Tab(cardsGrid(props, cards, cardDirs, expected, relTo))
	promiseSection(d, cards, expected)
	var items [][]report.Inline
	for i, c := range cards {
		items = append(items, report.Item(report.Bold(c.Lock), report.Txt(": "+c.Tally()+", "+c.Duration.Round(1e9).String()+" on "+c.Backend+" — "),
			report.Link("card", relTo(filepath.Join(cardDirs[i], FileSuiteMarkdown)))))
	}
	d.H(2, "Cards")
	d.UL(items...)
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(d.Markdown()), 0o644)
}

// cardsGrid is the property × lock table: each cell the property's outcome
// for the lock, what was observed, a link to the run's report, and how it
// compares with the promise table's expectation.
func cardsGrid(props []string, cards []*card.Card, cardDirs []string, expected map[[2]string]card.Outcome, relTo func(string) string) report.Table {
	t := report.Table{Header: []string{"property"}}
	for _, c := range cards {
		t.Header = append(t.Header, c.Lock)
	}
	for _, p := range props {
		row := []report.Cell{{Spans: []report.Inline{report.Code(p)}}}
		for i, c := range cards {
			r, ok := c.Row(p)
			if !ok {
				row = append(row, report.Plain(""))
				continue
			}
			row = append(row, gridCell(c.Lock, p, r, cardDirs[i], expected, relTo))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// gridCell is one lock's outcome for a property (its card in dir).
func gridCell(lock, p string, r card.Row, dir string, expected map[[2]string]card.Outcome, relTo func(string) string) report.Cell {
	spans := []report.Inline{report.Txt(outcomeMark(r.Outcome))}
	if r.Outcome == card.Violated || r.Outcome == card.HarnessError || r.Outcome == card.Unknown {
		spans = []report.Inline{report.Bold(outcomeMark(r.Outcome))}
	}
	if r.Outcome == card.Violated {
		spans = append(spans, report.Txt(" "+strings.Join(r.Observed, ", ")))
		if r.Cycles > 0 {
			spans = append(spans, report.Txt(fmt.Sprintf(" %d/%d", r.BadCycles, r.Cycles)))
		}
	}
	if r.Report != "" && r.Outcome != card.Held && r.Outcome != card.NotClaimed {
		spans = append(spans, report.Txt(" "), report.Link("report", relTo(filepath.Join(dir, r.Report))))
	}
	tone := outcomeTone(r.Outcome)
	if exp, ok := expected[[2]string{lock, p}]; ok {
		if exp != r.Outcome {
			spans = append(spans, report.Txt(" "), report.Bold("≠ expected "+exp.Text()))
			tone = -1
		} else if r.Outcome == card.Violated {
			spans = append(spans, report.Txt(" (as expected)"))
		}
	}
	return report.Cell{Spans: spans, Tone: tone}
}

// promiseSection lists the outcomes that differ from the promise table,
// when there is one.
func promiseSection(d *report.Document, cards []*card.Card, expected map[[2]string]card.Outcome) {
	if len(expected) == 0 {
		return
	}
	var diffs [][]report.Inline
	for _, c := range cards {
		for _, r := range c.Rows {
			if exp, ok := expected[[2]string{c.Lock, r.Property}]; ok && exp != r.Outcome {
				diffs = append(diffs, report.Item(report.Bold(c.Lock), report.Txt(" × "), report.Code(r.Property), report.Txt(": expected "+exp.Text()+", got "+r.Summary())))
			}
		}
	}
	d.H(2, "Against the promise table")
	if len(diffs) == 0 {
		d.P(report.Txt("Every outcome of the built-in locks is the one the promise table (suite/promises.go) expects."))
		return
	}
	d.P(report.Txt(fmt.Sprintf("%d outcomes differ from the promise table (suite/promises.go):", len(diffs))))
	d.UL(diffs...)
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
