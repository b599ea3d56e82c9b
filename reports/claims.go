package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// matrix groups claim rows by claim (rows) and lock (columns), in the order
// they first appear.
type matrix struct {
	claims, locks []string
	cells         map[[2]string][]ClaimRow
}

func newMatrix(rows []ClaimRow) *matrix {
	m := &matrix{cells: map[[2]string][]ClaimRow{}}
	seenC, seenL := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if !seenC[r.Claim] {
			seenC[r.Claim] = true
			m.claims = append(m.claims, r.Claim)
		}
		if !seenL[r.Lock] {
			seenL[r.Lock] = true
			m.locks = append(m.locks, r.Lock)
		}
		k := [2]string{r.Claim, r.Lock}
		m.cells[k] = append(m.cells[k], r)
	}
	return m
}

// matched says whether every run in a cell matched its expectation.
func cellMatched(rs []ClaimRow) bool {
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
		parts = append(parts, fmt.Sprintf("%s in %d/%d cycles", classList(r.Expect), r.Hits, r.Cycles))
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
	if pngPath != "" {
		if err := os.MkdirAll(filepath.Dir(pngPath), 0o755); err != nil {
			return err
		}
		if err := writeClaimsPNG(pngPath, m); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(pngPath), err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(claimsDocument(mdPath, pngPath, m, rows).markdown()), 0o644)
}

func claimsDocument(mdPath, pngPath string, m *matrix, rows []ClaimRow) *document {
	d := &document{}
	d.h(1, "lockfault: claims")
	ok := 0
	for _, r := range rows {
		if r.Matched {
			ok++
		}
	}
	d.p(txt(fmt.Sprintf("%d claims tested against %d locks in %d runs: %d behaved as the claim predicts, %d did not.",
		len(m.claims), len(m.locks), len(rows), ok, len(rows)-ok)))
	d.p(txt("Each cell reads: expected → observed, how often the expected class showed over the fault cycles, and a link to the run's report. " +
		"A cell is marked ✅ when the lock behaved as expected and ❌ when it did not."))
	if pngPath != "" {
		rel, err := filepath.Rel(filepath.Dir(mdPath), pngPath)
		if err != nil {
			rel = pngPath
		}
		d.img("claims matrix", filepath.ToSlash(rel))
	}

	d.h(2, "Matrix")
	t := table{header: append([]string{"claim"}, m.locks...)}
	for _, c := range m.claims {
		row := []cell{plain(c)}
		for _, l := range m.locks {
			rs := m.cells[[2]string{c, l}]
			if len(rs) == 0 {
				row = append(row, plain("—"))
				continue
			}
			var spans []inline
			for i, r := range rs {
				if i > 0 {
					spans = append(spans, txt("; "))
				}
				mark := "✅ "
				if !r.Matched {
					mark = "❌ "
				}
				spans = append(spans, txt(mark+classList(r.Expect)+" → "), bold(classList(r.Observed)))
				if rt := r.rateText(); rt != "" {
					spans = append(spans, txt(" ("+rt+")"))
				}
				if r.Report != "" {
					spans = append(spans, txt(" "), link("report", filepath.ToSlash(r.Report)))
				}
			}
			tone := -1
			if cellMatched(rs) {
				tone = 1
			}
			row = append(row, cell{spans: spans, tone: tone})
		}
		t.rows = append(t.rows, row)
	}
	d.tab(t)

	d.h(2, "Runs")
	t = table{header: []string{"claim", "scenario", "lock", "expected", "observed", "matched", "rate", "note", "report"}}
	for _, r := range rows {
		rep := plain("—")
		if r.Report != "" {
			rep = cell{spans: []inline{link(filepath.ToSlash(r.Report), filepath.ToSlash(r.Report))}}
		}
		t.rows = append(t.rows, []cell{
			plain(r.Claim), plain(r.Scenario), plain(r.Lock), plain(classList(r.Expect)), plain(classList(r.Observed)),
			toned(yesNo(r.Matched), r.Matched), plain(orDash(r.rateText())), plain(orDash(r.Note)), rep,
		})
	}
	d.tab(t)
	return d
}
