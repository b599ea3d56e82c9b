package checker

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

const ms = int64(time.Millisecond)

// b builds hand-made histories with a clock in milliseconds.
type b struct {
	ev []history.Event
	op int64
}

func (h *b) add(e history.Event) { h.ev = append(h.ev, e) }

func (h *b) grant(p, lease string, inv, ok, validUntil, fence int64) {
	h.op++
	h.add(history.Event{Time: inv * ms, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: h.op})
	h.add(history.Event{Time: ok * ms, Kind: history.OK, Process: p, Op: history.OpAcquire, OpID: h.op, Lease: lease, ValidUntil: validUntil * ms, Fence: fence})
}

func (h *b) release(p, lease string, at int64) {
	h.op++
	h.add(history.Event{Time: at * ms, Kind: history.Invoke, Process: p, Op: history.OpRelease, OpID: h.op, Lease: lease})
	h.add(history.Event{Time: (at + 1) * ms, Kind: history.OK, Process: p, Op: history.OpRelease, OpID: h.op, Lease: lease})
}

func (h *b) access(p, lease, kind string, at, value, fence int64, rejected bool) {
	e := history.Event{Time: at * ms, Kind: history.Access, Process: p, Lease: lease, Access: kind, Fence: fence, Rejected: rejected}
	if !rejected {
		e.Value = history.Int64(value)
	}
	h.add(e)
}

// cs adds a read of v at r and a write of v+1 at w.
func (h *b) cs(p, lease string, r, w, v int64) {
	h.access(p, lease, "read", r, v, 0, false)
	h.access(p, lease, "write", w, v+1, 0, false)
}

func classes(r *Result) map[string]bool {
	m := map[string]bool{}
	for _, c := range r.Observed {
		m[c] = true
	}
	return m
}

func TestSequentialHoldsAreSafe(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.cs("c1", "c1-1", 2, 10, 0)
	h.release("c1", "c1-1", 11)
	h.grant("c2", "c2-1", 5, 13, 1013, 0)
	h.cs("c2", "c2-1", 14, 20, 1)
	h.release("c2", "c2-1", 21)
	r := Check(h.ev, Options{StuckAfter: time.Second})
	if r.Verdict != ClassSafe || len(r.Findings) != 0 {
		t.Fatalf("verdict %s, findings %+v; want safe", r.Verdict, r.Findings)
	}
	if len(r.Holds) != 2 || r.Holds[0].EndReason != "release" {
		t.Fatalf("holds %+v", r.Holds)
	}
	if r.Linearizable != "Ok" {
		t.Fatalf("linearizable = %s", r.Linearizable)
	}
}

func TestOverlapBothValid(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.grant("c2", "c2-1", 0, 50, 1050, 0) // failover: c2 granted while c1 valid
	h.release("c1", "c1-1", 100)
	h.release("c2", "c2-1", 120)
	r := Check(h.ev, Options{})
	if !classes(r)[ClassOverlap] || r.Verdict != ClassOverlap {
		t.Fatalf("observed %v, want overlap", r.Observed)
	}
	f := r.Findings[0]
	if f.Kind != "both-valid" || f.From != 50*ms || f.To != 100*ms {
		t.Fatalf("finding %+v, want both-valid over [50ms,100ms]", f)
	}
	if f.Clients[0] != "c1" || f.Clients[1] != "c2" {
		t.Fatalf("clients %v", f.Clients)
	}
}

func TestHoldCutAtValidity(t *testing.T) {
	// c1's validity ends at 100 ms; c2 is granted at 150 ms; c1 releases
	// late but never touches the resource after 100 ms: no overlap.
	var h b
	h.grant("c1", "c1-1", 0, 1, 100, 0)
	h.grant("c2", "c2-1", 0, 150, 1150, 0)
	h.release("c1", "c1-1", 300)
	h.release("c2", "c2-1", 400)
	r := Check(h.ev, Options{})
	if r.Verdict != ClassSafe {
		t.Fatalf("observed %v findings %+v, want safe", r.Observed, r.Findings)
	}
	if r.Holds[0].EndReason != "expired" || r.Holds[0].End != 100*ms {
		t.Fatalf("hold %+v, want expired at 100ms", r.Holds[0])
	}
}

