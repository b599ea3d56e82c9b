package checker

import (
	"fmt"
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
func NotExercised(events []history.Event) []Finding {
	var out []Finding
	var runEnd int64
	if len(events) > 0 {
		runEnd = events[len(events)-1].Time
	}
	out = append(out, clockUnseen(events, runEnd)...)
	for i, e := range events {
		switch {
		case e.Kind == history.Note && e.Op == NoteNotExercised:
			out = append(out, Finding{Class: ClassNotExercised, Clients: nonEmpty(e.Process), From: e.Time, To: e.Time,
				Detail: "not exercised: " + e.Detail})
		case e.Kind == history.FaultStart && e.Fault == "failpoint":
			name := paramOf(e.Detail, "name")
			end := runEnd
			for _, x := range events[i+1:] {
				if x.Kind == history.FaultEnd && x.Fault == e.Fault && x.Target == e.Target {
					end = x.Time
					break
				}
			}
			if !fired(events[i+1:], name, end+firedSlack) {
				out = append(out, Finding{Class: ClassNotExercised, From: e.Time, To: end,
					Detail: fmt.Sprintf("failpoint %s armed on %s for %v never fired: the lock never reached it, so this fault attacked nothing",
						name, e.Target, time.Duration(end-e.Time).Round(time.Millisecond))})
			}
		}
	}
	return out
}

// clockUnseen finds the clock-client faults none of whose activations was
// seen to move the lock's wall clock (no NoteClockSeen while it lasted):
// the property's clock step attacked nothing. One activation seen is
// enough (a property none of whose cycles had its step take effect is
// unknown; one with at least one such cycle is judged).
func clockUnseen(events []history.Event, runEnd int64) []Finding {
	var out []Finding
	for i, e := range events {
		if e.Kind != history.FaultStart || e.Fault != "clock-client" || e.Error != "" {
			continue
		}
		end := runEnd
		for _, x := range events[i+1:] {
			if x.Kind == history.FaultEnd && x.Fault == e.Fault && x.Target == e.Target {
				end = x.Time
				break
			}
		}
		seen, why := false, "no worker answered the step with the wall time its lock reads"
		for _, x := range events[i+1:] {
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
			if x.Op == NoteClockUnseen && why == "no worker answered the step with the wall time its lock reads" {
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

// fired reports whether events (from the arming on) show the failpoint
// triggering before until.
func fired(events []history.Event, name string, until int64) bool {
	for _, x := range events {
		if x.Time > until {
			return false
		}
		switch {
		case x.Kind == history.Note && x.Op == NoteFired && (name == "" || strings.HasPrefix(x.Detail+" ", name+" ")):
			return true
		case x.Kind == history.FaultStart && x.Fault == "failpoint-stop" && (name == "" || x.Detail == name):
			return true
		case x.Kind == history.Note && x.Op == "crashed":
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
