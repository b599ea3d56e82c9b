package campaign

import (
	"strings"
	"testing"
)

// The page says whose code each subject's runs ran: a library's declared
// version, lockfault's own algorithm for a built-in lock that declares
// none, and "not declared" only for a worker that did not say.
func TestMarkdownSaysWhoseCodeRan(t *testing.T) {
	cell := func(s CellSubject) Cell {
		return Cell{Key: s.Key + " × property:p", Subject: s, Item: RunItem{Kind: KindProperty, Name: "p"}, Verdict: NoRuns}
	}
	r := &Report{Campaign: "c", Version: "lockfault test",
		Subjects: []string{"lock=own", "lock=lib", "worker=w"},
		Cells: []Cell{
			cell(CellSubject{Key: "lock=own", Label: "own", Lock: "own"}),
			cell(CellSubject{Key: "lock=lib", Label: "lib", Lock: "lib", LibraryVersion: "example.com/lib v1.2.3"}),
			cell(CellSubject{Key: "worker=w", Label: "w", Worker: "./w"}),
		}}
	page := r.markdown(false)
	for _, want := range []string{
		"- `lock=own`: lockfault's own algorithm (no library",
		"- `lock=lib`: library version example.com/lib v1.2.3\n",
		"- `worker=w`: library version not declared\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page[strings.Index(page, "## Subjects"):])
		}
	}
}
