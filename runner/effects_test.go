package runner

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/report"
	"github.com/lockfault/lockfault/worker"
)

// effectCase is one fault step whose effect is read back: the steps of one
// cycle, the fault whose effect is checked, and what the run must say.
type effectCase struct {
	name, fault, steps string
	// absent: the step attacked nothing (a no-effect or not-exercised note
	// names it, the run is unknown or not-exercised and does not match);
	// else its effect is seen and the verdict is as before (it matches).
	absent bool
	// topology overrides the standalone single-node default.
	topology string
	// allow: classes the present case tolerates (a kill that loses the key).
	allow string
	// lock and workload override "single" and 2 clients holding 100ms.
	lock, workload string
}

// Issue 31: every fault step records, at the step, whether it took effect.
// For each fault kind: a step whose effect is absent (a pause of a node
// already down, a partition of a link no client had open, a kill of a dead
// node, a promotion of the master itself, a node clock step on etcd)
// leaves its cycle without evidence and the run unknown, with the step
// named; the same step with its effect present keeps its verdict.
func TestFaultEffectsAreRecorded(t *testing.T) {
	cases := []effectCase{
		{name: "pause-client/present", fault: "pause-client", steps: `
    - {await: grant}
    - {fault: pause-client, target: holder, for: 300ms}
    - {sleep: 300ms}`},
		{name: "pause-client/absent", fault: "pause-client", absent: true, steps: `
    - {fault: crash-client, target: c2}
    - {sleep: 300ms}
    - {fault: pause-client, target: c2}   # c2 is dead and not restarted
    - {sleep: 300ms}`},
		{name: "pause-node/present", fault: "pause-node", steps: `
    - {await: grant}
    - {fault: pause-node, target: n1, for: 300ms}
    - {sleep: 500ms}`},
		{name: "pause-node/absent", fault: "pause-node", absent: true, steps: `
    - {await: grant}
    - {fault: kill, target: n1}           # down until the heal
    - {fault: pause-node, target: n1}     # nothing to stop
    - {sleep: 200ms}
    - {heal: all}
    - {sleep: 500ms}`},
		{name: "kill/present", fault: "kill", allow: "overlap, corruption, unavailable", steps: `
    - {await: grant}
    - {fault: kill, target: n1, params: {restart: 0s}}
    - {sleep: 700ms}`},
		// The AOF keeps the holder's key across the restart: no overlap
		// from the first kill hides the second one's lack of effect.
		{name: "kill/absent", fault: "kill", absent: true, topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: kill, target: n1}
    - {fault: kill, target: n1}           # already dead
    - {heal: all}
    - {sleep: 500ms}`},
		{name: "crash-client/present", fault: "crash-client", steps: `
    - {await: grant}
    - {fault: crash-client, target: others}   # not the holder: its section completes in the cycle
    - {sleep: 300ms}`},
		{name: "crash-client/absent", fault: "crash-client", absent: true, steps: `
    - {await: grant}
    - {fault: crash-client, target: c2}
    - {sleep: 300ms}
    - {fault: crash-client, target: c2}   # already dead
    - {sleep: 300ms}`},
		{name: "partition-client/present", fault: "partition-client", steps: `
    - {await: grant}
    - {fault: partition-client, target: n1, params: {clients: c1, mode: drop}, for: 300ms}
    - {sleep: 500ms}`},
		{name: "partition-client/absent", fault: "partition-client", absent: true, steps: `
    - {await: grant}
    - {fault: crash-client, target: c2}
    - {sleep: 300ms}
    - {fault: partition-client, target: n1, params: {clients: c2}, for: 300ms}   # c2's link: nobody uses it now
    - {sleep: 300ms}`},
		{name: "latency/present", fault: "latency", steps: `
    - {await: grant}
    - {fault: latency, target: n1, params: {latency: 20ms}, for: 300ms}
    - {sleep: 300ms}`},
		{name: "latency/absent", fault: "latency", absent: true, steps: `
    - {await: grant}
    - {fault: crash-client, target: c2}
    - {sleep: 300ms}
    - {fault: latency, target: n1, params: {clients: c2, latency: 20ms}, for: 300ms}
    - {sleep: 300ms}`},
		{name: "manual-unlock/present", fault: "manual-unlock", allow: "overlap, corruption", steps: `
    - {await: grant}
    - {fault: manual-unlock, target: n1}   # the holder's key
    - {sleep: 300ms}`},
		{name: "manual-unlock/absent", fault: "manual-unlock", absent: true, steps: `
    - {await: grant}
    - {fault: manual-unlock, target: n1, params: {key: "nobody:holds:this"}}
    - {sleep: 300ms}`},
		{name: "clock-jump/present", fault: "clock-jump", steps: `
    - {await: grant}
    - {fault: clock-jump, target: n1, params: {by: +500ms}, for: 300ms}
    - {sleep: 300ms}`},
		{name: "clock-jump/absent", fault: "clock-jump", absent: true, topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: kill, target: n1}
    - {fault: clock-jump, target: n1, params: {by: +500ms}}   # a node that is down answers no TIME
    - {heal: all}
    - {sleep: 500ms}`},
		{name: "clock-drift/present", fault: "clock-drift", steps: `
    - {await: grant}
    - {fault: clock-drift, target: n1, params: {rate: 200ms}, for: 500ms}
    - {sleep: 300ms}`},
		{name: "clock-drift/absent", fault: "clock-drift", absent: true, topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: kill, target: n1}
    - {fault: clock-drift, target: n1, params: {rate: 200ms}}   # a node that is down answers no TIME
    - {heal: all}
    - {sleep: 500ms}`},
		{name: "restart/absent", fault: "restart", absent: true, topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: kill, target: n1}
    - {fault: restart, target: n1}        # nothing to restart cleanly: it was down
    - {sleep: 500ms}`},
		{name: "promote/present", fault: "promote", topology: "kind: replicated, replicas: 1", allow: "overlap, corruption", steps: `
    - {await: grant}
    - {fault: promote, target: n2}        # the replica
    - {sleep: 500ms}`},
		{name: "sentinel-failover/present", fault: "sentinel-failover", topology: "kind: replicated, replicas: 1, sentinels: 3", allow: "overlap, corruption, unavailable", steps: `
    - {await: grant}
    - {fault: kill, target: primary}
    - {fault: sentinel-failover, params: {within: 20s}}
    - {sleep: 500ms}`},
		{name: "sentinel-failover/absent", fault: "sentinel-failover", absent: true, topology: "kind: replicated, replicas: 1, sentinels: 3", steps: `
    - {await: grant}
    - {fault: sentinel-failover, params: {within: 1s}}   # the master is fine: the Sentinels promote nothing
    - {sleep: 300ms}`},
		{name: "power-loss/present", fault: "power-loss", topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: power-loss, target: n1}     # restarts at once with what it had fsync'd: the key
    - {sleep: 500ms}`},
		{name: "power-loss/absent", fault: "power-loss", absent: true, topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: kill, target: n1}
    - {fault: power-loss, target: n1, params: {restart: never}}   # already down
    - {heal: all}
    - {sleep: 500ms}`},
		{name: "restart/present", fault: "restart", topology: "kind: standalone, persistence: aof-always", steps: `
    - {await: grant}
    - {fault: restart, target: n1}
    - {sleep: 500ms}`},
		{name: "clone-client/present", fault: "clone-client", steps: `
    - {await: grant}
    - {fault: clone-client, target: c2, for: 300ms}
    - {sleep: 300ms}`},
		{name: "promote/absent", fault: "promote", absent: true, topology: "kind: replicated, replicas: 1", steps: `
    - {await: grant}
    - {fault: promote, target: primary}   # already the master: nothing promoted
    - {sleep: 300ms}`},
		// One client: while it holds, "others" are nobody, and no clone
		// starts beside anyone.
		{name: "clone-client/absent", fault: "clone-client", absent: true, workload: "clients: 1, hold: 100ms", steps: `
    - {await: grant}
    - {fault: clone-client, target: others, for: 300ms}
    - {sleep: 300ms}`},
		{name: "partition-peer/present", fault: "partition-peer", topology: "kind: replicated, replicas: 1", steps: `
    - {await: grant}
    - {fault: partition-peer, target: n1, for: 300ms}   # n2 replicates from n1 through this link
    - {sleep: 300ms}`},
		{name: "partition-peer/absent", fault: "partition-peer", absent: true, topology: "kind: replicated, replicas: 1", steps: `
    - {await: grant}
    - {fault: partition-peer, target: n2, for: 300ms}   # nobody replicates from the replica
    - {sleep: 300ms}`},
		// A client clock step is proved by the wall time the worker's lock
		// reads right after it (a clock-seen note). This test binary is
		// every built-in lock's worker: built with the clock overlay (make
		// test) its time.Now moves and the step is seen; built without
		// it, the step does not reach time.Now and must be reported as
		// without effect. On a client that is dead it
		// attacks nothing either way.
		{name: "clock-client/present", fault: "clock-client", absent: !worker.ClockInProcess, steps: `
    - {await: grant}
    - {fault: clock-client, target: all, params: {by: -1s}, for: 300ms}
    - {sleep: 300ms}`},
		{name: "clock-client/absent", fault: "clock-client", absent: true, steps: `
    - {await: grant}
    - {fault: crash-client, target: c2}
    - {sleep: 300ms}
    - {fault: clock-client, target: c2, params: {by: -1s}}   # c2 is dead and not restarted
    - {sleep: 300ms}`},
		// A failpoint is proved by its firing (the worker's
		// failpoint-fired note); one the lock never reaches attacks
		// nothing.
		{name: "failpoint/present", fault: "failpoint", workload: "clients: 2, hold: 100ms, extends: 1, extend_every: 50ms", steps: `
    - {fault: failpoint, target: all, params: {name: after-extend, action: sleep, ms: "50", count: "1"}}
    - {await: grant}
    - {sleep: 500ms}`},
		{name: "failpoint/absent", fault: "failpoint", absent: true, steps: `
    - {fault: failpoint, target: c1, params: {name: after-setnx, action: crash}}   # single never hits after-setnx
    - {await: grant}
    - {sleep: 500ms}`},
	}
	for _, c := range cases {
		// LOCKFAULT_EFFECT_CASE=pause-node runs only the cases so named.
		if f := os.Getenv("LOCKFAULT_EFFECT_CASE"); f != "" && !strings.Contains(c.name, f) {
			continue
		}
		t.Run(c.name, func(t *testing.T) { runEffectCase(t, c) })
	}
}