func TestLostUpdateIsCorruption(t *testing.T) {
	// c1 pauses between its read and its write (stop-the-world) past its
	// validity; c2 does a whole section meanwhile. c1's write loses c2's
	// increment.
	var h b
	h.grant("c1", "c1-1", 0, 1, 100, 0)
	h.access("c1", "c1-1", "read", 2, 0, 0, false)
	h.grant("c2", "c2-1", 0, 150, 1150, 0)
	h.cs("c2", "c2-1", 151, 160, 0)
	h.release("c2", "c2-1", 161)
	h.access("c1", "c1-1", "write", 300, 1, 0, false)
	h.release("c1", "c1-1", 301)
	r := Check(h.ev, Options{})
	c := classes(r)
	if !c[ClassCorruption] || !c[ClassOverlap] {
		t.Fatalf("observed %v, want corruption and overlap", r.Observed)
	}
	if r.Verdict != ClassOverlap || r.Linearizable != "Illegal" {
		t.Fatalf("verdict %s lin %s", r.Verdict, r.Linearizable)
	}
	var stale bool
	for _, f := range r.Findings {
		if f.Class == ClassOverlap && f.Kind == "stale-access" {
			stale = true
		}
	}
	if !stale {
		t.Fatalf("want a stale-access overlap, got %+v", r.Findings)
	}
}

func TestFencedWriteIsFencedNotCorruption(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 100, 33)
	h.access("c1", "c1-1", "read", 2, 0, 33, false)
	h.grant("c2", "c2-1", 0, 150, 1150, 34)
	h.access("c2", "c2-1", "read", 151, 0, 34, false)
	h.access("c2", "c2-1", "write", 160, 1, 34, false)
	h.release("c2", "c2-1", 161)
	h.access("c1", "c1-1", "write", 300, 0, 33, true) // refused: 33 < 34
	h.release("c1", "c1-1", 301)
	r := Check(h.ev, Options{})
	c := classes(r)
	if !c[ClassFenced] || c[ClassCorruption] || c[ClassOverlap] {
		t.Fatalf("observed %v findings %+v, want only fenced", r.Observed, r.Findings)
	}
	if ok, why := Match(r.Observed, []string{ClassFenced}, nil); !ok {
		t.Fatal(why)
	}
}

// A hold records its first access and its last accepted one (the hunt
// judges a fencing lock's overlap by them).
func TestHoldFirstAndLastAcceptedAccess(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 100, 33)
	h.access("c1", "c1-1", "read", 2, 0, 33, false)
	h.access("c1", "c1-1", "write", 5, 1, 33, false)
	h.access("c1", "c1-1", "write", 300, 0, 33, true)
	h.grant("c2", "c2-1", 0, 150, 1150, 34)
	hs := Holds(h.ev)
	if len(hs) != 2 {
		t.Fatalf("%d holds", len(hs))
	}
	if a := hs[0]; a.FirstAccess != 2*ms || a.LastAccepted != 5*ms || a.LastAccess != 300*ms {
		t.Errorf("c1: first %d, last accepted %d, last %d; want 2, 5, 300 ms", a.FirstAccess/ms, a.LastAccepted/ms, a.LastAccess/ms)
	}
	if b := hs[1]; b.FirstAccess != 0 || b.LastAccepted != 0 || b.LastAccess != 0 {
		t.Errorf("c2, which never accessed: %+v", b)
	}
}

