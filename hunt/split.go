package hunt

import (
	"slices"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/scenarios"
)

// Splits: the learning search's attack on an operation that is not atomic.
// An operation the lock was seen to send as more than one kind of command
// (a release that reads its key, then deletes it; an extend that reads,
// then sets the TTL) has a moment between two of its commands where the
// key can change hands: the client checked the key was its own, and acts
// on it after the key expired and another client took it. Nothing but a
// command trigger stops a client there, and only for a pause that ends
// while the next holder holds. The RESP taps tell which operations send
// more than one kind (Space.nonAtomic, from the commands the runs saw),
// so the search does not wait for a run to come near: once one is seen,
// it draws splits in the share of its fresh draws it gives the attacks
// (stretchShare), a lock whose operations are one command each draws
// exactly as before. Added after broken-get-then-del was found by the
// learning search later than by the random one (docs/HUNT.md).

// nonAtomic lists the operations whose commands seen are of more than one
// kind: a script's two forms are one kind (Space.learn), and SCRIPT
// (loading a script, which touches no key) is none.
func (sp *Space) nonAtomic() []string {
	kinds := map[string][]string{}
	var ops []string
	for _, c := range sp.Commands {
		k := firstWord(c.Name)
		if k == "SCRIPT" || slices.Contains(kinds[c.Op], k) {
			continue
		}
		if kinds[c.Op] = append(kinds[c.Op], k); len(kinds[c.Op]) == 2 {
			ops = append(ops, c.Op)
		}
	}
	return ops
}

// Split draws a fresh schedule and makes it the attack on a non-atomic
// operation: each cycle anchored on the successful reply of one of its
// commands (drawn among its kinds), the client whose command it was
// stopped there until halfway through the next holder's hold
// (resumeInNextHold), no other fault; three clients (one to take the key
// the stale command frees), holds of 0.6 TTL, no renewal or re-entry.
// With no such operation seen, or no client pause in the space, it is the
// fresh draw.
func (g *Generator) Split(op string) *Schedule {
	s := g.Next()
	names := slices.DeleteFunc(g.space.commandsOf(op), func(n string) bool { return n == "SCRIPT" })
	if len(names) < 2 || !slices.Contains(g.space.Faults, "pause-client") {
		return s
	}
	s.WhileFree = false
	s.Anchor = &scenarios.CommandMatch{Name: g.of(names), Op: op, At: scenarios.AtReply, Reply: scenarios.ReplyOK}
	w := &s.Workload
	w.Clients, w.Hold, w.HoldUntilValid, w.WriteIfValid, w.Reentry = 3, scenarios.Duration(scale(s.TTL, 0.6)), 0, 0, 0
	s.Options = nil
	if op == scenarios.OpExtend {
		w.Extends = 1
		if w.ExtendEvery == 0 {
			w.ExtendEvery = scenarios.Duration(scale(s.TTL, 0.3))
		}
	}
	s.Events = []Event{{Fault: "pause-client", Target: lockfault.TargetTrigger, Dur: resumeInNextHold(s)}}
	s.Derived = []string{"split " + op}
	return s
}