func runEffectCase(t *testing.T, c effectCase) {
	topo := "kind: standalone"
	if c.topology != "" {
		topo = c.topology
	}
	allow := ""
	if c.allow != "" {
		allow = "allow: [" + c.allow + "]\n"
	}
	lock, wl := "single", "clients: 2, hold: 100ms"
	if c.lock != "" {
		lock = c.lock
	}
	if c.workload != "" {
		wl = c.workload
	}
	sc := parse(t, `name: effects
topology: {`+topo+`}
lock: {name: `+lock+`, ttl: 2s, wait: 2s}
workload: {`+wl+`}
nemesis:
  cycles: 1
  steps:`+c.steps+`
expect: [safe]
`+allow)
	backend := "process" // LOCKFAULT_BACKEND=docker runs the cases on containers
	if b := os.Getenv("LOCKFAULT_BACKEND"); b != "" {
		backend = b
	}
	opt := Options{Backend: cluster.BackendKind(backend), ReportsDir: t.TempDir()}
	out, err := Run(context.Background(), sc, opt)
	if err != nil {
		t.Fatalf("harness error: %v", err)
	}
	defer assertNoLeftovers(t, out.Meta.RunID)
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res := out.Result
	var seen, absent []history.Event
	for _, e := range evs {
		if e.Kind != history.Note {
			continue
		}
		switch {
		case e.Op == checker.NoteEffect && e.Fault == c.fault,
			// Proved by the worker: a client clock step's reading, a
			// failpoint's firing.
			c.fault == "clock-client" && e.Op == checker.NoteClockSeen,
			c.fault == "failpoint" && e.Op == checker.NoteFired:
			seen = append(seen, e)
		case e.Op == checker.NoteNoEffect && e.Fault == c.fault,
			c.fault == "clock-client" && e.Op == checker.NoteClockUnseen,
			e.Op == checker.NoteNotExercised && strings.Contains(e.Detail, "fault "+c.fault):
			absent = append(absent, e)
		}
	}
	t.Logf("observed %v; seen %v; absent %v; evidence %s; findings %v", res.Observed, details(seen), details(absent), res.Evidence.Text(), res.Findings)
	md, err := os.ReadFile(filepath.Join(out.Dir, report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !c.absent {
		if c.fault == "latency" || strings.HasPrefix(c.fault, "partition-") {
			checkDuring(t, c, evs, md)
		}
		if len(seen) == 0 || len(absent) > 0 {
			t.Fatalf("the %s step's effect: seen %v, absent %v; want it seen", c.fault, details(seen), details(absent))
		}
		if !out.Meta.Matched {
			t.Fatalf("observed %v, want the verdict as before (%s)", res.Observed, out.Meta.Why)
		}
		if !strings.Contains(string(md), "What each fault step was seen to do") {
			t.Errorf("report.md does not say what the step was seen to do")
		}
		return
	}
	if c.fault == "failpoint" {
		// A failpoint that never fired is found by the checker (no note
		// at the step: it is armed before the lock reaches it).
		for _, f := range res.Findings {
			if f.Class == checker.ClassNotExercised && strings.Contains(f.Detail, "never fired") {
				absent = append(absent, history.Event{Detail: f.Detail})
			}
		}
	}
	if len(absent) == 0 {
		t.Fatalf("the %s step attacked nothing but no note says so (seen: %v)", c.fault, details(seen))
	}
	proofless := slices.Contains(res.Observed, checker.ClassUnknown) || slices.Contains(res.Observed, checker.ClassNotExercised)
	if !proofless || out.Meta.Matched {
		t.Fatalf("observed %v (matched %v): want unknown or not-exercised, and no match", res.Observed, out.Meta.Matched)
	}
	named := false
	for _, f := range res.Findings {
		if (f.Class == checker.ClassUnknown || f.Class == checker.ClassNotExercised) && strings.Contains(f.Detail, c.fault) {
			named = true
		}
	}
	if !named {
		t.Errorf("no unknown or not-exercised finding names the %s step: %v", c.fault, res.Findings)
	}
	if res.Evidence.Shown == res.Evidence.Cycles {
		t.Errorf("evidence %q: the cycle whose step had no effect counted as with evidence", res.Evidence.Text())
	}
	if !strings.Contains(string(md), "NOT SEEN") && !strings.Contains(string(md), "NOT APPLIED") && !strings.Contains(string(md), "never fired") {
		t.Errorf("report.md does not say the step's effect was not seen")
	}
}

func details(evs []history.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Detail)
	}
	return out
}

// checkDuring: a link fault records at its heal what crossed its links (or
// was sent into them) while it lasted, and report.md shows it. Two clients
// acquiring every 100 ms send bytes through a link slowed for 300 ms.
func checkDuring(t *testing.T, c effectCase, evs []history.Event, md []byte) {
	t.Helper()
	var during []string
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == checker.NoteEffectDuring && e.Fault == c.fault {
			during = append(during, e.Detail)
		}
	}
	t.Logf("while it lasted: %v", during)
	if len(during) != 1 || !strings.Contains(during[0], "bytes sent into it") {
		t.Fatalf("the %s step's heal recorded %v, want one note of the bytes on its links", c.fault, during)
	}
	if c.fault == "latency" && !regexp.MustCompile(`: [1-9][0-9]* bytes sent into it`).MatchString(during[0]) {
		t.Errorf("latency held for 300 ms on links two busy clients use: %q, want bytes counted", during[0])
	}
	if !strings.Contains(string(md), "while it lasted") {
		t.Errorf("report.md does not show what crossed the links while the fault lasted")
	}
}
