package hunt

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
)

// getThenDelShapes: a lock whose release reads its key, then deletes it.
func getThenDelShapes() []resp.Shape {
	shapes := slices.DeleteFunc(sampleShapes(), func(c resp.Shape) bool { return c.Op == scenarios.OpRelease })
	return append(shapes, resp.Shape{Name: "GET", Key: "lock:*", Op: "release"}, resp.Shape{Name: "DEL", Key: "lock:*", Op: "release"})
}

// An operation is non-atomic when it sends a blind write (DEL, PEXPIRE)
// beside another kind of command: a script's two forms are one kind,
// loading a script none, and a read followed by a script that compares
// again is atomic (every mutation lock of the suite releases so).
func TestNonAtomic(t *testing.T) {
	sp := NewSpace(testInfo(), nil)
	sp.learn(sampleShapes())
	sp.learn([]resp.Shape{{Name: "EVAL", Op: "release"}, {Name: "SCRIPT LOAD", Op: "release"}, {Name: "EVALSHA", Op: "release", Key: "lock:*"}})
	if got := sp.nonAtomic(); len(got) != 0 {
		t.Errorf("one kind of command an operation: %v non-atomic, want none", got)
	}
	sp.learn([]resp.Shape{{Name: "GET", Op: "release", Key: "lock:*"}})
	if got := sp.nonAtomic(); len(got) != 0 {
		t.Errorf("a read, then a compare-and-delete script: %v non-atomic, want none", got)
	}
	blind := NewSpace(testInfo(), nil)
	blind.learn([]resp.Shape{{Name: "SET", Key: "lock:*", Op: "acquire"}, {Name: "PEXPIRE", Op: "extend", Key: "lock:*"}})
	if got := blind.nonAtomic(); len(got) != 0 {
		t.Errorf("a blind write alone: %v non-atomic, want none", got)
	}
	sp = NewSpace(testInfo(), nil)
	sp.learn(sampleShapes())
	sp.learn(getThenDelShapes())
	if got := sp.nonAtomic(); !slices.Equal(got, []string{scenarios.OpRelease}) {
		t.Errorf("a release that reads, then deletes: %v non-atomic, want [release]", got)
	}
}

// Split draws the attack on a non-atomic operation: a cycle anchored on
// the successful reply of its command before the blind write (GET, never
// DEL: a pause after the delete splits nothing), the client stopped there
// until halfway through the next holder's hold, three clients; a schedule
// the runner accepts, for every kind of built-in lock. With no such
// operation seen it is a fresh draw.
func TestSplitDrawsTheAttack(t *testing.T) {
	for _, lock := range builtInLocks {
		subj := builtIn(t, lock)
		sp := NewSpace(subj.Info, BuiltInLimits(lock))
		sp.learn(getThenDelShapes())
		g := NewGenerator(sp, 7)
		anchors := map[string]int{}
		for range 40 {
			s := g.Split(scenarios.OpRelease)
			a := s.Anchor
			if a == nil || a.Op != scenarios.OpRelease || a.At != scenarios.AtReply || a.Reply != scenarios.ReplyOK || s.WhileFree {
				t.Fatalf("%s: split anchored on %v", lock, a)
			}
			anchors[a.Name]++
			if len(s.Events) != 1 || s.Events[0].Fault != "pause-client" || s.Events[0].Target != lockfault.TargetTrigger ||
				s.Events[0].Dur != resumeInNextHold(s) || s.Workload.Clients != 3 || s.Workload.Hold.D() != scale(s.TTL, 0.6) {
				t.Fatalf("%s: split draws %v with workload %+v", lock, s.Faults(), s.Workload)
			}
			mustPrepare(t, subj, s, lock)
		}
		if anchors["GET"] != 40 {
			t.Errorf("%s: anchors %v, want GET's reply alone", lock, anchors)
		}
	}
	sp := NewSpace(testInfo(), nil)
	sp.learn(sampleShapes())
	if s := NewGenerator(sp, 7).Split(scenarios.OpRelease); len(s.Derived) != 0 {
		t.Errorf("no non-atomic operation: derived %v, want a fresh draw", s.Derived)
	}
}

// splitRelease: the cycle stops the client whose release read its key
// (GET's reply) until the next holder holds: past what was left of its
// key, and before the next holder's hold ends.
func splitRelease(sc *scenarios.Scenario) bool {
	ttl, hold := sc.Lock.TTL.D(), sc.Workload.Hold.D()
	for _, st := range sc.Nemesis.Steps {
		if c := st.Command; c != nil && c.Op == scenarios.OpRelease && strings.Contains(c.Name, "GET") && c.At == scenarios.AtReply {
			p := pausedFor(sc)
			return sc.Workload.Clients >= 3 && hold < ttl && p > ttl-hold+scale(ttl, 0.1) && p < ttl-hold+hold-scale(ttl, 0.1)
		}
	}
	return false
}

// TestSplitLeadsTheSearch: on a made-up lock whose release reads its key,
// then deletes it, and whose violation shows only when the releasing
// client is stopped between the two until the next holder holds (in one
// such run in two, as a real race), the learning search finds it with
// every seed within a budget where the random search finds it with fewer.
func TestSplitLeadsTheSearch(t *testing.T) {
	sp := NewSpace(testInfo(), nil)
	sp.learn(getThenDelShapes())
	attackLeads(t, sp, splitRelease, func(sc *scenarios.Scenario) []history.Event {
		return opAt("c1", history.OpAcquire, 1, 10, 11, 10+sc.Lock.TTL.D().Milliseconds(), history.OK)
	})
}
