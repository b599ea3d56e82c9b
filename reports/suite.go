package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockfault/lockfault/card"
)

// Files of a suite folder (reports/suite/<lock>/<run-id>/).
const (
	FileSuiteMarkdown = "suite.md"
	FileSuiteHTML     = "suite.html"
	FileSuiteJSON     = "suite.json"
	FileSuitePNG      = "suite.png"
	FileJUnit         = "junit.xml"
)

// WriteCard writes a lock's report card into dir: suite.md, suite.html
// (self-contained, the picture embedded), suite.json, suite.png and
// junit.xml. Report paths in the rows should already be relative to dir.
func WriteCard(dir string, c *card.Card) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []string
	try := func(name string, write func(string) error) {
		if err := write(filepath.Join(dir, name)); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		}
	}
	try(FileSuitePNG, func(p string) error { return writeCardPNG(p, c) })
	doc := cardDocument(c)
	try(FileSuiteMarkdown, func(p string) error { return os.WriteFile(p, []byte(doc.Markdown()), 0o644) })
	try(FileSuiteHTML, func(p string) error {
		return os.WriteFile(p, []byte(doc.HTML("lockfault report card: "+c.Lock, dir)), 0o644)
	})
	try(FileSuiteJSON, c.WriteJSON)
	try(FileJUnit, c.WriteJUnit)
	if len(errs) > 0 {
		return fmt.Errorf("write card: %s", strings.Join(errs, "; "))
	}
	return nil
}

func outcomeTone(o card.Outcome) int {
	switch o {
	case card.Held:
		return 1
	case card.Violated, card.HarnessError, card.Unknown:
		return -1
	}
	return 0
}

func outcomeMark(o card.Outcome) string {
	switch o {
	case card.Held:
		return "✅ held"
	case card.Violated:
		return "❌ violated"
	case card.HarnessError:
		return "⚠️ harness error"
	case card.Unknown:
		return "❔ unknown"
	}
	return "— not claimed"
}

func cardDocument(c *card.Card) *Document {
	d := &Document{}
	d.H(1, "Report card: "+c.Lock)
	who := "lock " + c.Lock
	if c.Worker != "" {
		who += " through the external worker `" + c.Worker + "`"
	}
	d.P(Txt(fmt.Sprintf("The property suite against %s (needs %s; claims %s), on the %s backend, run %s, %s.",
		who, OrDash(c.Needs), OrDash(strings.Join(c.Caps, ", ")), c.Backend, c.RunID, c.Duration.Round(1e9))))
	d.P(Bold(c.Tally() + "."))
	d.P(Txt("held: the property's scenario ended as it expects and every fault reached the lock; " +
		"violated: it did not (the classes observed, in how many fault cycles, the first finding and the run's report); " +
		"not claimed: the lock does not declare the kind or capability the property tests, so it was not run; " +
		"harness error: the run itself failed and says nothing about the lock."))
	d.Img("report card", FileSuitePNG)
	t := Table{Header: []string{"property", "outcome", "observed", "cycles", "finding", "report"}}
	for _, r := range c.Rows {
		rep := Plain("—")
		if r.Report != "" {
			rep = Cell{Spans: []Inline{Link("report", filepath.ToSlash(r.Report))}}
		}
		cyc := "—"
		if r.Outcome == card.Violated && r.Cycles > 0 {
			cyc = fmt.Sprintf("%d/%d", r.BadCycles, r.Cycles)
		}
		t.Rows = append(t.Rows, []Cell{
			{Spans: []Inline{Code(r.Property)}},
			{Spans: []Inline{Bold(outcomeMark(r.Outcome))}, Tone: outcomeTone(r.Outcome)},
			Plain(OrDash(strings.Join(r.Observed, ", "))),
			Plain(cyc),
			Plain(OrDash(r.Finding)),
			rep,
		})
	}
	d.Tab(t)
	d.H(2, "Properties")
	var items [][]Inline
	for _, r := range c.Rows {
		items = append(items, Item(Code(r.Property), Txt(": "+OrDash(r.Explanation))))
	}
	d.UL(items...)
	d.P(Txt("Machine-readable: "), Link(FileSuiteJSON, FileSuiteJSON), Txt(", "), Link(FileJUnit, FileJUnit), Txt("."))
	return d
}
