package pages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
)

// A cards run on one backend replaces that backend's section of the page and
// keeps the other's.
func TestCardsSummaryKeepsTheOtherBackend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "CARDS.md")
	write := func(backend, lock string, out card.Outcome) string {
		t.Helper()
		c := &card.Card{Lock: lock, Backend: backend, Version: "v1.2.3", Rows: []card.Row{{Property: "exclusion/no-faults", Outcome: out, Finding: "two holders | at once"}}}
		if err := WriteCardsSummary(path, "auto", []*card.Card{c}, nil); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write("process", "first-lock", card.Held)
	write("docker", "docker-lock", card.Violated)
	page := write("process", "second-lock", card.Held)
	for _, want := range []string{"## docker backend", "docker-lock", "## process backend", "second-lock", `two holders \\| at once`, "Every outcome as the promise table says."} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "first-lock") {
		t.Errorf("the process section was not replaced:\n%s", page)
	}
	readme := filepath.Join(filepath.Dir(path), "README.md")
	if err := CheckCardsReadme(readme, path); err == nil {
		t.Error("a missing README was accepted")
	}
	os.WriteFile(readme, []byte("# x\n\nbefore\n\n"+readmeBegin+"old\n"+readmeEnd+"\n\nafter\n"), 0o644)
	if err := CheckCardsReadme(readme, ""); err == nil {
		t.Error("-readme without -summary was accepted")
	}
	if err := CheckCardsReadme(readme, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteCardsReadme(readme, path); err != nil {
		t.Fatal(err)
	}
	r, _ := os.ReadFile(readme)
	for _, want := range []string{"before\n\n" + readmeBegin + "**docker backend", "| docker-lock | v1.2.3 |", "**process backend", "| second-lock |", readmeEnd + "\n\nafter"} {
		if !strings.Contains(string(r), want) {
			t.Errorf("the README lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(string(r), "old") || strings.Contains(string(r), "two holders") {
		t.Errorf("the README's block holds more than the tallies:\n%s", r)
	}
	if strings.Count(page, "# Measured cards") != 1 || strings.Index(page, "## docker") > strings.Index(page, "## process") {
		t.Errorf("want one header, then docker, then process:\n%s", page)
	}
}
