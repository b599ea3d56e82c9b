package pages

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/report"
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
	drawn := false
	if drawers.Card != nil {
		try(FileSuitePNG, func(p string) error { return drawers.Card(p, c) })
		drawn = len(errs) == 0
	}
	doc := cardDocument(c, drawn)
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

// cardDocument is the card as a document; drawn: suite.png is beside it.
func cardDocument(c *card.Card, drawn bool) *report.Document {
	d := &report.Document{}
	d.H(1, "Report card: "+c.Lock)
	who := "lock " + c.Lock
	if c.Worker != "" {
		who += " through the external worker `" + c.Worker + "`"
	}
	d.P(report.Txt(fmt.Sprintf("The property suite against %s (needs %s; claims %s), on the %s backend, run %s, %s.",
		who, report.OrDash(c.Needs), report.OrDash(strings.Join(c.Caps, ", ")), c.Backend, c.RunID, c.Duration.Round(1e9))))
	d.P(report.Bold(c.Tally() + "."))
	d.P(report.Txt("held: the property's scenario ended as it expects and every fault reached the lock; " +
		"violated: it did not (the classes observed, in how many fault cycles, the first finding and the run's report); " +
		"not claimed: the lock does not declare the kind or capability the property tests, so it was not run; " +
		"harness error: the run itself failed and says nothing about the lock."))
	if drawn {
		d.Img("report card", FileSuitePNG)
	}
	t := report.Table{Header: []string{"property", "outcome", "observed", "cycles", "finding", "report"}}
	for _, r := range c.Rows {
		rep := report.Plain("—")
		if r.Report != "" {
			rep = report.Cell{Spans: []report.Inline{report.Link("report", filepath.ToSlash(r.Report))}}
		}
		cyc := "—"
		if r.Outcome == card.Violated && r.Cycles > 0 {
			cyc = fmt.Sprintf("%d/%d", r.BadCycles, r.Cycles)
		}
		t.Rows = append(t.Rows, []report.Cell{
			{Spans: []report.Inline{report.Code(r.Property)}},
			{Spans: []report.Inline{report.Bold(outcomeMark(r.Outcome))}, Tone: outcomeTone(r.Outcome)},
			report.Plain(report.OrDash(strings.Join(r.Observed, ", "))),
			report.Plain(cyc),
			report.Plain(report.OrDash(r.Finding)),
			rep,
		})
	}
	d.Tab(t)
	d.H(2, "Properties")
	var items [][]report.Inline
	for _, r := range c.Rows {
		items = append(items, report.Item(report.Code(r.Property), report.Txt(": "+report.OrDash(r.Explanation))))
	}
	d.UL(items...)
	d.P(report.Txt("Machine-readable: "), report.Link(FileSuiteJSON, FileSuiteJSON), report.Txt(", "), report.Link(FileJUnit, FileJUnit), report.Txt("."))
	return d
}
