package pages

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockfault/lockfault/report"
)

// ClaimRow is one run in the claims catalogue: a claim tested by a scenario
// against a lock.
type ClaimRow struct {
	Claim, Scenario, Lock string
	Expect                []string
	Observed              []string
	Matched               bool
	Hits, Cycles          int    // cycles showing the expected class
	Rate                  string // extra measured rate text, e.g. "overlap in 3/10 cycles" or "success 40% vs 95%"
	Report                string // relative path to report.md
	Note                  string
}

// Matrix groups claim rows by claim (rows) and lock (columns), in the order
// they first appear.
type Matrix struct {
	Claims, Locks []string
	Cells         map[[2]string][]ClaimRow
}

func newMatrix(rows []ClaimRow) *Matrix {
	m := &Matrix{Cells: map[[2]string][]ClaimRow{}}
	seenC, seenL := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if !seenC[r.Claim] {
			seenC[r.Claim] = true
			m.Claims = append(m.Claims, r.Claim)
		}
		if !seenL[r.Lock] {
			seenL[r.Lock] = true
			m.Locks = append(m.Locks, r.Lock)
		}
		k := [2]string{r.Claim, r.Lock}
		m.Cells[k] = append(m.Cells[k], r)
	}
	return m
}

// matched says whether every run in a cell matched its expectation.
func CellMatched(rs []ClaimRow) bool {
	for _, r := range rs {
		if !r.Matched {
			return false
		}
	}
	return len(rs) > 0
}

// rateText is the measured rate of a row: its own text, or hits/cycles.
func (r ClaimRow) rateText() string {
	var parts []string
	if r.Cycles > 0 {
		parts = append(parts, fmt.Sprintf("%s in %d/%d cycles", report.ClassList(r.Expect), r.Hits, r.Cycles))
	}
	if r.Rate != "" {
		parts = append(parts, r.Rate)
	}
	return strings.Join(parts, ", ")
}

// WriteClaims writes claims.md, a matrix claim × lock of what was expected
// and observed with links to each run's report, and a PNG picture of the
// matrix (green where the observation matched the expectation, red where
// it did not).
func WriteClaims(mdPath, pngPath string, rows []ClaimRow) error {
	m := newMatrix(rows)
	if drawers.Claims == nil {
		pngPath = ""
	}
	if pngPath != "" {
		if err := os.MkdirAll(filepath.Dir(pngPath), 0o755); err != nil {
			return err
		}
		if err := drawers.Claims(pngPath, m); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(pngPath), err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(claimsDocument(mdPath, pngPath, m, rows).Markdown()), 0o644)
}

func claimsDocument(mdPath, pngPath string, m *Matrix, rows []ClaimRow) *report.Document {
	d := &report.Document{}
	d.H(1, "lockfault: claims")
	ok := 0
	for _, r := range rows {
		if r.Matched {
			ok++
		}
	}
	d.P(report.Txt(fmt.Sprintf("%d claims tested against %d locks in %d runs: %d behaved as the claim predicts, %d did not.",
		len(m.Claims), len(m.Locks), len(rows), ok, len(rows)-ok)))
	d.P(report.Txt("Each cell reads: expected → observed, how often the expected class showed over the fault cycles, and a link to the run's report. " +
		"A cell is marked ✅ when the lock behaved as expected and ❌ when it did not."))
	if pngPath != "" {
		rel, err := filepath.Rel(filepath.Dir(mdPath), pngPath)
		if err != nil {
			rel = pngPath
		}
		d.Img("claims matrix", filepath.ToSlash(rel))
	}

	d.H(2, "Matrix")
	t := report.Table{Header: append([]string{"claim"}, m.Locks...)}
	for _, c := range m.Claims {
		row := []report.Cell{report.Plain(c)}
		for _, l := range m.Locks {
			rs := m.Cells[[2]string{c, l}]
			if len(rs) == 0 {
				row = append(row, report.Plain("—"))
				continue
			}
			var spans []report.Inline
			for i, r := range rs {
				if i > 0 {
					spans = append(spans, report.Txt("; "))
				}
				mark := "✅ "
				if !r.Matched {
					mark = "❌ "
				}
				spans = append(spans, report.Txt(mark+report.ClassList(r.Expect)+" → "), report.Bold(report.ClassList(r.Observed)))
				if rt := r.rateText(); rt != "" {
					spans = append(spans, report.Txt(" ("+rt+")"))
				}
				if r.Report != "" {
					spans = append(spans, report.Txt(" "), report.Link("report", filepath.ToSlash(r.Report)))
				}
			}
			tone := -1
			if CellMatched(rs) {
				tone = 1
			}
			row = append(row, report.Cell{Spans: spans, Tone: tone})
		}
		t.Rows = append(t.Rows, row)
	}
	d.Tab(t)

	d.H(2, "Runs")
	t = report.Table{Header: []string{"claim", "scenario", "lock", "expected", "observed", "matched", "rate", "note", "report"}}
	for _, r := range rows {
		rep := report.Plain("—")
		if r.Report != "" {
			rep = report.Cell{Spans: []report.Inline{report.Link(filepath.ToSlash(r.Report), filepath.ToSlash(r.Report))}}
		}
		t.Rows = append(t.Rows, []report.Cell{
			report.Plain(r.Claim), report.Plain(r.Scenario), report.Plain(r.Lock), report.Plain(report.ClassList(r.Expect)), report.Plain(report.ClassList(r.Observed)),
			report.Toned(report.YesNo(r.Matched), r.Matched), report.Plain(report.OrDash(r.rateText())), report.Plain(report.OrDash(r.Note)), rep,
		})
	}
	d.Tab(t)
	return d
}
