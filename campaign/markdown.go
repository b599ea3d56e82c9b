package campaign

import (
	"fmt"
	"strings"
	"time"
)

// Markdown is campaign.md: the cards table with rates (one row per item,
// one column per subject), then the cells that differ with their first
// finding and reports, and how complete the merge is.
func (r *Report) Markdown() string { return r.markdown(true) }

// Summary is Markdown without links to the runs' reports: a page that can
// live apart from the results folder (make rates: docs/RATES.md).
func (r *Report) Summary() string { return r.markdown(false) }

func (r *Report) markdown(links bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Campaign %s\n\n", md(r.Campaign))
	fmt.Fprintf(&b, "Definition `%s`, %s; %s.", ShortHash(r.DefinitionHash), md(r.Version), r.CompletenessText())
	if !r.FirstFinished.IsZero() {
		fmt.Fprintf(&b, " Runs finished from %s to %s UTC; their wall times add up to %s.",
			r.FirstFinished.UTC().Format("2006-01-02 15:04"), r.LastFinished.UTC().Format("2006-01-02 15:04"), r.RunWall.Round(time.Minute))
	}
	if n, k := r.expectedRuns(); n > 0 {
		fmt.Fprintf(&b, " %d of the %d runs of claimed cells showed their cell's expected outcome.", k, n)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "%d cells: %d match, %d differ, %d not claimed, %d without a run. "+
		"A cell matches when the 95 %% Wilson lower bound of its expected outcome's rate is at least %.2f "+
		"(19 of 20 runs; no cell of fewer than %d runs can match); a hunt's cell, when every run of it held. ✅ matches, ❌ differs, — not claimed, ⚠️ no run.\n\n",
		len(r.Cells), r.Count(Matches), r.Count(Differs), r.Count(Unclaimed), r.Count(NoRuns), r.MatchLowerBound, MinRunsToMatch)
	b.WriteString("| item |")
	for _, k := range r.Subjects {
		fmt.Fprintf(&b, " %s |", md(r.subjectLabel(k)))
	}
	b.WriteString("\n|---|")
	for range r.Subjects {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, it := range r.Items {
		fmt.Fprintf(&b, "| `%s:%s` |", it.Kind, md(it.Name))
		for _, k := range r.Subjects {
			c, ok := r.Cell(k, string(it.Kind)+":"+it.Name)
			if !ok {
				b.WriteString("  |")
				continue
			}
			fmt.Fprintf(&b, " %s |", c.markdownCell(links))
		}
		b.WriteString("\n")
	}
	r.cellList(&b, "Cells that differ from their expectation", links, func(c Cell) bool {
		return c.Verdict == Differs || c.Verdict == NoRuns
	})
	r.cellList(&b, "Cells that match, with runs that did not show the expected outcome", links, func(c Cell) bool {
		return c.Verdict == Matches && c.Rate.K < c.Rate.N
	})
	b.WriteString("\n## Subjects\n\n")
	for _, k := range r.Subjects {
		fmt.Fprintf(&b, "- `%s`: %s\n", md(k), r.subjectCode(k))
	}
	return b.String()
}

// cellList writes a section listing the cells that pick selects (none:
// no section), each with its rates, first finding and reports.
func (r *Report) cellList(b *strings.Builder, title string, links bool, pick func(Cell) bool) {
	first := true
	for _, c := range r.Cells {
		if !pick(c) {
			continue
		}
		if first {
			fmt.Fprintf(b, "\n## %s\n\n", title)
			first = false
		}
		fmt.Fprintf(b, "- **%s** × `%s:%s`: %s", md(c.Subject.Label), c.Item.Kind, md(c.Item.Name), md(c.Summary()))
		if c.Verdict == NoRuns {
			fmt.Fprintf(b, " (no run finished of %d planned)", c.Planned)
		}
		if c.Finding != "" {
			fmt.Fprintf(b, ". First finding: %s", md(c.Finding))
		}
		for i, p := range c.Reports {
			if links {
				fmt.Fprintf(b, " [report %d](%s)", i+1, mdLink(p))
			}
		}
		b.WriteString("\n")
	}
}

// expectedRuns counts the runs of cells with an expected outcome other
// than not-claimed, and how many of them showed it.
func (r *Report) expectedRuns() (n, k int) {
	for _, c := range r.Cells {
		if c.Expect.Outcome == NotClaimed || c.Verdict == Unclaimed {
			continue
		}
		n += c.Rate.N
		k += c.Rate.K
	}
	return n, k
}

// subjectCode says whose code a subject's runs ran: the library version
// its runs declared; a built-in lock that declares none is one of
// lockfault's own algorithms (a library's always declares one); a worker
// that declared none is said to.
func (r *Report) subjectCode(key string) string {
	builtin := false
	for _, c := range r.Cells {
		if c.Subject.Key != key {
			continue
		}
		if c.Subject.LibraryVersion != "" {
			return "library version " + md(c.Subject.LibraryVersion)
		}
		builtin = c.Subject.Worker == ""
	}
	if builtin {
		return "lockfault's own algorithm (no library: its code is this lockfault version's)"
	}
	return "library version not declared"
}

func (c *Cell) markdownCell(links bool) string {
	mark := map[Verdict]string{Matches: "✅", Differs: "❌", Unclaimed: "—", NoRuns: "⚠️"}[c.Verdict]
	if c.Verdict == NoRuns {
		return mark + " no run"
	}
	if c.Verdict == Unclaimed {
		return mark + " not claimed"
	}
	s := fmt.Sprintf("%s %s %d/%d (%s–%s %%)", mark, c.Rate.Outcome.Text(), c.Rate.K, c.Rate.N, pct(c.Rate.Low), pct(c.Rate.High))
	if c.Verdict == Matches && (c.Expect.Outcome == Violated || c.Expect.Outcome == NoMatch) {
		s = "**" + s + "**" // a known weakness shown as expected
	}
	for _, o := range c.Others() {
		s += fmt.Sprintf(" · %s %d/%d", o.Outcome.Text(), o.K, o.N)
	}
	if links && len(c.Reports) > 0 {
		s += fmt.Sprintf(" · [report](%s)", mdLink(c.Reports[0]))
	}
	return s
}

// md escapes text for a Markdown table cell: no pipe, no line break, no
// raw HTML.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;", "`", "'").Replace(s)
}

func mdLink(p string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(p)
}