func TestStuck(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 0, 0) // no TTL: never expires
	h.op++
	h.add(history.Event{Time: 2 * ms, Kind: history.Note, Op: "crashed", Process: "c1"})
	for i := int64(0); i < 20; i++ {
		h.op++
		h.add(history.Event{Time: (10 + i*100) * ms, Kind: history.Invoke, Process: "c2", Op: history.OpAcquire, OpID: h.op})
		h.add(history.Event{Time: (10 + i*100 + 90) * ms, Kind: history.Fail, Process: "c2", Op: history.OpAcquire, OpID: h.op})
	}
	r := Check(h.ev, Options{StuckAfter: 500 * time.Millisecond})
	if !classes(r)[ClassStuck] {
		t.Fatalf("observed %v, want stuck", r.Observed)
	}
	if r.Stats.MaxUnavailable < int64(1900*time.Millisecond) {
		t.Fatalf("max unavailable %v", time.Duration(r.Stats.MaxUnavailable))
	}
}

// A stretch without a grant that is longer than the limit only with the
// harness's own stalls in it (path-slow notes with no fault on) is unknown,
// not stuck; stalls during a fault, or too short to explain the excess,
// leave it stuck.
func TestStuckIsNotChargedWithTheHarnessStalls(t *testing.T) {
	stuckFor := func(notes []history.Event, faults [][2]int64) *Result {
		var h b
		h.grant("c1", "c1-1", 0, 1, 0, 0) // no TTL: never expires
		h.op++
		h.add(history.Event{Time: 2 * ms, Kind: history.Note, Op: "crashed", Process: "c1"})
		for i := int64(0); i < 20; i++ { // c2 tries from 10 ms to 1,990 ms
			h.op++
			h.add(history.Event{Time: (10 + i*100) * ms, Kind: history.Invoke, Process: "c2", Op: history.OpAcquire, OpID: h.op})
			h.add(history.Event{Time: (10 + i*100 + 90) * ms, Kind: history.Fail, Process: "c2", Op: history.OpAcquire, OpID: h.op})
		}
		for _, f := range faults {
			h.add(history.Event{Time: f[0] * ms, Kind: history.FaultStart, Fault: "pause-node", Target: "n1"})
			h.add(history.Event{Time: f[1] * ms, Kind: history.FaultEnd, Fault: "pause-node", Target: "n1"})
		}
		h.ev = append(h.ev, notes...)
		return Check(h.ev, Options{StuckAfter: 1500 * time.Millisecond})
	}
	slow := func(target string, end, durMs int64) history.Event {
		return history.Event{Time: end * ms, Kind: history.Note, Op: history.NotePathSlow, Target: target, DurationMs: durMs}
	}
	for _, c := range []struct {
		name   string
		notes  []history.Event
		faults [][2]int64
		want   string
	}{
		{"no stall", nil, nil, ClassStuck},
		{"700 ms of stalls, two paths overlapping", []history.Event{slow("n1", 900, 400), slow("harness", 1000, 300), slow("n2", 1500, 200)}, nil, ClassUnknown},
		{"300 ms of stalls", []history.Event{slow("n1", 900, 300)}, nil, ClassStuck},
		{"600 ms of stalls, all during a fault", []history.Event{slow("n1", 1100, 600)}, [][2]int64{{400, 1200}}, ClassStuck},
		{"600 ms of stalls, half during a fault", []history.Event{slow("n1", 1100, 600)}, [][2]int64{{400, 800}}, ClassStuck},
		{"stalls outside the stretch", []history.Event{slow("n1", 2900, 900)}, nil, ClassStuck},
	} {
		r := stuckFor(c.notes, c.faults)
		got := classes(r)
		if !got[c.want] || (c.want == ClassUnknown && got[ClassStuck]) || (c.want == ClassStuck && got[ClassUnknown]) {
			t.Errorf("%s: observed %v, want %s (findings %+v)", c.name, r.Observed, c.want, r.Findings)
		}
	}
}

