package card

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// refusalRE: a refusal names the file (and the line, for a bad line).
var refusalRE = regexp.MustCompile(`^(baseline: )?[^:]*b\.txt(:[0-9]+)?: `)

// FuzzReadBaseline: the baseline reader never panics; every refusal names
// the file; whatever it accepts holds only known properties with a
// baseline outcome, and written back with FormatBaseline reads back the
// same. Seeds: testdata/fuzz/FuzzReadBaseline (a written baseline, and one
// per kind of bad line).
func FuzzReadBaseline(f *testing.F) {
	f.Add([]byte("# lockfault suite baseline: lock single\nliveness/crash held\nfailover/manual violated\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "b.txt")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadBaseline(p, known)
		if err != nil {
			if !refusalRE.MatchString(err.Error()) {
				t.Fatalf("a refusal without the file: %v", err)
			}
			return
		}
		if len(b.Outcomes) == 0 {
			t.Fatal("accepted a baseline without a property")
		}
		c := &Card{Lock: "x"}
		for prop, out := range b.Outcomes {
			if !known(prop) || !slices.Contains(baselineOutcomes, out) {
				t.Fatalf("accepted %q %q", prop, out)
			}
			c.Rows = append(c.Rows, Row{Property: prop, Outcome: out})
		}
		text, err := FormatBaseline(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseBaseline("again.txt", text, known)
		if err != nil || len(again.Outcomes) != len(b.Outcomes) {
			t.Fatalf("written back, it does not read the same: %v\n%s", err, text)
		}
		for prop, out := range b.Outcomes {
			if again.Outcomes[prop] != out {
				t.Fatalf("%s: %s, then %s", prop, out, again.Outcomes[prop])
			}
		}
	})
}
