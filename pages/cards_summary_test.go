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

// A cards run with -add replaces the rows, differences and findings of the
// locks it measured and keeps every other lock's (and the other backend's
// section): the page is the one a run of all of them would have written.
func TestAddCardsSummaryKeepsTheOtherLocks(t *testing.T) {
	dir := t.TempDir()
	mk := func(lock, backend string, out card.Outcome, finding string) *card.Card {
		return &card.Card{Lock: lock, Backend: backend, Version: "v1", Rows: []card.Row{{Property: "exclusion/no-faults", Outcome: out, Finding: finding}}}
	}
	a, b := mk("a-lock", "process", card.Violated, "a overlaps"), mk("b-lock", "process", card.Violated, "b overlaps")
	b2, c := mk("b-lock", "process", card.Held, ""), mk("c-lock", "process", card.Violated, "c overlaps")
	d := mk("d-lock", "docker", card.Held, "")
	added, whole := filepath.Join(dir, "added.md"), filepath.Join(dir, "whole.md")
	for _, w := range []struct {
		path   string
		cards  []*card.Card
		differ []string
		add    bool
	}{
		{added, []*card.Card{d}, nil, false},
		{added, []*card.Card{a, b}, []string{"a-lock x: expected held", "b-lock x: expected held"}, false},
		{added, []*card.Card{b2, c}, []string{"c-lock x: expected held"}, true},
		{whole, []*card.Card{d}, nil, false},
		{whole, []*card.Card{a, b2, c}, []string{"a-lock x: expected held", "c-lock x: expected held"}, false},
	} {
		write := WriteCardsSummary
		if w.add {
			write = AddCardsSummary
		}
		if err := write(w.path, "auto", w.cards, w.differ); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(added)
	want, _ := os.ReadFile(whole)
	if string(got) != string(want) {
		t.Errorf("-add wrote\n%s\nwant\n%s", got, want)
	}
}