// Stalls cuts the fault windows out of the path-slow notes; Stalled counts
// overlapping stalls once.
func TestStalls(t *testing.T) {
	ev := []history.Event{
		{Time: 1000 * ms, Kind: history.Note, Op: history.NotePathSlow, Target: "n1", DurationMs: 1000},
		{Time: 1500 * ms, Kind: history.Note, Op: history.NotePathSlow, Target: "harness", DurationMs: 200},
		{Time: 1600 * ms, Kind: history.Note, Op: "setup", DurationMs: 500}, // not a stall
	}
	faults := []Window{{Fault: "pause-node", Start: 200 * ms, End: 400 * ms}, {Fault: "kill", Start: 1400 * ms}}
	got := Stalls(ev, faults)
	want := [][2]int64{{0, 200 * ms}, {400 * ms, 1000 * ms}, {1300 * ms, 1400 * ms}}
	if len(got) != len(want) {
		t.Fatalf("stalls %+v, want %v", got, want)
	}
	for i, w := range got {
		if w.Start != want[i][0] || w.End != want[i][1] || w.Fault != history.NotePathSlow {
			t.Errorf("stall %d: %+v, want %v", i, w, want[i])
		}
	}
	if s := Stalled(got, 100*ms, 1350*ms); s != 750*ms {
		t.Errorf("stalled over 100..1350 ms: %v, want 750ms", time.Duration(s))
	}
	over := []Window{{Start: 0, End: 500 * ms}, {Start: 100 * ms, End: 300 * ms}, {Start: 400 * ms, End: 900 * ms}}
	if s := Stalled(over, 0, 2000*ms); s != 900*ms {
		t.Errorf("overlapping stalls: %v, want 900ms", time.Duration(s))
	}
}

// A stuck finding quotes the last slow-call note of each process inside
// its stretch (what the waiting worker was doing), and none outside it.
func TestStuckQuotesSlowCalls(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 0, 0) // no TTL: never expires
	h.op++
	h.add(history.Event{Time: 2 * ms, Kind: history.Note, Op: "crashed", Process: "c1"})
	h.op++
	h.add(history.Event{Time: 10 * ms, Kind: history.Invoke, Process: "c2", Op: history.OpAcquire, OpID: h.op})
	for _, n := range []struct {
		at     int64
		detail string
	}{{5, "before the stretch"}, {700, "first"}, {1400, "c2 stopped"}} {
		h.add(history.Event{Time: n.at * ms, Kind: history.Note, Op: history.NoteSlowCall, Process: "c2", Detail: n.detail})
	}
	h.add(history.Event{Time: 2000 * ms, Kind: history.Fail, Process: "c2", Op: history.OpAcquire, OpID: h.op})
	h.add(history.Event{Time: 2100 * ms, Kind: history.Note, Op: history.NoteSlowCall, Process: "c3", Detail: "after the stretch"})
	r := Check(h.ev, Options{StuckAfter: 500 * time.Millisecond})
	var got string
	for _, f := range r.Findings {
		if f.Class == ClassStuck {
			got = f.Detail
		}
	}
	if !strings.HasSuffix(got, "limit 500ms); c2 stopped") {
		t.Errorf("stuck detail %q; want it to end with c2's last slow-call note only", got)
	}
}

