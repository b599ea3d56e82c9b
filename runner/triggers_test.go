package runner

import (
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

// triggerScenario pauses the holder right after the reply to the first
// command of its release, past its TTL: a release that checks the key and
// deletes it in two commands (get-del-release) then deletes the next
// holder's key; a release in one script (single) is immune.
const triggerScenario = `name: trigger
topology: {kind: standalone}
lock: {name: LOCK, ttl: 2s, wait: 3s}
workload: {clients: 3, hold: 1500ms}
nemesis:
  cycles: 2
  warmup: 300ms
  steps:
    - quiesce
    - resume
    - {await: grant}
    - await: command
      command: {op: release, at: after-reply}
      within: 10s
    - {fault: pause-client, target: trigger, for: 1250ms}
    - {sleep: 4s}
expect: [safe]
stuck_after: 4s
`

// A command-level trigger attacks a step inside a lock that declares no
// failpoint: the broken release is caught, the atomic one holds, and the
// history says which command fired.
func TestCommandTriggerPausesInsideTheRelease(t *testing.T) {
	for _, c := range []struct {
		lock string
		safe bool
	}{{"get-del-release", false}, {"single", true}} {
		t.Run(c.lock, func(t *testing.T) {
			out, evs := runInline(t, "trigger-"+c.lock, strings.Replace(triggerScenario, "LOCK", c.lock, 1))
			fired := 0
			for _, e := range evs {
				if e.Kind == history.Note && e.Op == NoteCommandFired {
					fired++
					if !strings.Contains(e.Detail, "during release") {
						t.Errorf("fired on %q, want a command of the release", e.Detail)
					}
				}
			}
			if fired != 2 {
				t.Errorf("%d command-fired notes, want one per cycle (2)", fired)
			}
			overlap := out.Result.Verdict == checker.ClassOverlap
			if c.safe && out.Result.Verdict != checker.ClassSafe {
				t.Errorf("%s: verdict %s, want safe (its release is one script)", c.lock, out.Result.Verdict)
			}
			if !c.safe && !overlap {
				t.Errorf("%s: verdict %s, want overlap (the key changes hands between its GET and its DEL)", c.lock, out.Result.Verdict)
			}
		})
	}
}

// A trigger on a command the lock never sends is the finding not-exercised,
// never safe.
func TestCommandTriggerThatNeverFiresIsNotExercised(t *testing.T) {
	src := strings.Replace(triggerScenario, "LOCK", "single", 1)
	src = strings.Replace(src, "{op: release, at: after-reply}", "{name: HINCRBY}", 1)
	src = strings.Replace(src, "within: 10s", "within: 2s", 1)
	sc, err := scenarios.Parse("never.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sc.Nemesis.Cycles = 1
	out, _ := runPrepared(t, plan(t, sc, nil, Overrides{}), Options{Backend: "process", ReportsDir: t.TempDir()})
	if out.Result.Verdict == checker.ClassSafe || out.Meta.Matched {
		t.Fatalf("a trigger that never fired: verdict %s, matched %v", out.Result.Verdict, out.Meta.Matched)
	}
	found := false
	for _, c := range out.Result.Observed {
		found = found || c == checker.ClassNotExercised
	}
	if !found {
		t.Errorf("observed %v, want not-exercised", out.Result.Observed)
	}
}

// A command is attributed to the operation its client has in flight; a
// clone shares its client's taps (and identity), so while the clone and
// its original run different operations a command could be either's and
// is attributed to none (the hunt learned `EVALSHA op=acquire` and `SET
// op=release` from a clone's release and its original's acquire, and drew
// anchors on them that fire only by that accident).
func TestOpAttributionWithAClone(t *testing.T) {
	tp := newTaps()
	steps := []struct {
		proc, op, want string
	}{
		{"c1", "acquire", "acquire"},
		{"c1-clone", "acquire", "acquire"}, // both acquiring: still an acquire
		{"c1-clone", "release", ""},        // which one sent it?
		{"c1", "", "release"},              // only the clone is busy
		{"c1-clone", "", ""},
	}
	for i, s := range steps {
		tp.setOp("c1", s.proc, s.op)
		if got := tp.opOf("c1"); got != s.want {
			t.Fatalf("step %d (%s: %q): op %q, want %q", i, s.proc, s.op, got, s.want)
		}
	}
	if got := tp.opOf("c2"); got != "" {
		t.Fatalf("an idle client's op %q", got)
	}
}

// An await: command right after a fault that stays (one with a heal) still
// fires: its trigger, armed before the fault is injected, is not disarmed
// by the fault (the fault lets go only a message an await: command before
// it held).
func TestCommandTriggerAfterALastingFault(t *testing.T) {
	src := strings.Replace(triggerScenario, "LOCK", "single", 1)
	src = strings.Replace(src, "    - {await: grant}\n", "    - {await: grant}\n    - {fault: latency, target: n1, params: {latency: 1ms}}\n", 1)
	src = strings.Replace(src, "{fault: pause-client, target: trigger, for: 1250ms}", "{sleep: 10ms}", 1)
	src = strings.Replace(src, "{sleep: 4s}", "{heal: all}", 1)
	sc, err := scenarios.Parse("lasting.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sc.Nemesis.Cycles = 1
	out, evs := runPrepared(t, plan(t, sc, nil, Overrides{}), Options{Backend: "process", ReportsDir: t.TempDir()})
	fired := 0
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == NoteCommandFired {
			fired++
		}
	}
	if fired != 1 || !out.Meta.Matched {
		t.Fatalf("%d command-fired notes (want 1), verdict %s, observed %v", fired, out.Result.Verdict, out.Result.Observed)
	}
}
