package scenarios

import (
	"regexp"
	"testing"

	"github.com/lockfault/lockfault/internal/printable"
)

// whereRE: every refusal starts with file:line: (a variant's names the
// variant at the end).
var whereRE = regexp.MustCompile(`^fuzz\.yaml:[0-9]+: `)

// FuzzParse: the loader never panics; every refusal names the file; and
// whatever it accepts is within bounds (counts, durations, every fault's
// params, the run's length, the text of its names) and written back
// (scenario.yaml in a report folder) to a file that loads again. The seeds
// are the catalogue (added here) and testdata/fuzz/FuzzParse (bad inputs
// from issue 10; out-of-range fault params; names with control, format and
// bidirectional characters).
func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		data, err := builtin.ReadFile(n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !whereRE.MatchString(err.Error()) {
				t.Fatalf("error does not say file:line: %v", err)
			}
			return
		}
		if w := s.Workload.Clients; w < 1 || w > MaxClients {
			t.Fatalf("accepted clients %d", w)
		}
		if c := s.Nemesis.Cycles; c < 1 || c > MaxCycles {
			t.Fatalf("accepted cycles %d", c)
		}
		if d := s.ScheduledTime(); d > MaxRunTime {
			t.Fatalf("accepted a schedule of %v", d)
		}
		for i, st := range s.Nemesis.Steps {
			if st.Fault != "" {
				if err := faultRegistry().Check(st.Fault, st.Params); err != nil {
					t.Fatalf("step %d: accepted a fault the registry refuses: %v", i, err)
				}
			}
		}
		for _, name := range []string{s.Name, s.Claim, s.Lock.Name, s.Workload.Resource} {
			if what, _, bad := printable.Find(name, false); bad || len(name) > 4*MaxResourceLen {
				t.Fatalf("accepted the name %q (%s)", name, what)
			}
		}
		for _, v := range s.VariantNames() {
			vs, err := s.WithVariant(v)
			if err != nil {
				t.Fatalf("variant %q of an accepted scenario: %v", v, err)
			}
			out, err := vs.Marshal()
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if _, err := Parse("scenario.yaml", out); err != nil {
				t.Fatalf("the scenario as run does not load again: %v\n%s", err, out)
			}
		}
	})
}
