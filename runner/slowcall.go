package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault/internal/procwatch"
)

// A call that goes long without a reply gets a note of what the worker was
// doing then: its threads' states (and, where /proc lets us read it, the
// kernel function each waits in), and whether the taps hold its commands.
// A stuck finding (a waiter not granted long after the lock was free) is
// then told apart from a worker the harness left stopped or gated, which
// would be a harness bug, not the lock's.

// slowCallAfter is how long a call goes without a reply before its first
// slow-call note (history.NoteSlowCall; another after each further
// slowCallAfter); far above any reply the harness expects of a live
// worker (its Redis calls time out after 500 ms). A var for tests.
var slowCallAfter = 10 * time.Second

// maxSlowNotes bounds the slow-call notes of one call.
const maxSlowNotes = 30

// threadStateNames spells the states of /proc/PID/task/*/stat.
var threadStateNames = map[byte]string{
	'R': "running", 'S': "sleeping", 'D': "in uninterruptible wait", 'T': "stopped",
	't': "stopped by a tracer", 'Z': "zombie", 'I': "idle",
}

// describeThreads: "7 threads: 6 sleeping (futex_wait_queue 5, ep_poll
// 1), 1 stopped (do_signal_stop 1)".
func describeThreads(ts []procwatch.Thread) string {
	if len(ts) == 0 {
		return "no threads (the process is gone)"
	}
	states := map[byte]int{}
	waits := map[byte]map[string]int{}
	for _, t := range ts {
		states[t.State]++
		if t.Wait != "" {
			if waits[t.State] == nil {
				waits[t.State] = map[string]int{}
			}
			waits[t.State][t.Wait]++
		}
	}
	parts := make([]string, 0, len(states))
	for _, k := range slices.Sorted(maps.Keys(states)) {
		name, ok := threadStateNames[k]
		if !ok {
			name = "state " + string(k)
		}
		part := fmt.Sprintf("%d %s", states[k], name)
		if w := waits[k]; len(w) > 0 {
			var in []string
			for _, fn := range slices.Sorted(maps.Keys(w)) {
				in = append(in, fmt.Sprintf("%s %d", fn, w[fn]))
			}
			part += " (" + strings.Join(in, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("%d threads: %s", len(ts), strings.Join(parts, ", "))
}

// describe says whether the taps hold client's commands and how many
// connections it has open through them.
func (t *taps) describe(client string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	conns := 0
	for key, tp := range t.taps {
		if strings.HasPrefix(key, tapKey(client, "")) {
			conns += tp.Conns()
		}
	}
	held := "not held"
	for _, aw := range append(slices.Clip(t.armed), t.opened...) {
		if aw.gate != nil && aw.gate.Client() == client {
			held = "held after a reply (await: command at: after-reply)"
		}
	}
	return fmt.Sprintf("its commands at the taps: %s; %d connections open through its taps", held, conns)
}
