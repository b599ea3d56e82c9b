package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

// A critical section still under way when the workload stops, whose worker
// never answers (a section timed on a clock stepped back by minutes does
// that), is given up after drainBound and recorded as info, not waited for
// until opTimeout (a minute longer). Checked by the error it records, not by
// a clock.
func TestDrainGivesUpOnAStuckOperation(t *testing.T) {
	cmd, dir := script(t, `echo $$ >> "$D/pids"
while read -r l; do
  op=$(echo "$l" | sed -n 's/.*"op":\([0-9]*\).*/\1/p')
  case "$l" in
  *'"init"'*) echo '{"type":"ready","pid":1,"lock":"mine","needs":"single"}' ;;
  *'"shutdown"'*) exit 0 ;;
  *'"cmd":"cs"'*) ;;
  *) echo '{"type":"reply","op":'$op',"status":"ok"}' ;;
  esac
done`)
	sc, err := Load("standalone-control")
	if err != nil {
		t.Fatal(err)
	}
	sc.Workload.Clients = 1
	sc.Lock.TTL, sc.Lock.Wait, sc.Workload.Hold = scenarios.Duration(500e6), 0, scenarios.Duration(100e6)
	sc.Workload.Quiesce = ""
	sc.StuckAfter = 0
	sc.Nemesis.Steps = []scenarios.Step{{Sleep: scenarios.Duration(100e6)}}
	subj, err := External(context.Background(), cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	p := plan(t, sc, &subj, Overrides{Cycles: 1})
	out, err := Run(context.Background(), p, Options{Backend: "process", ReportsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bound := drainBound(p.Scenario).String()
	var given int
	for _, e := range evs {
		if e.Op == "cs" && e.Kind == history.Info {
			if !strings.Contains(e.Error, "no reply within "+bound+" of the workload's end") {
				t.Errorf("the section was given up with %q, want the drain's bound (%s)", e.Error, bound)
			}
			given++
		}
	}
	if given != 1 {
		t.Errorf("%d critical sections given up, want 1", given)
	}
	assertNoLeftovers(t, out.Meta.RunID)
	goneAll(t, filepath.Join(dir, "pids"))
}
