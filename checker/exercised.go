package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/history"
)

// Notes the runner records for this file's findings.
const (
	// NoteNotExercised: a fault of the schedule could not reach the lock
	// (the worker cannot hit the failpoint, the target did not exist).
	NoteNotExercised = "not-exercised"
	// NoteFired: an armed failpoint triggered (the worker said so).
	NoteFired = "failpoint-fired"
	// NoteUnavailable: an await step timed out; DurationMs says how long.
	NoteUnavailable = "unavailable"
	// NoteEffect: a fault step was seen to take effect, right after it
	// was applied (Fault and Target name the step; Detail says what was
	// seen: a stopped process, a pid gone, a role, connections on a link).
	NoteEffect = "effect"
	// NoteNoEffect: a fault step was applied and its effect was not seen
	// (a pause of a process already gone, a partition of a link no client
	// had open): its cycle proves nothing.
	NoteNoEffect = "no-effect"
	// NoteEffectUnchecked: the backend cannot show a step's effect (a
	// remote Docker daemon's processes): neither proof nor disproof.
	NoteEffectUnchecked = "effect-unchecked"
	// NoteEffectPending: a fault step's effect was not seen as it was
	// applied and is judged again as it heals (a link nobody had open,
	// that a client may dial while it is cut): a NoteEffectAtHeal or a
	// NoteNoEffect with the same fault, target and cycle follows; without
	// one (the run ended first) its cycle proves nothing.
	NoteEffectPending = "effect-pending"
	// NoteEffectAtHeal: a pending step's effect was seen at its heal.
	NoteEffectAtHeal = "effect-at-heal"
	// NoteEffectDuring: what a fault step did while it lasted, read as it
	// was healed (the bytes clients sent into a cut link or that crossed
	// a slowed one). A record only: the effect note decides evidence.
	NoteEffectDuring = "effect-during"
	// NoteClockSeen: after a client clock step (clock-client), the worker
	// reported a wall time that shows the offset: the step reached the
	// lock. NoteClockUnseen: one that does not (Detail says what it read).
	// The runner notes the first of each per activation of the fault.
	NoteClockSeen   = "clock-seen"
	NoteClockUnseen = "clock-unseen"
)

// firedSlack: a failpoint's "fired" message is read concurrently with the
// nemesis healing it, so evidence a little after the heal still counts.
const firedSlack = int64(500 * time.Millisecond)

// NotExercised finds the faults of a schedule that never reached the lock:
// every "not-exercised" note, and every failpoint that was armed and then
// disarmed (or the run ended) without firing. Firing is shown by the
// worker's "fired" note, by the stop it caused (a failpoint-stop fault) or,
// for a crash failpoint, by a client's death while it was armed.
func NotExercised(events []history.Event) []Finding { return notExercised(events, nil) }

func notExercised(events []history.Event, w *work) []Finding {
	w.add(len(events))
	var out []Finding
	var runEnd int64
	if len(events) > 0 {
		runEnd = events[len(events)-1].Time
	}
	var ix *firingIndex // built at the first failpoint
	out = append(out, clockUnseen(events, runEnd, w)...)
	for i, e := range events {
		switch {
		case e.Kind == history.Note && e.Op == NoteNotExercised:
			out = append(out, Finding{Class: ClassNotExercised, Clients: nonEmpty(e.Process), From: e.Time, To: e.Time,
				Detail: "not exercised: " + e.Detail})
		case e.Kind == history.FaultStart && e.Fault == "failpoint":
			if ix == nil {
				ix = newFiringIndex(events, w)
			}
			w.add(1)
			name := paramOf(e.Detail, "name")
			end := runEnd
			if j, ok := ix.after(ix.ends[e.Fault+"@"+e.Target], i); ok {
				end = events[j].Time
			}
			if !ix.fired(events, i, name, end+firedSlack) {
				out = append(out, Finding{Class: ClassNotExercised, From: e.Time, To: end,
					Detail: fmt.Sprintf("failpoint %s armed on %s for %v never fired: the lock never reached it, so this fault attacked nothing",
						name, e.Target, time.Duration(end-e.Time).Round(time.Millisecond))})
			}
		}
	}
	return out
}

// firingIndex lists, in event order, the indices of the events that end a
// failpoint (per fault and target) and of those that show one fired (per
// failpoint name; "" for any name), so each armed failpoint costs binary
// searches instead of a walk to its end.
type firingIndex struct {
	ends    map[string][]int // fault@target -> its fault-end events
	byName  map[string][]int // failpoint name -> its "fired" notes and the stops it caused
	anyFire []int            // every such event, and every client's death
}

