package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
)

// Files of a suite folder (reports/suite/<lock>/<run-id>/).
const (
	FileSuiteMarkdown = "suite.md"
	FileSuiteHTML     = "suite.html"
	FileSuiteJSON     = "suite.json"
	FileSuitePNG      = "suite.png"
	FileJUnit         = "junit.xml"
)

// FindingSentence is a finding in one line, as the card and a failing
// test show it: what kind of thing happened, then the details.
func FindingSentence(f checker.Finding) string {
	s := headline(f)
	if f.Detail != "" {
		s += " " + f.Detail
	}
	return s
}

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
	try(FileSuiteMarkdown, func(p string) error { return os.WriteFile(p, []byte(doc.markdown()), 0o644) })
	try(FileSuiteHTML, func(p string) error {
		return os.WriteFile(p, []byte(doc.html("lockfault report card: "+c.Lock, dir)), 0o644)
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

func cardDocument(c *card.Card) *document {
	d := &document{}
	d.h(1, "Report card: "+c.Lock)
	who := "lock " + c.Lock
	if c.Worker != "" {
		who += " through the external worker `" + c.Worker + "`"
	}
	d.p(txt(fmt.Sprintf("The property suite against %s (needs %s; claims %s), on the %s backend, run %s, %s.",
		who, orDash(c.Needs), orDash(strings.Join(c.Caps, ", ")), c.Backend, c.RunID, c.Duration.Round(1e9))))
	d.p(bold(c.Tally() + "."))
	d.p(txt("held: the property's scenario ended as it expects and every fault reached the lock; " +
		"violated: it did not (the classes observed, in how many fault cycles, the first finding and the run's report); " +
		"not claimed: the lock does not declare the kind or capability the property tests, so it was not run; " +
		"harness error: the run itself failed and says nothing about the lock."))
	d.img("report card", FileSuitePNG)
	t := table{header: []string{"property", "outcome", "observed", "cycles", "finding", "report"}}
	for _, r := range c.Rows {
		rep := plain("—")
		if r.Report != "" {
			rep = cell{spans: []inline{link("report", filepath.ToSlash(r.Report))}}
		}
		cyc := "—"
		if r.Outcome == card.Violated && r.Cycles > 0 {
			cyc = fmt.Sprintf("%d/%d", r.BadCycles, r.Cycles)
		}
		t.rows = append(t.rows, []cell{
			{spans: []inline{code(r.Property)}},
			{spans: []inline{bold(outcomeMark(r.Outcome))}, tone: outcomeTone(r.Outcome)},
			plain(orDash(strings.Join(r.Observed, ", "))),
			plain(cyc),
			plain(orDash(r.Finding)),
			rep,
		})
	}
	d.tab(t)
	d.h(2, "Properties")
	var items [][]inline
	for _, r := range c.Rows {
		items = append(items, item(code(r.Property), txt(": "+orDash(r.Explanation))))
	}
	d.ul(items...)
	d.p(txt("Machine-readable: "), link(FileSuiteJSON, FileSuiteJSON), txt(", "), link(FileJUnit, FileJUnit), txt("."))
	return d
}
