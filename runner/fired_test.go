package runner

import (
	"testing"

	"github.com/lockfault/lockfault/history"
)

// A crash failpoint leaves a "failpoint-fired" note naming the client, the
// failpoint and its action: the worker reports it before it kills itself.
func TestCrashFailpointIsRecordedAsFired(t *testing.T) {
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	sc, err := prepareNamed("setnx-crash", Overrides{Cycles: 1})
	if err != nil {
		t.Fatal(err)
	}
	out, evs := runPrepared(t, sc, opt)
	fired, crashed := map[string]bool{}, map[string]bool{}
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == "failpoint-fired" {
			if e.Detail != "after-setnx crash" || e.Process == "" {
				t.Errorf("fired note %+v, want detail %q and a process", e, "after-setnx crash")
			}
			fired[e.Process] = true
		}
		if e.Kind == history.Note && e.Op == "crashed" {
			crashed[e.Process] = true
		}
	}
	if len(fired) == 0 {
		t.Fatal("no failpoint-fired note in the history")
	}
	for p := range crashed {
		if !fired[p] {
			t.Errorf("client %s crashed without a failpoint-fired note", p)
		}
	}
	assertNoLeftovers(t, out.Meta.RunID)
}