func newFiringIndex(events []history.Event, w *work) *firingIndex {
	w.add(len(events))
	ix := &firingIndex{ends: map[string][]int{}, byName: map[string][]int{}}
	for i, x := range events {
		switch {
		case x.Kind == history.FaultEnd:
			k := x.Fault + "@" + x.Target
			ix.ends[k] = append(ix.ends[k], i)
		case x.Kind == history.Note && x.Op == NoteFired:
			n, _, _ := strings.Cut(x.Detail, " ")
			ix.byName[n] = append(ix.byName[n], i)
			ix.anyFire = append(ix.anyFire, i)
		case x.Kind == history.FaultStart && x.Fault == "failpoint-stop":
			ix.byName["\x00stop:"+x.Detail] = append(ix.byName["\x00stop:"+x.Detail], i)
			ix.anyFire = append(ix.anyFire, i)
		case x.Kind == history.Note && x.Op == "crashed":
			ix.byName["\x00crashed"] = append(ix.byName["\x00crashed"], i)
			ix.anyFire = append(ix.anyFire, i)
		}
	}
	return ix
}

// clockUnseen finds the clock-client faults none of whose activations was
// seen to move the lock's wall clock (no NoteClockSeen while it lasted):
// the property's clock step attacked nothing. One activation seen is
// enough (a property none of whose cycles had its step take effect is
// unknown; one with at least one such cycle is judged). Each activation
// is walked to its end: activations follow one another, so the walks
// together cover the history about once.
func clockUnseen(events []history.Event, runEnd int64, w *work) []Finding {
	const noAnswer = "no worker answered the step with the wall time its lock reads"
	var out []Finding
	for i, e := range events {
		if e.Kind != history.FaultStart || e.Fault != "clock-client" || e.Error != "" {
			continue
		}
		end := runEnd
		for _, x := range events[i+1:] {
			w.add(1)
			if x.Kind == history.FaultEnd && x.Fault == e.Fault && x.Target == e.Target {
				end = x.Time
				break
			}
		}
		seen, why := false, noAnswer
		for _, x := range events[i+1:] {
			w.add(1)
			if x.Time > end+firedSlack {
				break
			}
			if x.Kind != history.Note {
				continue
			}
			if x.Op == NoteClockSeen {
				seen = true
				break
			}
			if x.Op == NoteClockUnseen && why == noAnswer {
				why = x.Detail
			}
		}
		if seen {
			return nil
		}
		out = append(out, Finding{Class: ClassNotExercised, Clients: nonEmpty(e.Target), From: e.Time, To: end,
			Detail: fmt.Sprintf("the step %s had no effect on the lock (%s), so this fault attacked nothing",
				strings.TrimPrefix(e.Detail, "fault "), why)})
	}
	return out
}

// after is the first index in idx (ascending) past i.
func (ix *firingIndex) after(idx []int, i int) (int, bool) {
	p := sort.SearchInts(idx, i+1)
	if p < len(idx) {
		return idx[p], true
	}
	return 0, false
}

// fired says whether, after event i and no later than until, the failpoint
// name fired: its worker's "fired" note, the stop it caused (a
// failpoint-stop fault), or, for a crash failpoint, a client's death.
func (ix *firingIndex) fired(events []history.Event, i int, name string, until int64) bool {
	lists := [][]int{ix.anyFire}
	if name != "" {
		lists = [][]int{ix.byName[name], ix.byName["\x00stop:"+name], ix.byName["\x00crashed"]}
	}
	for _, l := range lists {
		if j, ok := ix.after(l, i); ok && events[j].Time <= until {
			return true
		}
	}
	return false
}

// Unavailable turns every "unavailable" note (an await step that timed out:
// the lock granted nothing while a fault lasted) into a finding with its
// duration.
func Unavailable(events []history.Event) []Finding {
	var out []Finding
	for _, e := range events {
		if e.Kind != history.Note || e.Op != NoteUnavailable {
			continue
		}
		d := time.Duration(e.DurationMs) * time.Millisecond
		out = append(out, Finding{Class: ClassUnavailable, From: e.Time - int64(d), To: e.Time,
			Detail: fmt.Sprintf("unavailable for %v: %s", d, e.Detail)})
	}
	return out
}

// paramOf reads "key=value" out of a step's description ("fault failpoint
// on holder action=stop ms=1s name=before-release").
func paramOf(detail, key string) string {
	for _, f := range strings.Fields(detail) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
