package runner

import (
	"testing"

	"github.com/lockfault/lockfault/checker"
)

// A client fault whose client is crashed (and restarted under its name)
// before the fault heals: the heal has nothing to undo on the dead process,
// and the run is judged, not a harness failure. A hunt drew exactly this
// (pause-client and crash-client on the holder, restart_crashed) and lost
// the schedule as inconclusive: "heal pause-client: worker c1 is dead".
func TestHealOfACrashedClientsFault(t *testing.T) {
	src := `
name: heal-after-crash
topology: {kind: standalone}
lock: {name: single, ttl: 1s, wait: 2s}
workload: {clients: 2, hold: 300ms, restart_crashed: 100ms}
nemesis:
  cycles: 2
  steps:
    - {await: grant}
    - {fault: pause-client, target: holder}
    - {fault: clock-client, target: holder, params: {by: -1s, every: 10ms}}
    - {fault: crash-client, target: holder}
    - {sleep: 500ms}
    - {heal: pause-client}
    - {heal: clock-client}
    - {sleep: 1500ms}
    - {heal: all}
expect: [safe]
`
	out, _ := runInline(t, "heal-after-crash", src)
	// The clock steps reach a paused holder that is then killed: no step
	// can be seen to take effect, so the run says so (not-exercised), and
	// nothing else.
	for _, c := range out.Result.Observed {
		if c != checker.ClassNotExercised {
			t.Fatalf("verdict %s (%s); want a judged run, safe but for the clock step that reached nobody", out.Result.Verdict, out.Summary)
		}
	}
}
