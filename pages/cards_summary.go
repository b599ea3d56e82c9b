package pages

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/internal/userfile"
)

// maxSummaryBytes bounds the existing page read back to keep the other
// backends' sections.
const maxSummaryBytes = 4 << 20

// WriteCardsSummary writes what a cards run measured as a page that links
// nothing (docs/CARDS.md): one section per backend, each with one row per
// lock (its exact version and its tally), the cells that differ from the
// promise table, then, per lock, each property it did not hold with the
// first finding's sentence. Only this run's backend's section is replaced:
// the other backend's, measured by another make cards, is kept.
func WriteCardsSummary(path, backend string, cards []*card.Card, differ []string) error {
	if len(cards) > 0 && cards[0].Backend != "" {
		backend = cards[0].Backend // auto resolved
	}
	sections := map[string]string{}
	if old, err := userfile.ReadFile(path, maxSummaryBytes); err == nil {
		sections = summarySections(old)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	sections[backend] = backendSection(backend, cards, differ)
	return writeSummaryPage(path, sections)
}

// writeSummaryPage writes the summary page from its backend sections.
func writeSummaryPage(path string, sections map[string]string) error {
	var b strings.Builder
	b.WriteString("# Measured cards\n\nWritten by `make cards` (`simulate cards -summary`): every lock lockfault ships and every library worker in `examples/`, through the whole property suite, one section per backend (each rewritten by the run on that backend, `make cards backend=process` or `backend=docker`). What each property promises: [PROPERTIES.md](PROPERTIES.md); what was expected of each lock: the promise table there. How often each outcome comes back: [RATES.md](RATES.md).\n")
	names := slices.Sorted(maps.Keys(sections)) // docker, then process
	for _, name := range names {
		b.WriteString(sections[name])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// The README's block that WriteCardsReadme rewrites.
const (
	readmeBegin = "<!-- BEGIN generated:cards (make cards) -->\n"
	readmeEnd   = "<!-- END generated:cards -->"
)

// CheckCardsReadme checks, before a cards run starts, that a README given
// to WriteCardsReadme ("": none) can be rewritten: a summary page is given
// too, and the README has the cards block.
func CheckCardsReadme(readme, summary string) error {
	if readme == "" {
		return nil
	}
	if summary == "" {
		return fmt.Errorf("needs -summary (the README's block is made from that page)")
	}
	_, _, _, err := readmeBlock(readme)
	return err
}

// readmeBlock reads a README and finds its cards block: the text before
// the block's content ends at i, the text after it starts at j.
func readmeBlock(readme string) (r []byte, i, j int, err error) {
	if r, err = userfile.ReadFile(readme, maxSummaryBytes); err != nil {
		return nil, 0, 0, err
	}
	i, j = bytes.Index(r, []byte(readmeBegin)), bytes.Index(r, []byte(readmeEnd))
	if i < 0 || j < i {
		return nil, 0, 0, fmt.Errorf("%s: no cards block (%q ... %q)", readme, strings.TrimSpace(readmeBegin), readmeEnd)
	}
	return r, i + len(readmeBegin), j, nil
}

// WriteCardsReadme rewrites the README's cards block from the page
// WriteCardsSummary wrote: each backend's heading and its table of locks
// with their versions and tallies.
func WriteCardsReadme(readme, page string) error {
	p, err := userfile.ReadFile(page, maxSummaryBytes)
	if err != nil {
		return err
	}
	r, i, j, err := readmeBlock(readme)
	if err != nil {
		return err
	}
	sections := summarySections(p)
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		lines := strings.Split(sections[name], "\n")
		for k, l := range lines {
			if strings.HasPrefix(l, "## ") {
				fmt.Fprintf(&b, "**%s**\n\n", strings.TrimPrefix(l, "## "))
				inTable := false
				for _, t := range lines[k+1:] {
					if strings.HasPrefix(t, "|") {
						b.WriteString(t + "\n")
						inTable = true
					} else if inTable {
						break // the first table only
					}
				}
				b.WriteString("\n")
				break
			}
		}
	}
	out := append(append(append([]byte{}, r[:i]...), b.String()...), r[j:]...)
	return os.WriteFile(readme, out, 0o644)
}

var sectionRE = regexp.MustCompile(`(?s)\n<!-- cards:([a-z]+) -->\n.*?\n<!-- /cards:([a-z]+) -->\n`)

// summarySections are the backend sections of a page WriteCardsSummary
// wrote, by backend, each with its markers.
func summarySections(page []byte) map[string]string {
	out := map[string]string{}
	for _, m := range sectionRE.FindAllSubmatch(page, -1) {
		if bytes.Equal(m[1], m[2]) {
			out[string(m[1])] = string(m[0])
		}
	}
	return out
}

func backendSection(backend string, cards []*card.Card, differ []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n<!-- cards:%s -->\n## %s backend, %s\n\n", backend, backend, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("| lock | version | needs | held | violated | unknown | not claimed | harness error | wall time |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cards {
		v := c.Version
		if v == "" {
			v = "lockfault's own"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %d | %v |\n", summaryCell(c.Lock), summaryCell(v), c.Needs, c.Count(card.Held), c.Count(card.Violated),
			c.Count(card.Unknown), c.Count(card.NotClaimed), c.Count(card.HarnessError), c.Duration.Round(time.Second))
	}
	b.WriteString("\n### Against the promise table\n\n")
	if len(differ) == 0 {
		b.WriteString("Every outcome as the promise table says.\n")
	}
	for _, d := range differ {
		fmt.Fprintf(&b, "- %s\n", summaryCell(d))
	}
	b.WriteString("\n### What each lock did not hold\n")
	for _, c := range cards {
		var lines []string
		for _, r := range c.Rows {
			if r.Outcome == card.Held || r.Outcome == card.NotClaimed {
				continue
			}
			line := fmt.Sprintf("- `%s`: %s", r.Property, r.Outcome.Text())
			if r.Cycles > 0 && r.Outcome == card.Violated {
				line += fmt.Sprintf(" in %d/%d cycles", r.BadCycles, r.Cycles)
			}
			if r.Finding != "" {
				line += ": " + summaryCell(r.Finding)
			}
			lines = append(lines, line)
		}
		if len(lines) == 0 {
			lines = []string{"- every property it claims held"}
		}
		fmt.Fprintf(&b, "\n#### %s\n\n%s\n", summaryCell(c.Lock), strings.Join(lines, "\n"))
	}
	fmt.Fprintf(&b, "<!-- /cards:%s -->\n", backend)
	return b.String()
}

func summaryCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\\|`)
}

// AddCardsSummary is WriteCardsSummary for some locks only (simulate cards
// -add): in this run's backend's section, the table row, the differences
// from the promise table and the findings of each lock it measured replace
// that lock's (or come after the others, for a lock new to the page), and
// every other lock's are kept as the page had them, so that a lock new to
// lockfault is carded without running every other lock again. The
// section's date is this run's. Without a section for the backend, it is
// WriteCardsSummary.
func AddCardsSummary(path, backend string, cards []*card.Card, differ []string) error {
	if len(cards) > 0 && cards[0].Backend != "" {
		backend = cards[0].Backend // auto resolved
	}
	old, err := userfile.ReadFile(path, maxSummaryBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return WriteCardsSummary(path, backend, cards, differ)
	}
	if err != nil {
		return err
	}
	prev, ok := summarySections(old)[backend]
	if !ok {
		return WriteCardsSummary(path, backend, cards, differ)
	}
	o, n := parseSection(prev), parseSection(backendSection(backend, cards, differ))
	measured := map[string]bool{}
	for _, c := range cards {
		measured[summaryCell(c.Lock)] = true
	}
	var kept []string
	for _, d := range o.differ {
		if lock, _, _ := strings.Cut(d, " "); !measured[lock] {
			kept = append(kept, d)
		}
	}
	n.differ = append(kept, n.differ...)
	n.rows, n.blocks = mergeKeyed(o.rows, n.rows), mergeKeyed(o.blocks, n.blocks)
	var b strings.Builder
	b.WriteString(n.head)
	for _, r := range n.rows {
		b.WriteString(r.text)
	}
	b.WriteString("\n### Against the promise table\n\n")
	if len(n.differ) == 0 {
		b.WriteString("Every outcome as the promise table says.\n")
	}
	for _, d := range n.differ {
		fmt.Fprintf(&b, "- %s\n", d)
	}
	b.WriteString("\n### What each lock did not hold\n")
	for _, k := range n.blocks {
		b.WriteString(k.text)
	}
	fmt.Fprintf(&b, "<!-- /cards:%s -->\n", backend)
	sec := summarySections(old)
	sec[backend] = b.String()
	return writeSummaryPage(path, sec)
}

// keyed is a part of a backend section that belongs to one lock: its
// table row or its findings.
type keyed struct{ lock, text string }

// section is a backend section taken apart: everything up to the table's
// rows, the rows, the differences (without their "- ") and the findings.
type section struct {
	head   string
	rows   []keyed
	differ []string
	blocks []keyed
}

// parseSection takes apart a section backendSection wrote.
func parseSection(s string) section {
	var out section
	lines := strings.SplitAfter(s, "\n")
	part := "head"
	for _, l := range lines {
		t := strings.TrimSuffix(l, "\n")
		switch {
		case t == "### Against the promise table":
			part = "differ"
			continue
		case t == "### What each lock did not hold":
			part = "blocks"
			continue
		case strings.HasPrefix(t, "<!-- /cards:"):
			part = "end"
		}
		switch part {
		case "head":
			if strings.HasPrefix(t, "| ") && !strings.HasPrefix(t, "| lock |") {
				lock, _, _ := strings.Cut(strings.TrimPrefix(t, "| "), " | ")
				out.rows = append(out.rows, keyed{lock, l})
				continue
			}
			if len(out.rows) == 0 {
				out.head += l
			}
		case "differ":
			if d, ok := strings.CutPrefix(t, "- "); ok {
				out.differ = append(out.differ, d)
			}
		case "blocks":
			if lock, ok := strings.CutPrefix(t, "#### "); ok {
				out.blocks = append(out.blocks, keyed{lock: lock})
			}
			if n := len(out.blocks); n > 0 {
				out.blocks[n-1].text += l
			} else if t != "" {
				out.blocks = append(out.blocks, keyed{text: l})
			}
		}
	}
	// A block's text starts at its "####" line: give back the blank line
	// that separates it from the one before.
	for i := range out.blocks {
		if out.blocks[i].lock != "" {
			out.blocks[i].text = "\n" + strings.TrimRight(out.blocks[i].text, "\n") + "\n"
		}
	}
	return out
}

// mergeKeyed keeps old's order, each lock that next has replaced by
// next's, and appends next's other locks.
func mergeKeyed(old, next []keyed) []keyed {
	byLock := map[string]keyed{}
	for _, k := range next {
		byLock[k.lock] = k
	}
	var out []keyed
	done := map[string]bool{}
	for _, k := range old {
		if n, ok := byLock[k.lock]; ok {
			out, done[k.lock] = append(out, n), true
		} else {
			out = append(out, k)
		}
	}
	for _, k := range next {
		if !done[k.lock] {
			out = append(out, k)
		}
	}
	return out
}
