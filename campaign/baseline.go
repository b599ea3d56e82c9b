package campaign

import (
	"fmt"
	"strings"

	"github.com/lockfault/lockfault/card"
)

// Card is one subject's property cells as a report card, so that a
// campaign can be gated by the baseline files `simulate suite
// -write-baseline` writes (card.Baseline, unchanged: a baseline records
// an outcome, and a campaign gives each cell one):
//
//   - violated when any run was violated (a violation seen once is real,
//     whatever the rate);
//   - held when held clears MatchLowerBound;
//   - not-claimed when every run was not claimed;
//   - harness-error otherwise (too few runs, or too many harness errors
//     or unknown histories, to say), which the gate reports as such.
//
// The row's Finding carries the rates. subject is a subject key or label.
func (r *Report) Card(subject string) (*card.Card, error) {
	var c *card.Card
	key := ""
	for _, cell := range r.Cells {
		if cell.Subject.Key != subject && cell.Subject.Label != subject {
			continue
		}
		if c == nil {
			c = &card.Card{Lock: cell.Subject.Label, Worker: cell.Subject.Worker, RunID: r.Campaign + "@" + ShortHash(r.DefinitionHash), Started: r.MergedAt}
			key = cell.Subject.Key
		} else if cell.Subject.Key != key {
			return nil, fmt.Errorf("subject %q names two subjects (%s and %s): give its key", subject, key, cell.Subject.Key)
		}
		if cell.Item.Kind != KindProperty {
			continue
		}
		row := card.Row{Property: cell.Item.Name, Observed: cell.Observed, Cycles: cell.Runs,
			Report: strings.Join(cell.Reports[:min(1, len(cell.Reports))], ""), Duration: cell.Wall}
		rates := []string{}
		for _, x := range cell.Counts {
			rates = append(rates, fmt.Sprintf("%s %d/%d", x.Outcome.Text(), x.N, cell.Runs))
		}
		held := NewRate(Held, cell.Count(Held), cell.Runs)
		switch {
		case cell.Count(Violated) > 0:
			row.Outcome, row.BadCycles = card.Violated, cell.Count(Violated)
		case cell.Runs > 0 && cell.Count(NotClaimed) == cell.Runs:
			row.Outcome = card.NotClaimed
		case held.Clears():
			row.Outcome = card.Held
		default:
			row.Outcome = card.HarnessError
			rates = append(rates, fmt.Sprintf("too few runs or too many failed runs to say (held must clear a 95 %% lower bound of %.2f)", MatchLowerBound))
		}
		row.Finding = strings.Join(rates, ", ")
		if cell.Finding != "" && row.Outcome != card.Held {
			row.Finding += ": " + cell.Finding
		}
		c.Rows = append(c.Rows, row)
	}
	if c == nil {
		return nil, fmt.Errorf("no subject %q in campaign %s (subjects: %s)", subject, r.Campaign, strings.Join(r.Subjects, ", "))
	}
	c.Sort()
	return c, nil
}
