package pages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
)

// Without drawers (this test binary links no plots) a card has every file
// but its picture and does not name it; the cards table and the claims
// page name no picture either.
func TestPagesWithoutDrawersNameNoPicture(t *testing.T) {
	dir := t.TempDir()
	c := &card.Card{Lock: "single", Needs: "single", Backend: "process", RunID: "r1", Rows: []card.Row{
		{Property: "exclusion/no-faults", Outcome: card.Held},
		{Property: "failover/manual", Outcome: card.Violated, Observed: []string{"overlap"}, BadCycles: 1, Cycles: 2},
	}}
	if err := WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FileSuiteMarkdown, FileSuiteHTML, FileSuiteJSON, FileJUnit} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, FileSuitePNG)); err == nil {
		t.Errorf("%s written without a drawer", FileSuitePNG)
	}
	md, _ := os.ReadFile(filepath.Join(dir, FileSuiteMarkdown))
	if strings.Contains(string(md), FileSuitePNG) {
		t.Errorf("%s names %s, which was not drawn", FileSuiteMarkdown, FileSuitePNG)
	}

	table, png := filepath.Join(dir, "cards.md"), filepath.Join(dir, "cards.png")
	if err := WriteCardsTable(table, png, []*card.Card{c}, []string{dir}, nil); err != nil {
		t.Fatal(err)
	}
	claims, claimsPNG := filepath.Join(dir, "claims.md"), filepath.Join(dir, "claims.png")
	if err := WriteClaims(claims, claimsPNG, []ClaimRow{{Claim: "c", Scenario: "s", Lock: "l", Matched: true}}); err != nil {
		t.Fatal(err)
	}
	for page, pic := range map[string]string{table: png, claims: claimsPNG} {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), filepath.Base(pic)) {
			t.Errorf("%s names %s, which was not drawn", filepath.Base(page), filepath.Base(pic))
		}
		if _, err := os.Stat(pic); err == nil {
			t.Errorf("%s written without a drawer", filepath.Base(pic))
		}
	}
}
