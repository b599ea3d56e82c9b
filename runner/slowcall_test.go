package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/procwatch"
)

// A call without a reply for long is noted with the worker's state: the
// holder paused by the nemesis shows as stopped, the client waiting for
// the lock meanwhile as not stopped (a stuck finding can then tell a
// blocked lock from a worker the harness left stopped).
func TestSlowCallNotesTheWorkersState(t *testing.T) {
	defer func(d time.Duration) { slowCallAfter = d }(slowCallAfter)
	slowCallAfter = 400 * time.Millisecond
	src := `
name: slow-call
topology: {kind: standalone}
lock: {name: single, ttl: 3s, wait: 3s}
workload: {clients: 2, hold: 300ms}
nemesis:
  cycles: 1
  steps:
    - {await: grant}
    - {fault: pause-client, target: holder, for: 1500ms}
expect: [safe]
`
	_, evs := runInline(t, "slow-call", src)
	// The holder the pause stopped: the last client granted before it.
	var paused string
	for _, e := range evs {
		if e.Kind == history.OK && e.Op == history.OpAcquire {
			paused = e.Process
		}
		if e.Kind == history.FaultStart && e.Fault == "pause-client" {
			break
		}
	}
	if paused == "" {
		t.Fatal("the pause never started")
	}
	stopped, other := 0, 0
	for _, e := range evs {
		if e.Kind != history.Note || e.Op != history.NoteSlowCall {
			continue
		}
		t.Logf("%s: %s", e.Process, e.Detail)
		if !strings.Contains(e.Detail, "without a reply for") || !strings.Contains(e.Detail, "threads:") {
			t.Errorf("note %q names no duration or threads", e.Detail)
		}
		switch {
		case e.Process == paused && strings.Contains(e.Detail, " stopped"):
			stopped++
		case e.Process != paused && !strings.Contains(e.Detail, "stopped"):
			other++
		}
	}
	if stopped == 0 {
		t.Errorf("no slow-call note shows the paused %s stopped", paused)
	}
	if other == 0 {
		t.Errorf("no slow-call note of the waiting client shows it not stopped")
	}
}

func TestDescribeThreads(t *testing.T) {
	got := describeThreads([]procwatch.Thread{{State: 'S', Wait: "futex_wait_queue"}, {State: 'S', Wait: "pipe_write"}, {State: 'S', Wait: "futex_wait_queue"}, {State: 'S', Wait: ""},
		{State: 'T', Wait: "do_signal_stop"}, {State: 'X', Wait: ""}})
	if want := "6 threads: 4 sleeping (futex_wait_queue 2, pipe_write 1), 1 stopped (do_signal_stop 1), 1 state X"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := describeThreads(nil); !strings.Contains(got, "gone") {
		t.Errorf("no threads: %q", got)
	}
}

// The path probe notes a stall of the path to a node: a pause of the node
// holds its PING for the pause's length. The note is there, on that node,
// covering the pause; the checker does not count it as the harness's stall,
// because a fault was on.
func TestPathProbeNotesAStalledPath(t *testing.T) {
	src := `
name: path-probe
topology: {kind: standalone}
lock: {name: single, ttl: 2s, wait: 3s}
workload: {clients: 2, hold: 100ms}
stuck_after: 20s
nemesis:
  cycles: 1
  steps:
    - {await: grant}
    - {fault: pause-node, target: primary, for: 800ms}
    - {sleep: 500ms}
expect: [safe]
allow: [unavailable]
`
	out, evs := runInline(t, "path-probe", src)
	var start, end int64
	for _, e := range evs {
		switch {
		case e.Kind == history.FaultStart && e.Fault == "pause-node":
			start = e.Time
		case e.Kind == history.FaultEnd && e.Fault == "pause-node":
			end = e.Time
		}
	}
	if start == 0 || end == 0 {
		t.Fatal("the pause never ran")
	}
	var covered bool
	for _, e := range evs {
		if e.Kind != history.Note || e.Op != history.NotePathSlow {
			continue
		}
		t.Logf("%s (%d ms, ending %v after the pause began)", e.Detail, e.DurationMs, time.Duration(e.Time-start))
		from := e.Time - e.DurationMs*int64(time.Millisecond)
		if e.Target == "n1" && e.DurationMs >= 500 && from <= start+int64(300*time.Millisecond) && e.Time >= end-int64(300*time.Millisecond) {
			covered = true
		}
	}
	if !covered {
		t.Errorf("no path-slow note on n1 covers the pause (%v long)", time.Duration(end-start))
	}
	for _, s := range out.Result.Stalls {
		if s.Start < end && s.End > start {
			t.Errorf("stall %+v counted inside the pause [%d, %d]", s, start, end)
		}
	}
}
