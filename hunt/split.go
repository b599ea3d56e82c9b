package hunt

import (
	"slices"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
)

// Splits: the learning search's attack on an operation that is not atomic.
// An operation the lock was seen to send as a plain write of the key (DEL,
// PEXPIRE: a command that acts on the key whoever holds it) beside another
// kind of command (a release that reads its key, then deletes it; an
// extend that reads, then sets the TTL) has a moment between them where the
// key can change hands: the client checked the key was its own, and acts
// on it after the key expired and another client took it. Nothing but a
// command trigger stops a client there, and only for a pause that ends
// while the next holder holds. The RESP taps tell which operations do
// that (Space.nonAtomic, from the commands the runs saw), so the search
// does not wait for a run to come near: once one is seen, it draws splits
// in the share of its fresh draws it gives the attacks (stretchShare); a
// lock whose operations write only through a script, or one command each,
// draws exactly as before. Added after broken-get-then-del was found by
// the learning search later than by the random one (docs/HUNT.md).
//
// An operation whose second command is itself a compare-and-act (a read,
// then a script that compares again: every mutation lock of the suite
// releases so) is not split: the script keeps the key's owner, and
// counting it made the splits take half the fresh draws of every one of
// those locks (the side-by-side measurement of 29 November, docs/HUNT.md).

// blindWrites are the commands that act on a key without checking who
// holds it: deleting it, or setting its expiry. SET is not among them (the
// taps do not tell SET NX, an acquire's compare-and-set, from a plain SET).
var blindWrites = []string{"DEL", "UNLINK", "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST"}

// nonAtomic lists the operations seen to send a blind write beside another
// kind of command: a script's two forms are one kind (Space.learn), and
// SCRIPT (loading a script, which touches no key) is none.
func (sp *Space) nonAtomic() []string {
	var ops []string
	for _, op := range opsOf(sp.Commands) {
		if len(sp.splitAnchors(op)) > 0 {
			ops = append(ops, op)
		}
	}
	return ops
}

// splitAnchors are the commands of op a split stops its client after: the
// kinds other than its blind writes, when it sends one; none otherwise.
func (sp *Space) splitAnchors(op string) []string {
	var before []string
	blind := false
	for _, k := range sp.commandsOf(op) {
		switch {
		case k == "SCRIPT":
		case slices.Contains(blindWrites, k):
			blind = true
		default:
			before = append(before, k)
		}
	}
	if !blind {
		return nil
	}
	return before
}

// opsOf are the operations of the shapes, in the order first seen.
func opsOf(shapes []resp.Shape) []string {
	var ops []string
	for _, c := range shapes {
		if !slices.Contains(ops, c.Op) {
			ops = append(ops, c.Op)
		}
	}
	return ops
}

// Split draws a fresh schedule and makes it the attack on a non-atomic
// operation: each cycle anchored on the successful reply of one of its
// commands before the blind write (splitAnchors; drawn among them), the
// client whose command it was stopped there until halfway through the
// next holder's hold (resumeInNextHold), no other fault; three clients
// (one to take the key the stale write frees), holds of 0.6 TTL, no
// renewal or re-entry. With no such operation seen, or no client pause in
// the space, it is the fresh draw.
func (g *Generator) Split(op string) *Schedule {
	s := g.Next()
	names := g.space.splitAnchors(op)
	if len(names) == 0 || !slices.Contains(g.space.Faults, "pause-client") {
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
