package plots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/pages"
)

func TestWriteCardWritesEveryFile(t *testing.T) {
	dir := t.TempDir()
	c := &card.Card{Lock: "single", Needs: "single", Backend: "process", RunID: "r1", Duration: 90 * time.Second, Rows: []card.Row{
		{Property: "exclusion/no-faults", Explanation: "with no faults at all, no two clients ever hold the lock at once", Outcome: card.Held},
		{Property: "failover/manual", Explanation: "a promoted replica does not grant a held lock again", Outcome: card.Violated,
			Observed: []string{"overlap", "corruption"}, BadCycles: 4, Cycles: 5,
			Finding: "Two holders at once: both clients held valid leases at the same time. c1 and c3 overlapped for 1.2s.", Report: "failover/x/report.md"},
		{Property: "fencing/monotonic", Explanation: "fencing tokens strictly increase", Outcome: card.NotClaimed, Finding: "single does not claim fencing"},
		{Property: "clock/jump", Outcome: card.HarnessError, Finding: "start cluster: no redis-server"},
	}}
	if err := pages.WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pages.FileSuiteMarkdown, pages.FileSuiteHTML, pages.FileSuiteJSON, pages.FileSuitePNG, pages.FileJUnit} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, pages.FileSuiteMarkdown))
	for _, w := range []string{"Report card: single", "1 held, 1 violated, 1 not claimed, 1 harness error", "❌ violated", "4/5",
		"[report](failover/x/report.md)", "single does not claim fencing"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("suite.md lacks %q", w)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, pages.FileSuiteHTML))
	if !strings.Contains(string(html), "data:image/png;base64,") {
		t.Error("suite.html does not embed the picture")
	}
	if os.Getenv("LOCKFAULT_KEEP") != "" {
		t.Log(dir)
		data, _ := os.ReadFile(filepath.Join(dir, pages.FileSuitePNG))
		os.WriteFile(os.Getenv("LOCKFAULT_KEEP"), data, 0o644)
	}
}

func TestWriteCardsTable(t *testing.T) {
	dir := t.TempDir()
	a := &card.Card{Lock: "single", Backend: "process", Rows: []card.Row{
		{Property: "exclusion/no-faults", Outcome: card.Held},
		{Property: "stale/write-fenced", Outcome: card.NotClaimed, Finding: "single does not claim fencing"}}}
	b := &card.Card{Lock: "get-set", Backend: "process", Rows: []card.Row{
		{Property: "exclusion/no-faults", Outcome: card.Violated, Observed: []string{"overlap"}, BadCycles: 3, Cycles: 3, Report: "x/r1/report.md"},
		{Property: "stale/write-fenced", Outcome: card.NotClaimed}}}
	md := filepath.Join(dir, "cards.md")
	png := filepath.Join(dir, "cards.png")
	exp := map[[2]string]card.Outcome{{"single", "exclusion/no-faults"}: card.Violated, {"get-set", "exclusion/no-faults"}: card.Violated}
	err := pages.WriteCardsTable(md, png, []*card.Card{a, b}, []string{filepath.Join(dir, "suite", "single", "r"), filepath.Join(dir, "suite", "get-set", "r")}, exp)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(md)
	for _, w := range []string{"| property | single | get-set |", "| `exclusion/no-faults` | ✅ held **≠ expected violated** | **❌ violated** overlap 3/3 [report](suite/get-set/r/x/r1/report.md) (as expected) |",
		"1 outcomes differ from the promise table", "**single** × `exclusion/no-faults`: expected violated, got held",
		"| `stale/write-fenced` | — not claimed | — not claimed |", "[card](suite/single/r/suite.md)"} {
		if !strings.Contains(string(data), w) {
			t.Errorf("cards.md lacks %q:\n%s", w, data)
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("cards.png: %v", err)
	}
}
