package history

import (
	"reflect"
	"testing"
	"time"
)

// CollectEvidence counts per cycle and per key, gives an event without a
// key its lease's key, lists every key in every cycle, and names the
// clients that died without the schedule killing them.
func TestCollectEvidence(t *testing.T) {
	const s = int64(time.Second)
	at := func(sec float64) int64 { return int64(sec * float64(s)) }
	evs := []Event{
		// Before the first cycle: one grant on k1.
		{Time: at(1), Kind: OK, Process: "c1", Op: OpAcquire, OpID: 1, Lease: "L1", Key: "k1"},
		{Time: at(2), Kind: OK, Process: "c1", Op: OpCS, OpID: 2, Lease: "L1", Key: "k1"},
		{Time: at(10), Kind: Note, Op: NoteCycle, Cycle: 1},
		// Cycle 1: k1 granted twice, one cs ok and one cs fail, extends
		// (two tried, one ok), a renewal without a key (L2's key, k2).
		{Time: at(11), Kind: OK, Process: "c1", Op: OpAcquire, OpID: 3, Lease: "L2", Key: "k2"},
		{Time: at(11.5), Kind: Renew, Process: "c1", Lease: "L2"},
		{Time: at(12), Kind: Invoke, Process: "c1", Op: OpExtend, OpID: 4, Lease: "L2", Key: "k2"},
		{Time: at(12.1), Kind: OK, Process: "c1", Op: OpExtend, OpID: 4, Lease: "L2", Key: "k2"},
		{Time: at(12.2), Kind: Invoke, Process: "c1", Op: OpExtend, OpID: 5, Lease: "L2", Key: "k2"},
		{Time: at(12.3), Kind: Fail, Process: "c1", Op: OpExtend, OpID: 5, Lease: "L2", Key: "k2"},
		{Time: at(13), Kind: OK, Process: "c2", Op: OpAcquire, OpID: 6, Lease: "L3", Key: "k1"},
		{Time: at(13.5), Kind: OK, Process: "c2", Op: OpCS, OpID: 7, Lease: "L3", Key: "k1"},
		{Time: at(14), Kind: OK, Process: "c3", Op: OpAcquire, OpID: 8, Lease: "L4", Key: "k1"},
		{Time: at(14.5), Kind: Fail, Process: "c3", Op: OpCS, OpID: 9, Lease: "L4", Key: "k1"},
		// Planned deaths: a crash failpoint in c1, crash-client on c2,
		// crash-client on the holder (c3), the heal of c4's clone.
		{Time: at(15), Kind: Note, Op: NoteFailpointFired, Process: "c1", Detail: "after-setnx crash"},
		{Time: at(15.1), Kind: Note, Op: NoteCrashed, Process: "c1"},
		{Time: at(16), Kind: FaultStart, Fault: "crash-client", Target: "c2"},
		{Time: at(17), Kind: Note, Op: NoteCrashed, Process: "c2"},
		{Time: at(18), Kind: FaultStart, Fault: "crash-client", Target: "holder"},
		{Time: at(18.2), Kind: Note, Op: NoteCrashed, Process: "c3"},
		{Time: at(19), Kind: FaultEnd, Fault: "clone-client", Target: "c4"},
		{Time: at(19.1), Kind: Note, Op: NoteCrashed, Process: "c4-clone"},
		// The heal of c5's clone, as the runner records it: the stopping
		// note, the death, then the fault's end.
		{Time: at(19.2), Kind: Note, Op: NoteStopping, Process: "c5-clone"},
		{Time: at(19.3), Kind: Note, Op: NoteCrashed, Process: "c5-clone"},
		{Time: at(19.4), Kind: FaultEnd, Fault: "clone-client", Target: "c5"},
		{Time: at(20), Kind: Note, Op: NoteCycle, Cycle: 2},
		// Cycle 2: deaths the schedule did not cause: c5 out of the blue
		// (crash-client on the holder killed c3 already), c1 long after its
		// crash failpoint, c6 after a sleep failpoint, c4 after its clone
		// was healed (the clone died, not c4), c2 twice (listed once).
		{Time: at(21), Kind: Note, Op: NoteCrashed, Process: "c5"},
		{Time: at(26), Kind: Note, Op: NoteCrashed, Process: "c1"},
		{Time: at(27), Kind: Note, Op: NoteFailpointFired, Process: "c6", Detail: "before-release sleep"},
		{Time: at(27.1), Kind: Note, Op: NoteCrashed, Process: "c6"},
		{Time: at(27.5), Kind: Note, Op: NoteCrashed, Process: "c4"},
		{Time: at(28), Kind: Note, Op: NoteCrashed, Process: "c2"},
		{Time: at(29), Kind: Note, Op: NoteCrashed, Process: "c2"},
		{Time: at(29.5), Kind: OK, Process: "c2", Op: OpAcquire, OpID: 10, Lease: "L5", Key: "k1"},
		{Time: at(40), Kind: Note, Op: NoteCycle, Cycle: 3},
		// Cycle 3: crash-client on all explains one death of each client
		// (not of a clone); c1's second death is its own.
		{Time: at(41), Kind: FaultStart, Fault: "crash-client", Target: "all"},
		{Time: at(41.1), Kind: Note, Op: NoteCrashed, Process: "c1"},
		{Time: at(41.2), Kind: Note, Op: NoteCrashed, Process: "c2"},
		{Time: at(41.3), Kind: Note, Op: NoteCrashed, Process: "c1-clone"},
		{Time: at(43), Kind: Note, Op: NoteCrashed, Process: "c1"},
		// crash-client on the holder when the holder is a clone (c2's
		// clone took the lock): the clone's death is the schedule's (a hunt
		// found a "died" here that the schedule had caused).
		{Time: at(44), Kind: FaultStart, Fault: "crash-client", Target: "holder"},
		{Time: at(44.1), Kind: Note, Op: NoteCrashed, Process: "c2-clone"},
	}
	want := Evidence{Cycles: []CycleEvidence{
		{Cycle: 0, Keys: []KeyEvidence{{Key: "k1", Grants: 1, CriticalSections: 1}, {Key: "k2"}}},
		{Cycle: 1, Keys: []KeyEvidence{{Key: "k1", Grants: 2, CriticalSections: 1}, {Key: "k2", Grants: 1, ExtendsAttempted: 2, ExtendsSucceeded: 1, Renewals: 1}}},
		{Cycle: 2, Keys: []KeyEvidence{{Key: "k1", Grants: 1}, {Key: "k2"}}, Crashed: []string{"c1", "c2", "c4", "c5", "c6"}},
		{Cycle: 3, Keys: []KeyEvidence{{Key: "k1"}, {Key: "k2"}}, Crashed: []string{"c1", "c1-clone"}},
	}}
	got := CollectEvidence(evs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// The order of the events does not matter.
	rev := make([]Event, len(evs))
	for i := range evs {
		rev[len(evs)-1-i] = evs[i]
	}
	if again := CollectEvidence(rev); !reflect.DeepEqual(again, want) {
		t.Fatalf("reversed: got %+v", again)
	}
	if k := got.Cycles[1].Key("k2"); k.ExtendsSucceeded != 1 {
		t.Fatalf("Key(k2) = %+v", k)
	}
	if k := got.Cycles[1].Key("nope"); k != (KeyEvidence{Key: "nope"}) {
		t.Fatalf("Key(nope) = %+v", k)
	}
	// A history without cycles or keys: one cycle 0, the implicit key.
	if e := CollectEvidence([]Event{{Time: 1, Kind: OK, Op: OpAcquire, OpID: 1}}); len(e.Cycles) != 1 || e.Cycles[0].Key("").Grants != 1 {
		t.Fatalf("no cycles: %+v", e)
	}
}
