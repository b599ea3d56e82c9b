package history

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Notes and faults the runner records that Evidence reads. (The fault names
// are the faults package's; it imports this one, so they are repeated here.)
const (
	NoteCycle          = "cycle"           // a cycle of the schedule begins
	NoteCrashed        = "crashed"         // a client's worker process died
	NoteFailpointFired = "failpoint-fired" // an armed failpoint triggered: detail "<name> <action>"
	// NoteStopping: the harness is about to kill this process (the heal of
	// a clone-client stops the clone): its death is planned.
	NoteStopping = "stopping"
	// NoteSlowCall: a call of this process has had no reply for a while;
	// the detail says what its worker was doing (a stuck finding quotes it).
	NoteSlowCall = "slow-call"
	// NotePathSlow: the harness's own path to a node (Target; "harness"
	// for the harness's timer) took PathSlow or longer to answer, with or
	// without a fault on, for DurationMs ending at the note's time. The
	// checker does not charge a lock's liveness with such a stretch.
	NotePathSlow     = "path-slow"
	faultCrashClient = "crash-client" // SIGKILLs the target clients
	faultCloneClient = "clone-client" // its heal kills the clone "<client>-clone"
	actionCrash      = "crash"        // a failpoint action: the worker exits
)

// PlannedCrashWindow: a worker's death counts as planned when a crash the
// schedule caused (a crash failpoint firing in it, a crash-client on it, the
// heal of its clone-client) was recorded at most this long before its
// "crashed" note. The note follows the death within milliseconds; the
// window leaves room for a loaded machine.
const PlannedCrashWindow = 10 * time.Second

// PathSlow: a probe of the harness's path to a node that took this long or
// longer (or the harness's timer firing this late) is a stall of the path
// (NotePathSlow). It is Redlock's per-node bound in the built-in redlock
// lock, the shortest timeout of the built-in locks: a path this slow fails
// every call of that lock with no fault on.
const PathSlow = 50 * time.Millisecond

// Evidence is what a history shows the lock was put through: per cycle of
// the schedule and per key, how many grants, completed critical sections,
// extends and renewals there were, and which clients died without the
// schedule killing them. A verdict of "safe" means something only if the
// run did what it was meant to exercise; thresholds on these counts say
// whether it did.
type Evidence struct {
	// Cycles[0] is what happened before the first cycle began (set-up,
	// warmup); Cycles[i] is cycle i, in the order the cycles began (as the
	// checker numbers them).
	Cycles []CycleEvidence `json:"cycles"`
}

// CycleEvidence is one cycle's evidence.
type CycleEvidence struct {
	Cycle int `json:"cycle"`
	// Keys lists every key of the history, sorted, the same in every
	// cycle: a key with nothing in this cycle has zero counts.
	Keys []KeyEvidence `json:"keys"`
	// Crashed lists the clients whose worker died in this cycle outside a
	// planned crash (sorted, each once): a worker that died by itself is
	// a broken worker or a harness fault, not a lock under test.
	Crashed []string `json:"crashed,omitempty"`
}

// KeyEvidence counts what one key went through in one cycle.
type KeyEvidence struct {
	Key              string `json:"key"`
	Grants           int    `json:"grants"`            // acquires that succeeded (ok)
	CriticalSections int    `json:"critical_sections"` // critical sections completed (cs ok)
	ExtendsAttempted int    `json:"extends_attempted"` // extends invoked
	ExtendsSucceeded int    `json:"extends_succeeded"` // extends that succeeded (ok)
	Renewals         int    `json:"renewals"`          // renewals the lock made on its own (renew events)
}

// Key returns the evidence of one key in this cycle (zero counts if the
// history has no such key).
func (c CycleEvidence) Key(key string) KeyEvidence {
	i, ok := slices.BinarySearchFunc(c.Keys, key, func(k KeyEvidence, key string) int { return strings.Compare(k.Key, key) })
	if !ok {
		return KeyEvidence{Key: key}
	}
	return c.Keys[i]
}

// CollectEvidence counts the evidence of a history (events in any order; an
// event's cycle is the last cycle that began at or before it). An event
// without a key belongs to the key of its lease (from the acquire that
// granted it), else to the implicit key "".
//
// A death ("crashed" note) is planned when a crash the schedule caused
// precedes it within PlannedCrashWindow and has not been spent on another
// death: a crash failpoint that fired in that client, a crash-client on it
// (on the holder: one death; on others or all: one per client), or the
// heal of its clone-client (which kills "<client>-clone").
func CollectEvidence(events []Event) Evidence {
	s := scanEvidence(events)
	var keys []string
	for i := range events {
		if counted(&events[i]) {
			keys = append(keys, s.keyOf(&events[i]))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	ev := Evidence{Cycles: make([]CycleEvidence, len(s.starts)+1)}
	for i := range ev.Cycles {
		ev.Cycles[i].Cycle = i
		ev.Cycles[i].Keys = make([]KeyEvidence, len(keys))
		for j, k := range keys {
			ev.Cycles[i].Keys[j].Key = k
		}
	}
	for i := range events {
		e := &events[i]
		if !counted(e) {
			continue
		}
		j, _ := slices.BinarySearch(keys, s.keyOf(e))
		k := &ev.Cycles[s.cycleOf(e.Time)].Keys[j]
		switch {
		case e.Kind == Renew:
			k.Renewals++
		case e.Kind == Invoke:
			k.ExtendsAttempted++
		case e.Op == OpAcquire:
			k.Grants++
		case e.Op == OpCS:
			k.CriticalSections++
		case e.Op == OpExtend:
			k.ExtendsSucceeded++
		}
	}
	s.markUnplannedDeaths(&ev)
	return ev
}

// evidenceScan is what one pass over a history gathers for
// CollectEvidence: when each cycle began, the key of every granted lease,
// the deaths of workers and the crashes the schedule caused.
type evidenceScan struct {
	starts   []int64 // the cycles' beginnings, in time order
	leaseKey map[string]string
	causes   []*crashCause
	deaths   []*Event
}

func scanEvidence(events []Event) *evidenceScan {
	s := &evidenceScan{leaseKey: map[string]string{}}
	for i := range events {
		e := &events[i]
		switch {
		case e.Kind == Note && e.Op == NoteCycle:
			s.starts = append(s.starts, e.Time)
		case e.Kind == OK && e.Op == OpAcquire && e.Lease != "":
			s.leaseKey[e.Lease] = e.Key
		case e.Kind == Note && e.Op == NoteCrashed:
			s.deaths = append(s.deaths, e)
		case e.Kind == Note && e.Op == NoteFailpointFired && strings.HasSuffix(e.Detail, " "+actionCrash):
			s.causes = append(s.causes, &crashCause{at: e.Time, target: e.Process})
		case e.Kind == FaultStart && e.Fault == faultCrashClient:
			s.causes = append(s.causes, &crashCause{at: e.Time, target: e.Target})
		case e.Kind == FaultEnd && e.Fault == faultCloneClient:
			s.causes = append(s.causes, &crashCause{at: e.Time, target: e.Target, clone: true})
		case e.Kind == Note && e.Op == NoteStopping && e.Process != "":
			// Recorded before the kill: the heal's fault-end comes after
			// the death it causes.
			s.causes = append(s.causes, &crashCause{at: e.Time, target: e.Process})
		}
	}
	slices.Sort(s.starts)
	return s
}

// cycleOf is the cycle of an event at t: the last that began at or before
// it (0: before the first).
func (s *evidenceScan) cycleOf(t int64) int {
	return sort.Search(len(s.starts), func(j int) bool { return s.starts[j] > t })
}

// keyOf is an event's key, else the key of its lease.
func (s *evidenceScan) keyOf(e *Event) string {
	if e.Key == "" && e.Lease != "" {
		return s.leaseKey[e.Lease]
	}
	return e.Key
}

// markUnplannedDeaths lists in ev each death no crash of the schedule
// explains: deaths in time order, each spending the earliest cause that
// explains it.
func (s *evidenceScan) markUnplannedDeaths(ev *Evidence) {
	slices.SortStableFunc(s.deaths, func(a, b *Event) int { return cmp.Compare(a.Time, b.Time) })
	slices.SortStableFunc(s.causes, func(a, b *crashCause) int { return cmp.Compare(a.at, b.at) })
	for _, d := range s.deaths {
		if !slices.ContainsFunc(s.causes, func(c *crashCause) bool { return c.spend(d.Process, d.Time) }) {
			c := &ev.Cycles[s.cycleOf(d.Time)]
			if !slices.Contains(c.Crashed, d.Process) {
				c.Crashed = append(c.Crashed, d.Process)
				slices.Sort(c.Crashed)
			}
		}
	}
}

// counted: the events Evidence counts.
func counted(e *Event) bool {
	switch e.Kind {
	case OK:
		return e.Op == OpAcquire || e.Op == OpCS || e.Op == OpExtend
	case Invoke:
		return e.Op == OpExtend
	}
	return e.Kind == Renew
}

// crashCause is a crash the schedule caused, which explains the deaths of
// the clients it targeted that follow it within PlannedCrashWindow.
type crashCause struct {
	at     int64
	target string // a client, or holder, others, all ("" is all)
	clone  bool   // the heal of a clone-client: it kills the clone of target
	spent  map[string]bool
}

// spend reports whether the cause explains the death of process at t, and
// if so marks it spent for that process (for the holder or one client: for
// every process).
func (c *crashCause) spend(process string, t int64) bool {
	if t < c.at || t-c.at > int64(PlannedCrashWindow) || c.spent[process] || c.spent[""] {
		return false
	}
	isClone := strings.HasSuffix(process, "-clone")
	switch c.target {
	case "others", "all", "":
		if isClone != c.clone {
			return false
		}
		if c.spent == nil {
			c.spent = map[string]bool{}
		}
		c.spent[process] = true
		return true
	case "holder":
		// The holder may be a clone (clone-client's copy took the lock):
		// crash-client on the holder kills whichever holds it; the heal of
		// a clone-client on the holder kills only a clone.
		if c.clone && !isClone {
			return false
		}
	default:
		want := c.target
		if c.clone {
			want += "-clone"
		}
		if process != want {
			return false
		}
	}
	c.spent = map[string]bool{"": true} // one death only
	return true
}
