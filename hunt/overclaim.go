package hunt

import (
	"slices"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

// Overclaims: the learning search's third feedback (see docs/HUNT.md,
// "The learning search"). A lock must date the validity it reports from
// before its request was sent: the key's TTL starts when a node runs the
// command, which may be any time after that, and Redlock's analysis
// measures from the start for this reason. A lock that dates it later
// (from the reply, or from a clock read after it) reports a validity
// that grows with the operation's latency: stretch the operation and the
// holder believes in time the key does not have. Overclaims finds the
// extends whose reported validity ended later than their invoke plus
// one TTL by at least overclaimEnough TTLs (a late reply in the run made
// it show), and once overclaimRuns runs (or one probe, Probe) showed
// one, the search draws, beside its other draws, the schedule that
// stretches them (Stretch): the operation's successful
// reply held while the client is stopped, and holders that trust the
// validity reported.
//
// Only the lock's own account is read (its invoke, its reported
// validity), never its name: any lock that reports a validity is
// measured, and one that reports none never stretched. A correct lock
// dates from a time before its request, so it never overclaims by more
// than the moment between the worker's invoke and its own clock read.

// overclaimEnough is the overclaim (in TTLs) that counts: a late reply's
// (a latency fault of 100 ms on a TTL of 1 s is 0.1), well above the
// moment a correct lock takes between the worker's invoke and its own
// clock read. The invoke is the harness's: its command crosses a pipe to
// the worker first, which on a loaded machine can take tens of
// milliseconds; so the search also waits for overclaimRuns runs to show
// it before it stretches (a correct lock's stall is one operation's, a
// lock that dates from the reply overclaims in every run with a late
// reply).
const (
	overclaimEnough = 0.05
	overclaimRuns   = 2
)

// maxInvokes bounds the operations in flight Overclaims follows.
const maxInvokes = 10000

// Overclaims is the operations whose reported validity ended at least
// overclaimEnough TTLs after their invoke plus one TTL: extends only,
// none while a fault acted on a client. An acquire waits for the key (it
// retries until granted, or its wait runs out) and a correct lock dates
// its validity from its last attempt, of which the history has no time:
// measured from the invoke, every acquire that waited would overclaim
// (in a real hunt of broken-extend-from-end, every run's did, by up to
// 1.5 TTL; its extends by 0.002 to 0.3). A client stopped between the
// harness's invoke and its lock's clock read makes a correct lock look
// late the same way (single's extends overclaimed by 0.53 TTL in the
// false-alarm campaign, under pause-client): an extend in flight while a
// client fault began or lasted is not measured. A busy machine does it
// too, to one operation now and then (a correct library's worker stopped
// 168 ms between the invoke and its clock read, under seven Docker hunts
// at once, where its other late replies were dated right): so a run
// overclaims only when at least half its extends whose reply came
// overclaimEnough TTLs late or more overclaimed, as every one of a lock
// that dates from the reply does.
func Overclaims(events []history.Event, ttl time.Duration) []string {
	if ttl <= 0 {
		return nil
	}
	type op struct {
		process string
		id      int64
	}
	// An extend is touched by a client fault when one was on at its
	// invoke, or one began before its completion (starts moved).
	type inflight struct {
		at     int64
		starts int  // client faults begun before its invoke
		on     bool // one was on at its invoke
	}
	invoked := map[op]inflight{}
	on, starts := 0, 0 // client faults on now, and begun so far
	late, over := 0, 0 // measured extends whose reply came late, and those that overclaimed
	for _, e := range events {
		switch {
		case e.Kind == history.FaultStart && clientFault(e.Fault):
			on, starts = on+1, starts+1
			continue
		case e.Kind == history.FaultEnd && clientFault(e.Fault):
			on = max(0, on-1)
			continue
		case e.Op != history.OpExtend:
			continue
		}
		k := op{e.Process, e.OpID}
		switch e.Kind {
		case history.Invoke:
			if len(invoked) < maxInvokes {
				invoked[k] = inflight{at: e.Time, starts: starts, on: on > 0}
			}
		case history.OK, history.Fail, history.Info:
			f, ok := invoked[k]
			delete(invoked, k)
			touched := f.on || f.starts != starts
			if !ok || touched || e.Kind != history.OK || e.ValidUntil <= 0 {
				continue
			}
			o := float64(e.ValidUntil-f.at-int64(ttl))/float64(ttl) >= overclaimEnough
			if o || float64(e.Time-f.at)/float64(ttl) >= overclaimEnough {
				late++
			}
			if o {
				over++
			}
		}
	}
	if over == 0 || 2*over < late {
		return nil
	}
	return []string{history.OpExtend}
}

// Stretch draws a fresh schedule and makes it the attack on an operation
// that overclaims: each cycle anchored on the operation's successful
// reply, held while its client is stopped (for 0.15 to 0.6 TTL: longer
// than a careful holder's margin), no other fault; holders that trust
// the validity reported (until 0.1 TTL before it), the extending ones
// extending once. With no command of the operation seen, or no client
// pause in the space, it is the fresh draw.
func (g *Generator) Stretch(op string) *Schedule {
	names := g.space.commandsOf(op)
	s := g.Next()
	if len(names) == 0 || !slices.Contains(g.space.Faults, "pause-client") {
		return s
	}
	s.WhileFree = false
	s.Anchor = &scenarios.CommandMatch{Name: g.of(names), Op: op, At: scenarios.AtReply, Reply: scenarios.ReplyOK}
	s.Events = []Event{{Fault: "pause-client", Target: lockfault.TargetTrigger, Dur: scale(s.TTL, g.pick(0.15, 0.3, 0.45, 0.6))}}
	w := &s.Workload
	if w.Hold.D() >= s.TTL {
		w.Hold = scenarios.Duration(scale(s.TTL, 0.3))
		s.Options = nil
	}
	w.HoldUntilValid, w.WriteIfValid = scenarios.Duration(scale(s.TTL, 0.1)), 0
	w.Reentry = 0
	if op == scenarios.OpExtend {
		w.Extends = 1
		if w.ExtendEvery == 0 {
			w.ExtendEvery = scenarios.Duration(scale(s.TTL, g.pick(0.3, 0.6)))
		}
	}
	s.Derived = []string{"stretch " + op}
	return s
}

// Probe draws the experiment that asks a lock whether it dates an
// operation's validity from the reply: the stretch's cycle with the
// client left running, the operation's successful reply held for
// probeHold TTL, ended by a short pause of a node (probeNodePause TTL:
// a node fault, so the extend in flight is measured). A lock that dates
// from the reply overclaims by the hold; a correct lock does not move.
// On a quiet machine late replies are rare (in six 10-minute hunts of
// broken-extend-from-end, two saw none, two one), so the search does not
// wait for them: it probes once, as soon as the lock was seen to extend
// (its commands are learnt from the runs that finished), and one
// overclaiming probe turns the stretches on. nil when the space has no
// command of the operation, or lacks a client pause (Stretch's) or a node
// pause.
func (g *Generator) Probe(op string) *Schedule {
	if len(g.space.commandsOf(op)) == 0 {
		return nil // not seen yet: nothing drawn
	}
	s := g.Stretch(op)
	if len(s.Derived) == 0 || !slices.Contains(g.space.Faults, "pause-node") {
		return nil
	}
	e := g.event("pause-node", s)
	e.At, e.Dur = scale(s.TTL, probeHold), scale(s.TTL, probeNodePause)
	s.Events = []Event{e}
	s.Derived = []string{"probe " + op}
	return s
}

// commandsOf are the names of the commands the lock was seen to send for
// an operation.
func (sp *Space) commandsOf(op string) []string {
	var names []string
	for _, c := range sp.Commands {
		if c.Op == op && !slices.Contains(names, firstWord(c.Name)) {
			names = append(names, firstWord(c.Name))
		}
	}
	return names
}

// probeHold and probeNodePause (TTLs): see Probe.
const (
	probeHold      = 0.2
	probeNodePause = 0.05
)
