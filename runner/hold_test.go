package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

// holdScenario holds a client's traffic at the taps with no fault step at
// all: an await: command followed by a sleep. The hold is in effect a pause
// of that client's traffic, so the history must record it as a fault
// window on that client, or a finding under it is taken for one with no
// fault around it (the hunt's "no fault" logic, the checker's faults
// beside each finding).
const holdScenario = `name: hold
topology: {kind: standalone}
lock: {name: single, ttl: 1s, wait: 3s}
workload: {clients: 2, hold: 100ms}
nemesis:
  cycles: 1
  warmup: 300ms
  steps:
    - await: command
      command: {op: acquire, at: AT}
      within: 10s
    - {sleep: 1500ms}
expect: [safe, overlap]
stuck_after: 5s
`

// holdWindows are the command-hold windows of a history, and whether each
// start has its end.
func holdWindows(t *testing.T, evs []history.Event) []checker.Window {
	t.Helper()
	var out []checker.Window
	for _, w := range checker.Faults(evs) {
		if w.Fault == history.FaultCommandHold {
			if w.End == 0 {
				t.Errorf("the hold on %s from %d never ended", w.Target, w.Start)
			}
			out = append(out, w)
		}
	}
	return out
}

func firedClients(evs []history.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == NoteCommandFired {
			out = append(out, e.Process)
		}
	}
	return out
}

func TestCommandHoldIsAFaultWindow(t *testing.T) {
	for _, at := range []string{"after-reply", "reply", "request"} {
		t.Run(at, func(t *testing.T) {
			out, evs := runInline(t, "hold-"+at, strings.Replace(holdScenario, "AT", at, 1))
			fired := firedClients(evs)
			if len(fired) != 1 {
				t.Fatalf("%d command-fired notes, want 1 (verdict %s)", len(fired), out.Result.Verdict)
			}
			ws := holdWindows(t, evs)
			if len(ws) != 1 {
				t.Fatalf("%d command-hold windows, want 1: %+v", len(ws), ws)
			}
			w := ws[0]
			if w.Target != fired[0] {
				t.Errorf("the hold is on %q, want the client whose command fired (%s)", w.Target, fired[0])
			}
			// The hold lasts at least the step after the await (a sleep of
			// 1.5 s): a lower bound the run guarantees, not a timing.
			if d := time.Duration(w.End - w.Start); d < 1500*time.Millisecond {
				t.Errorf("the hold lasted %v, want at least the 1.5 s sleep after the await", d)
			}
			found := false
			for _, rw := range out.Result.Faults {
				found = found || rw.Fault == history.FaultCommandHold
			}
			if !found {
				t.Errorf("the checker's fault windows do not list the hold: %+v", out.Result.Faults)
			}
		})
	}
}

// Two await: command steps around one lasting fault: each holds its own
// message. The second's trigger is armed before the fault is injected; the
// fault step lets go the first's reply, not the second's trigger (one slot
// for both disarmed the second, which then never fired, and held the
// first's reply for its whole hold limit).
func TestTwoCommandAwaitsAroundOneFault(t *testing.T) {
	src := `name: two-awaits
topology: {kind: standalone}
lock: {name: single, ttl: 2s, wait: 3s}
workload: {clients: 2, hold: 100ms}
nemesis:
  cycles: 1
  warmup: 300ms
  steps:
    - await: command
      command: {op: acquire, at: reply}
      within: 10s
    - {fault: latency, target: n1, params: {latency: 1ms}}
    - await: command
      command: {op: release, at: reply}
      within: 10s
    - {sleep: 10ms}
    - {heal: all}
expect: [safe]
stuck_after: 5s
`
	sc, err := scenarios.Parse("two-awaits.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, evs := runPrepared(t, plan(t, sc, nil, Overrides{}), Options{Backend: "process", ReportsDir: t.TempDir()})
	if fired := firedClients(evs); len(fired) != 2 {
		t.Errorf("%d command-fired notes, want 2 (one per await)", len(fired))
	}
	for _, f := range out.Result.Findings {
		if f.Class == checker.ClassNotExercised {
			t.Errorf("not exercised: %s", f.Detail)
		}
	}
	ws := holdWindows(t, evs)
	if len(ws) != 2 {
		t.Fatalf("%d command-hold windows, want 2 (the acquire's reply, the release's reply): %+v", len(ws), ws)
	}
	// The first hold ends when the fault after it is applied (inside the
	// latency's window), not at its hold limit, after the heal. (The second
	// await's trigger is armed before the fault is injected, so its command
	// may fire before the first is let go: no order between the two.)
	var lat checker.Window
	for _, w := range checker.Faults(evs) {
		if w.Fault == "latency" {
			lat = w
		}
	}
	if first := ws[0]; lat.End == 0 || first.End < lat.Start || first.End > lat.End {
		t.Errorf("the first await's reply was held from %d to %d, want it let go inside the latency's window %d to %d", first.Start, first.End, lat.Start, lat.End)
	}
	if !out.Meta.Matched {
		t.Errorf("verdict %s, observed %v", out.Result.Verdict, out.Result.Observed)
	}
}
