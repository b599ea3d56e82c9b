package reports

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockfault/lockfault/card"
)

// WriteCardsSummary writes what a cards run measured as a page that links
// nothing (docs/CARDS.md): one row per lock with its exact version and its
// tally, then, per lock, each property it did not hold with the first
// finding's sentence.
func WriteCardsSummary(path, backend string, cards []*card.Card, differ []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Measured cards\n\nWritten by `make cards` (`simulate cards -summary`): every lock lockfault ships and every library worker in `examples/`, through the whole property suite, on the %s backend, %s. What each property promises: [PROPERTIES.md](PROPERTIES.md); what was expected of each lock: the promise table there.\n\n", backend, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("| lock | version | needs | held | violated | unknown | not claimed | harness error | wall time |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cards {
		v := c.Version
		if v == "" {
			v = "lockfault's own"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %d | %v |\n", summaryCell(c.Lock), summaryCell(v), c.Needs, c.Count(card.Held), c.Count(card.Violated),
			c.Count(card.Unknown), c.Count(card.NotClaimed), c.Count(card.HarnessError), c.Duration.Round(time.Second))
	}
	if len(differ) > 0 {
		b.WriteString("\n## Against the promise table\n\n")
		for _, d := range differ {
			fmt.Fprintf(&b, "- %s\n", summaryCell(d))
		}
	}
	b.WriteString("\n## What each lock did not hold\n")
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
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", summaryCell(c.Lock), strings.Join(lines, "\n"))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func summaryCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\\|`)
}