// A grant whose reply came after the validity it reported (its node was
// paused: the false-alarm campaign's redis-py, seed 9) lapsed by its own
// account at once, and safety judges it so; its extends that succeeded
// after show the key was still its own, so the other client that kept
// trying while it held and extended was not stuck. Without the extends
// the lapsed lease holds nothing, and the stretch is stuck.
func TestLateExtendsKeepTheKeyForLiveness(t *testing.T) {
	check := func(extends bool) *Result {
		var h b
		h.grant("c1", "c1-1", 100, 2300, 2100, 0) // TTL 2 s dated from the invoke; the reply 0.2 s after
		if extends {
			for at := int64(2900); at <= 8300; at += 600 {
				h.op++
				h.add(history.Event{Time: (at - 2) * ms, Kind: history.Invoke, Process: "c1", Op: history.OpExtend, OpID: h.op, Lease: "c1-1"})
				h.add(history.Event{Time: at * ms, Kind: history.OK, Process: "c1", Op: history.OpExtend, OpID: h.op, Lease: "c1-1", ValidUntil: (at + 2000) * ms})
			}
		}
		for at := int64(2300); at < 9000; at += 3000 {
			h.op++
			h.add(history.Event{Time: at * ms, Kind: history.Invoke, Process: "c2", Op: history.OpAcquire, OpID: h.op})
			h.add(history.Event{Time: (at + 3000) * ms, Kind: history.Fail, Process: "c2", Op: history.OpAcquire, OpID: h.op})
		}
		h.release("c1", "c1-1", 9000)
		return Check(h.ev, Options{StuckAfter: 5 * time.Second})
	}
	r := check(true)
	if classes(r)[ClassStuck] {
		t.Errorf("with late extends: observed %v (%+v), want no stuck: c1 held the key", r.Observed, r.Findings)
	}
	hs := r.Holds
	if len(hs) != 1 || hs[0].End != 2100*ms || hs[0].EndReason != "expired" || hs[0].KeptUntil != 9000*ms {
		t.Errorf("holds %+v: want c1's to end (expired) at 2100 ms and be kept until its release at 9000 ms", hs)
	}
	if r := check(false); !classes(r)[ClassStuck] {
		t.Errorf("without extends: observed %v, want stuck (the lapsed lease held nothing)", r.Observed)
	}
}

// A free key that clients asked for only now and then, seconds apart, was
// not stuck: only a stretch of trying (tries at most tryingGap apart) counts.
func TestSparseTriesAreNotStuck(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 0, 0)
	h.op++
	h.add(history.Event{Time: 2 * ms, Kind: history.Note, Op: "crashed", Process: "c1"})
	for i := int64(0); i < 4; i++ { // one try every 3 s
		h.op++
		h.add(history.Event{Time: (10 + i*3000) * ms, Kind: history.Invoke, Process: "c2", Op: history.OpAcquire, OpID: h.op})
		h.add(history.Event{Time: (10 + i*3000 + 100) * ms, Kind: history.Fail, Process: "c2", Op: history.OpAcquire, OpID: h.op})
	}
	r := Check(h.ev, Options{StuckAfter: 2 * time.Second})
	if classes(r)[ClassStuck] {
		t.Fatalf("observed %v (%+v), want no stuck: nobody kept trying", r.Observed, r.Findings)
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		obs, exp, allow []string
		ok              bool
	}{
		{nil, []string{"safe"}, nil, true},
		{[]string{"overlap"}, []string{"safe"}, nil, false},
		{[]string{"overlap", "corruption"}, []string{"overlap"}, []string{"corruption"}, true},
		{[]string{"overlap", "corruption"}, []string{"overlap"}, nil, false},
		{[]string{"corruption"}, []string{"overlap", "corruption"}, nil, false},
	}
	for _, c := range cases {
		if ok, why := Match(c.obs, c.exp, c.allow); ok != c.ok {
			t.Errorf("Match(%v,%v,%v) = %v (%s)", c.obs, c.exp, c.allow, ok, why)
		}
	}
}

// A worker restarted after a crash can crash again: each hold ends at the
// first death after it began, not only at the process's last one.
func TestHoldEndsAtEachCrash(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.add(history.Event{Time: 200 * ms, Kind: history.Note, Op: "crashed", Process: "c1"})
	h.grant("c1", "c1-2", 1500, 1501, 2501, 0)
	h.add(history.Event{Time: 1700 * ms, Kind: history.Note, Op: "crashed", Process: "c1"})
	h.grant("c2", "c2-1", 2600, 2601, 3601, 0)
	holds := Holds(h.ev)
	if len(holds) != 3 {
		t.Fatalf("holds %+v", holds)
	}
	for i, want := range []int64{200 * ms, 1700 * ms} {
		if holds[i].End != want || holds[i].EndReason != "crashed" {
			t.Errorf("hold %s: end %v (%s), want %v (crashed)", holds[i].Lease, time.Duration(holds[i].End), holds[i].EndReason, time.Duration(want))
		}
	}
}

