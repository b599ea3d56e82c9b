package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/runner"
)

// Exit codes of a suite or cards run.
const (
	ExitOK      = 0 // every outcome as expected
	ExitDiffers = 1 // a property failed, or differs from the promise table or the baseline
	ExitHarness = 2 // a run failed (or was interrupted): nothing is known about it
)

// Gate decides a card's exit code and says why, line by line: against a
// baseline when one is given (a regression gate); else, for a lock
// lockfault ships, against the promise table (its known weaknesses are
// expected violations); else every applicable property must hold. A
// harness error is always ExitHarness.
func Gate(c *card.Card, subj runner.Subject, base *card.Baseline, baselinePath string) (code int, text string) {
	var b strings.Builder
	if base != nil {
		d := base.Compare(c)
		b.WriteString(d.Text(baselinePath))
		code = d.Exit()
	} else if subj.Shipped {
		n := 0
		for _, d := range Compare(subj, c) {
			if d.Expected != d.Got.Outcome {
				n++
				fmt.Fprintf(&b, "DIFFERS from the promise table: %s expected %s, got %s\n", d.Property, d.Expected, d.Got.Outcome.Text())
			} else if d.Got.Outcome == card.Violated {
				fmt.Fprintf(&b, "violated as the promise table expects: %s (%s)\n", d.Property, d.Why)
			}
		}
		if n == 0 {
			fmt.Fprintf(&b, "every outcome is the one the promise table expects for %s\n", c.Lock)
		} else {
			code = ExitDiffers
		}
	} else if c.Count(card.Violated) > 0 {
		code = ExitDiffers
	}
	if base == nil {
		for _, r := range c.Rows {
			if IsExtra(r.Property) && r.Outcome != card.Held {
				fmt.Fprintf(&b, "saved scenario %s: %s\n", r.Property, r.Summary())
				code = max(code, ExitDiffers)
			}
		}
	}
	if c.Count(card.HarnessError) > 0 {
		code = ExitHarness
	}
	return code, b.String()
}

// Diff is one row of a card beside the promise table's entry for it.
type Diff struct {
	Property string
	Expected card.Outcome
	Why      string // the table's reason for a violation or a property not claimed
	Got      card.Row
}

// Compare puts every row of a shipped lock's card beside the promise
// table's entry.
func Compare(subj runner.Subject, c *card.Card) []Diff {
	var out []Diff
	for _, r := range c.Rows {
		p, ok := Lookup(r.Property)
		if !ok {
			continue
		}
		exp, why := Promise(subj, p)
		out = append(out, Diff{Property: r.Property, Expected: exp, Why: why, Got: r})
	}
	return out
}

// CardsResult is what Cards produced.
type CardsResult struct {
	Cards []*card.Card
	Dirs  []string // each card's folder
	// Expected is the promise table's outcome of every shipped lock's cell.
	Expected map[[2]string]card.Outcome
	// Differ lists the cells of shipped locks that differ from the table,
	// as "lock property: expected X, got Y".
	Differ []string
	// Harness: some property's run failed, or the cards were interrupted.
	Harness bool
}

// Cards runs the suite against several subjects, one after the other, and
// writes each card plus the lock × property table (md, and a PNG beside
// it). progress gets each property's row as it finishes.
func Cards(ctx context.Context, subjects []runner.Subject, opt Options, tablePath string, progress func(subj runner.Subject, done, total int, r card.Row)) (*CardsResult, error) {
	res := &CardsResult{Expected: map[[2]string]card.Outcome{}}
	for _, subj := range subjects {
		if ctx.Err() != nil {
			res.Harness = true
			break
		}
		o := opt
		o.Extra = ExtraFor(opt.Extra, subj) // a regression runs on its own lock's card
		c, dir, err := Run(ctx, subj, o, func(done, total int, r card.Row) {
			if progress != nil {
				progress(subj, done, total, r)
			}
		})
		if err != nil {
			return res, fmt.Errorf("%s: %w", subj.Name(), err)
		}
		res.Harness = res.Harness || c.Count(card.HarnessError) > 0
		if subj.Shipped {
			for _, d := range Compare(subj, c) {
				res.Expected[[2]string{c.Lock, d.Property}] = d.Expected
				if d.Expected != d.Got.Outcome {
					res.Differ = append(res.Differ, fmt.Sprintf("%s %s: expected %s by the promise table, got %s", c.Lock, d.Property, d.Expected, d.Got.Summary()))
				}
			}
		}
		res.Cards, res.Dirs = append(res.Cards, c), append(res.Dirs, dir)
	}
	res.Harness = res.Harness || ctx.Err() != nil
	rel := make([]*card.Card, len(res.Cards))
	for i, c := range res.Cards {
		rel[i] = c.RelativeTo(res.Dirs[i])
	}
	png := strings.TrimSuffix(tablePath, filepath.Ext(tablePath)) + ".png"
	return res, pages.WriteCardsTable(tablePath, png, rel, res.Dirs, res.Expected)
}

// Exit is the cards run's exit code.
func (r *CardsResult) Exit() int {
	switch {
	case r.Harness:
		return ExitHarness
	case len(r.Differ) > 0:
		return ExitDiffers
	}
	return ExitOK
}