// Two faults of one kind on one target (latency on n1 for two clients) are
// two windows, both healed: an end closes the newest open start.
func TestFaultsPairsSameKindAndTarget(t *testing.T) {
	ev := []history.Event{
		{Time: 1, Kind: history.FaultStart, Fault: "latency", Target: "n1"},
		{Time: 2, Kind: history.FaultStart, Fault: "latency", Target: "n1"},
		{Time: 5, Kind: history.FaultEnd, Fault: "latency", Target: "n1"},
		{Time: 6, Kind: history.FaultEnd, Fault: "latency", Target: "n1"},
		{Time: 7, Kind: history.FaultStart, Fault: "kill", Target: "n1"},
	}
	ws := Faults(ev)
	if len(ws) != 3 {
		t.Fatalf("%d windows, want 3: %+v", len(ws), ws)
	}
	if ws[0].Start != 1 || ws[0].End != 6 || ws[1].Start != 2 || ws[1].End != 5 {
		t.Errorf("latency windows %+v %+v, want 1-6 and 2-5", ws[0], ws[1])
	}
	if ws[2].End != 0 {
		t.Errorf("unhealed kill got an end: %+v", ws[2])
	}
}

// An extend that succeeds on a lease released with success is a finding;
// one before the release, or one that fails after it, is not.
func TestExtendAfterReleaseIsStale(t *testing.T) {
	extend := func(h *b, p, lease string, at int64, ok bool) {
		h.op++
		h.add(history.Event{Time: at * ms, Kind: history.Invoke, Process: p, Op: history.OpExtend, OpID: h.op, Lease: lease})
		kind := history.Fail
		if ok {
			kind = history.OK
		}
		h.add(history.Event{Time: (at + 1) * ms, Kind: kind, Process: p, Op: history.OpExtend, OpID: h.op, Lease: lease, ValidUntil: (at + 1000) * ms})
	}
	for _, c := range []struct {
		name      string
		afterOK   bool // the extend after the release succeeds
		wantStale bool
	}{
		{"refused after the release", false, false},
		{"granted after the release", true, true},
	} {
		var h b
		h.grant("c1", "c1-1", 0, 1, 1000, 0)
		extend(&h, "c1", "c1-1", 5, true) // while held: fine
		h.cs("c1", "c1-1", 10, 20, 0)
		h.release("c1", "c1-1", 21)
		h.grant("c1", "c1-2", 30, 31, 1031, 0)
		extend(&h, "c1", "c1-1", 35, c.afterOK) // the old lease
		h.cs("c1", "c1-2", 40, 50, 1)
		h.release("c1", "c1-2", 51)
		r := Check(h.ev, Options{})
		stale := 0
		for _, f := range r.Findings {
			if f.Class == ClassStaleExtend {
				stale++
				if f.Leases[0] != "c1-1" || f.From != 22*ms || f.To != 36*ms {
					t.Errorf("%s: finding %+v, want lease c1-1 from its release ok (22 ms) to the extend's ok (36 ms)", c.name, f)
				}
			}
		}
		if (stale == 1) != c.wantStale || stale > 1 {
			t.Errorf("%s: %d stale-extend findings (verdict %s), want stale %v", c.name, stale, r.Verdict, c.wantStale)
		}
		if c.wantStale && r.Verdict != ClassStaleExtend {
			t.Errorf("%s: verdict %s, want %s", c.name, r.Verdict, ClassStaleExtend)
		}
	}
}

// A worker that dies on its own is a finding wherever it dies, the warmup
// before the first cycle included.
func TestDeathInTheWarmupIsDied(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 0, 0)
	h.add(history.Event{Time: 5 * ms, Kind: history.Note, Op: history.NoteCrashed, Process: "c1"})
	h.add(history.Event{Time: 10 * ms, Kind: history.Note, Op: history.NoteCycle, Cycle: 1})
	h.grant("c2", "c2-1", 20*ms, 21*ms, 0, 0)
	h.cs("c2", "c2-1", 22*ms, 23*ms, 1)
	r := Check(h.ev, Options{Evidence: &Evidence{}})
	if !classes(r)[ClassDied] {
		t.Fatalf("observed %v, want died (c1 died in the warmup)", r.Observed)
	}
}

// The evidence "after the fault" counts from the cycle's fault step, not
// from an await's hold of a client's commands (command-hold), which begins
// before the step: a grant between the hold and the fault is not a grant
// after the fault.
func TestEvidenceAfterFaultIgnoresACommandHold(t *testing.T) {
	for _, c := range []struct {
		name      string
		grantAt   int64
		wantShown bool
	}{{"granted between the hold and the fault", 30, false}, {"granted after the fault", 70, true}} {
		var h b
		h.add(history.Event{Time: 10 * ms, Kind: history.Note, Op: history.NoteCycle, Cycle: 1})
		h.add(history.Event{Time: 20 * ms, Kind: history.FaultStart, Fault: history.FaultCommandHold, Target: "c1", Cycle: 1})
		h.add(history.Event{Time: 40 * ms, Kind: history.FaultStart, Fault: "pause-client", Target: "c1", Cycle: 1})
		h.add(history.Event{Time: 45 * ms, Kind: history.FaultEnd, Fault: history.FaultCommandHold, Target: "c1", Cycle: 1})
		h.add(history.Event{Time: 60 * ms, Kind: history.FaultEnd, Fault: "pause-client", Target: "c1", Cycle: 1})
		h.grant("c2", "c2-1", c.grantAt, c.grantAt+1, 0, 0)
		h.add(history.Event{Time: (c.grantAt + 2) * ms, Kind: history.Invoke, Process: "c2", Op: history.OpCS, OpID: 90, Lease: "c2-1"})
		h.cs("c2", "c2-1", c.grantAt+2, c.grantAt+3, 0)
		h.add(history.Event{Time: (c.grantAt + 3) * ms, Kind: history.OK, Process: "c2", Op: history.OpCS, OpID: 90, Lease: "c2-1"})
		sort.SliceStable(h.ev, func(i, j int) bool { return h.ev[i].Time < h.ev[j].Time })
		r := Check(h.ev, Options{Evidence: &Evidence{Grants: 1, Sections: 1, AfterFault: []string{AfterGrant}}})
		if r.Evidence == nil {
			t.Fatalf("%s: no evidence summary", c.name)
		}
		if shown := r.Evidence.Shown == 1; shown != c.wantShown {
			t.Errorf("%s: cycle shown %v (missing %v), want %v", c.name, shown, r.Evidence.Missing, c.wantShown)
		}
	}
}

// A died finding says how the worker ended, from its crashed note (a
// library's segfault reads as one), and not what its stderr said.
func TestDiedSaysHowTheWorkerEnded(t *testing.T) {
	for detail, want := range map[string]string{
		`worker process died (signal: segmentation fault); its stderr ends: "x (y)"`: "exited (signal: segmentation fault) in cycle 1",
		"worker process died (exit status 3)":                                        "exited (exit status 3) in cycle 1",
		"worker process died":                                                        "exited in cycle 1",
		"":                                                                           "exited in cycle 1",
	} {
		var h b
		h.add(history.Event{Time: 10 * ms, Kind: history.Note, Op: history.NoteCycle, Cycle: 1})
		h.grant("c2", "c2-1", 20*ms, 21*ms, 0, 0)
		h.cs("c2", "c2-1", 22*ms, 23*ms, 1)
		h.add(history.Event{Time: 30 * ms, Kind: history.Note, Op: history.NoteCrashed, Process: "c1", Detail: detail})
		r := Check(h.ev, Options{Evidence: &Evidence{}})
		var got string
		for _, f := range r.Findings {
			if f.Class == ClassDied {
				got = f.Detail
			}
		}
		if !strings.Contains(got, "the worker of c1 "+want+" without") {
			t.Errorf("note %q: died finding %q, want it to say %q", detail, got, want)
		}
	}
}
