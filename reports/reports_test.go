package reports

import (
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

const ms = int64(time.Millisecond)

// hb builds hand-made histories with a clock in milliseconds, starting at
// an arbitrary monotonic offset as real histories do.
type hb struct {
	ev []history.Event
	op int64
}

const base = 5_000_000 * ms

func (h *hb) add(e history.Event) {
	e.Time += base
	e.Seq = int64(len(h.ev) + 1)
	h.ev = append(h.ev, e)
}

func (h *hb) grant(p, lease string, inv, ok, validUntil, fence int64) {
	h.op++
	h.add(history.Event{Time: inv * ms, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: h.op})
	vu := int64(0)
	if validUntil > 0 {
		vu = base + validUntil*ms
	}
	h.add(history.Event{Time: ok * ms, Kind: history.OK, Process: p, Op: history.OpAcquire, OpID: h.op, Lease: lease, ValidUntil: vu, Fence: fence})
}

func (h *hb) fail(p string, inv, at int64) {
	h.op++
	h.add(history.Event{Time: inv * ms, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: h.op})
	h.add(history.Event{Time: at * ms, Kind: history.Fail, Process: p, Op: history.OpAcquire, OpID: h.op})
}

func (h *hb) release(p, lease string, at int64) {
	h.op++
	h.add(history.Event{Time: at * ms, Kind: history.Invoke, Process: p, Op: history.OpRelease, OpID: h.op, Lease: lease})
	h.add(history.Event{Time: (at + 1) * ms, Kind: history.OK, Process: p, Op: history.OpRelease, OpID: h.op, Lease: lease})
}

func (h *hb) access(p, lease, kind string, at, value int64) {
	h.add(history.Event{Time: at * ms, Kind: history.Access, Process: p, Lease: lease, Access: kind, Value: history.Int64(value)})
}

// cs is a critical section reading v at r and writing v+1 at w.
func (h *hb) cs(p, lease string, r, w, v int64) {
	h.op++
	h.add(history.Event{Time: r * ms, Kind: history.Invoke, Process: p, Op: history.OpCS, OpID: h.op, Lease: lease})
	h.access(p, lease, "read", r, v)
	h.access(p, lease, "write", w, v+1)
	h.add(history.Event{Time: w * ms, Kind: history.OK, Process: p, Op: history.OpCS, OpID: h.op, Lease: lease, Read: history.Int64(v), Wrote: history.Int64(v + 1)})
}

func (h *hb) fault(name, target string, start, end int64, cycle int) {
	h.add(history.Event{Time: start * ms, Kind: history.FaultStart, Fault: name, Target: target, Cycle: cycle})
	if end > 0 {
		h.add(history.Event{Time: end * ms, Kind: history.FaultEnd, Fault: name, Target: target, Cycle: cycle})
	}
}

func (h *hb) cycle(n int, at int64) {
	h.add(history.Event{Time: at * ms, Kind: history.Note, Op: "cycle", Cycle: n})
}

// raceHistory: two clients, two cycles. Cycle 1 is clean. In cycle 2 a
// pause fault stops c1 between its read and its write, past its lease's
// validity; c2 gets the lock and does a whole section; c1 then writes,
// losing c2's increment (a stale-access overlap and a lost update).
func raceHistory() []history.Event {
	var h hb
	h.cycle(1, 0)
	h.grant("c1", "c1-1", 0, 2, 200, 0)
	h.cs("c1", "c1-1", 5, 40, 0)
	h.release("c1", "c1-1", 45)
	h.fail("c2", 10, 30)
	h.grant("c2", "c2-1", 35, 50, 250, 0)
	h.cs("c2", "c2-1", 55, 90, 1)
	h.release("c2", "c2-1", 95)

	h.cycle(2, 300)
	h.grant("c1", "c1-2", 300, 302, 500, 0)
	h.access("c1", "c1-2", "read", 310, 2)
	h.fault("pause", "c1", 320, 700, 2)
	h.fail("c2", 320, 400)
	h.grant("c2", "c2-2", 410, 510, 710, 0)
	h.cs("c2", "c2-2", 515, 560, 2)
	h.release("c2", "c2-2", 600)
	h.access("c1", "c1-2", "write", 705, 3) // stale: c1's lease ran out at 500
	h.release("c1", "c1-2", 710)
	return h.ev
}

func raceMeta() Meta {
	return Meta{
		Scenario: "gc-pause", Claim: "A client paused past its lease corrupts the resource without fencing",
		Description: "Stop c1 between read and write for longer than the lease.", Lock: "single-setnx",
		Backend: "process", RunID: "test-1", Seed: 42,
		Expect: []string{checker.ClassCorruption}, Allow: []string{checker.ClassOverlap},
		Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 1500 * time.Millisecond,
		Schedule: []string{"cycle 1: no fault", "cycle 2: pause c1 for 380ms"},
	}
}

func check(t *testing.T, ev []history.Event, meta *Meta) *checker.Result {
	t.Helper()
	res := checker.Check(append([]history.Event(nil), ev...), checker.Options{StuckAfter: 5 * time.Second})
	meta.Matched, meta.Why = checker.Match(res.Observed, meta.Expect, meta.Allow)
	return res
}

func nonEmpty(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatalf("%s is empty", path)
	}
	return data
}

func checkPNG(t *testing.T, path string, minW, minH int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < minW || b.Dy() < minH || b.Dx() > 5000 || b.Dy() > 5000 {
		t.Fatalf("%s: size %dx%d", path, b.Dx(), b.Dy())
	}
}

// keep copies a report to $REPORTS_SAMPLE_DIR/name, to look at by hand.
func keep(t *testing.T, dir, name string) {
	out := os.Getenv("REPORTS_SAMPLE_DIR")
	if out == "" {
		return
	}
	dst := filepath.Join(out, name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644)
		}
	}
}

func TestWrite(t *testing.T) {
	ev := raceHistory()
	meta := raceMeta()
	res := check(t, ev, &meta)
	if !meta.Matched {
		t.Fatalf("the hand-made race did not give the expected verdict: observed %v (%s)", res.Observed, meta.Why)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileHistory), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, meta, ev, res); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "race")
	for _, f := range []string{FileJSON, FileMarkdown, FileHTML, FileTimeline, FileLinearize} {
		nonEmpty(t, filepath.Join(dir, f))
	}

	var got struct {
		Meta    Meta            `json:"meta"`
		Verdict string          `json:"verdict"`
		Result  *checker.Result `json:"result"`
		Files   []string        `json:"files"`
	}
	if err := json.Unmarshal(nonEmpty(t, filepath.Join(dir, FileJSON)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Verdict != checker.ClassOverlap || got.Result == nil || got.Result.Verdict != checker.ClassOverlap {
		t.Fatalf("report.json verdict %q / %+v", got.Verdict, got.Result)
	}
	if got.Meta.Scenario != "gc-pause" || !got.Meta.Matched || got.Meta.Duration != meta.Duration {
		t.Fatalf("report.json meta %+v", got.Meta)
	}
	if strings.Join(got.Files, ",") != "history.jsonl,linearizability.html,report.html,report.json,report.md,timeline.png" {
		t.Fatalf("files %v", got.Files)
	}

	md := string(nonEmpty(t, filepath.Join(dir, FileMarkdown)))
	for _, want := range []string{"overlap", "stale-access", "corruption", "Lost update", "pause(c1)", "c1-2", "![timeline](timeline.png)",
		"[linearizability.html](linearizability.html)", "1 increment lost", "cycle 2: pause c1", "A client paused past its lease"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md does not mention %q", want)
		}
	}
	page := string(nonEmpty(t, filepath.Join(dir, FileHTML)))
	if !strings.Contains(page, "<html") || !strings.Contains(page, "data:image/png;base64,") || !strings.Contains(page, "Lost update") {
		t.Errorf("report.html is not a self-contained page with the timeline")
	}
	lin := string(nonEmpty(t, filepath.Join(dir, FileLinearize)))
	if !strings.Contains(lin, "<html") || !strings.Contains(lin, "pause(c1)") {
		t.Errorf("linearizability.html lacks the page or the fault annotation")
	}
	checkPNG(t, filepath.Join(dir, FileTimeline), 1000, 250)

	sum := Summary(dir, meta, res)
	n := strings.Count(sum, "\n") + 1
	if n < 5 || n > 10 {
		t.Errorf("summary has %d lines:\n%s", n, sum)
	}
	for _, want := range []string{"gc-pause", "single-setnx", "corruption", "yes", "report.md", "1/2"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

// A harness failure before any check: no result, still a report.
func TestWriteWithoutResult(t *testing.T) {
	meta := raceMeta()
	meta.Error, meta.Interrupted = "redis-server did not start", true
	dir := t.TempDir()
	if err := Write(dir, meta, nil, nil); err != nil {
		t.Fatal(err)
	}
	md := string(nonEmpty(t, filepath.Join(dir, FileMarkdown)))
	if !strings.Contains(md, "redis-server did not start") || !strings.Contains(md, "Interrupted") {
		t.Errorf("report.md does not say the run failed:\n%s", md)
	}
	checkPNG(t, filepath.Join(dir, FileTimeline), 1000, 100)
	if s := Summary(dir, meta, nil); !strings.Contains(s, "HARNESS ERROR") {
		t.Errorf("summary: %s", s)
	}
}

// A longer run: four clients, twelve cycles, a partition in each, an
// unhealed fault at the end, and many holds. Mostly a rendering check.
func TestWriteLongRun(t *testing.T) {
	var h hb
	clients := []string{"c1", "c2", "c3", "c10"}
	v := int64(0)
	tm := int64(0)
	for cyc := 1; cyc <= 12; cyc++ {
		h.cycle(cyc, tm)
		if cyc%3 == 0 {
			h.fault("partition", "n1", tm+100, tm+900, cyc)
		}
		for i := 0; i < 8; i++ {
			c := clients[(i+cyc)%len(clients)]
			lease := c + "-" + string(rune('a'+cyc)) + string(rune('a'+i))
			h.grant(c, lease, tm, tm+3, tm+400, 0)
			h.cs(c, lease, tm+5, tm+60, v)
			v++
			h.release(c, lease, tm+80)
			tm += 120
		}
		if cyc%3 == 0 { // a both-valid overlap while partitioned
			h.grant("c3", "c3-x"+string(rune('a'+cyc)), tm-200, tm-100, tm+300, 0)
			h.release("c3", "c3-x"+string(rune('a'+cyc)), tm)
		}
	}
	h.fault("kill", "redis-1", tm-300, 0, 12)
	meta := Meta{Scenario: "failover", Lock: "redlock-3", Backend: "docker", Expect: []string{checker.ClassOverlap}}
	res := check(t, h.ev, &meta)
	dir := t.TempDir()
	if err := Write(dir, meta, h.ev, res); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "long")
	checkPNG(t, filepath.Join(dir, FileTimeline), 1000, 300)
	md := string(nonEmpty(t, filepath.Join(dir, FileMarkdown)))
	if !strings.Contains(md, "unhealed") {
		t.Errorf("report.md does not show the unhealed fault")
	}
}

func TestWriteClaims(t *testing.T) {
	rows := []ClaimRow{
		{Claim: "A single Redis lock with a TTL gives mutual exclusion across a GC pause", Scenario: "gc-pause", Lock: "single-setnx",
			Expect: []string{"corruption"}, Observed: []string{"corruption", "overlap"}, Matched: true, Hits: 3, Cycles: 10, Report: "gc-pause-single-setnx/report.md"},
		{Claim: "A single Redis lock with a TTL gives mutual exclusion across a GC pause", Scenario: "gc-pause", Lock: "fenced-token",
			Expect: []string{"fenced"}, Observed: []string{"fenced"}, Matched: true, Hits: 4, Cycles: 10, Report: "gc-pause-fenced-token/report.md"},
		{Claim: "Redlock survives the failover of one master", Scenario: "failover", Lock: "redlock-5-masters-with-a-long-name",
			Expect: []string{"safe"}, Observed: []string{"overlap"}, Matched: false, Hits: 0, Cycles: 10, Rate: "overlap in 2/10 cycles",
			Report: "failover-redlock/report.md", Note: "clock jump"},
		{Claim: "Redlock survives the failover of one master", Scenario: "failover", Lock: "single-setnx",
			Expect: []string{"overlap"}, Observed: nil, Matched: false, Hits: 0, Cycles: 10, Report: "failover-single/report.md"},
	}
	dir := t.TempDir()
	md, pngPath := filepath.Join(dir, "claims.md"), filepath.Join(dir, "img", "claims.png")
	if err := WriteClaims(md, pngPath, rows); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "claims")
	keep(t, filepath.Join(dir, "img"), "claims")
	text := string(nonEmpty(t, md))
	for _, want := range []string{"| claim | single-setnx | fenced-token |", "corruption in 3/10 cycles", "overlap in 2/10 cycles",
		"(gc-pause-single-setnx/report.md)", "![claims matrix](img/claims.png)", "❌", "✅", "clock jump"} {
		if !strings.Contains(text, want) {
			t.Errorf("claims.md lacks %q", want)
		}
	}
	checkPNG(t, pngPath, 500, 150)
}

// Fencing, a crash and a stuck lock: the other marks of the timeline.
func TestWriteFencedCrashStuck(t *testing.T) {
	var h hb
	h.cycle(1, 0)
	h.grant("c1", "c1-1", 0, 1, 100, 33)
	h.access("c1", "c1-1", "read", 2, 0)
	h.grant("c3", "c3-1", 0, 150, 1150, 34)
	h.cs("c3", "c3-1", 151, 160, 0)
	h.release("c3", "c3-1", 161)
	h.add(history.Event{Time: 300 * ms, Kind: history.Access, Process: "c1", Lease: "c1-1", Access: "write", Fence: 33, Rejected: true})
	h.release("c1", "c1-1", 301)
	h.cycle(2, 400)
	h.fault("partition", "n1", 420, 900, 2)
	h.grant("c2", "c2-1", 400, 405, 0, 0) // no TTL
	h.add(history.Event{Time: 410 * ms, Kind: history.Note, Op: "crashed", Process: "c2"})
	for i := int64(0); i < 70; i++ {
		h.fail("c1", 420+i*100, 500+i*100)
	}
	meta := Meta{Scenario: "mixed", Lock: "fenced", Backend: "process", Expect: []string{checker.ClassFenced, checker.ClassStuck}}
	res := check(t, h.ev, &meta)
	if !meta.Matched {
		t.Fatalf("observed %v: %s", res.Observed, meta.Why)
	}
	dir := t.TempDir()
	if err := Write(dir, meta, h.ev, res); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "fenced")
	md := string(nonEmpty(t, filepath.Join(dir, FileMarkdown)))
	for _, want := range []string{"fenced", "stuck", "Overlap made harmless", "Lock stuck"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	checkPNG(t, filepath.Join(dir, FileTimeline), 1000, 250)
}

// The harness's stalls outside faults are a row of the statistics: how
// many, how long together, the longest.
func TestWriteShowsTheHarnessStalls(t *testing.T) {
	var h hb
	h.cycle(1, 0)
	h.grant("c1", "c1-1", 0, 1, 2000, 33)
	h.cs("c1", "c1-1", 2, 10, 0)
	h.release("c1", "c1-1", 11)
	h.fault("pause-node", "n1", 100, 400, 1)
	for _, n := range [][2]int64{{300, 250}, {900, 300}, {1000, 200}} { // end, ms: 50 ms of the first is outside the pause
		h.add(history.Event{Time: n[0] * ms, Kind: history.Note, Op: history.NotePathSlow, Target: "n1", DurationMs: n[1]})
	}
	meta := Meta{Scenario: "stalls", Lock: "single", Backend: "process", Expect: []string{checker.ClassSafe}}
	res := check(t, h.ev, &meta)
	dir := t.TempDir()
	if err := Write(dir, meta, h.ev, res); err != nil {
		t.Fatal(err)
	}
	md := string(nonEmpty(t, filepath.Join(dir, FileMarkdown)))
	if want := "3 stalls, 450ms in all, the longest 300ms"; !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q", want)
	}
}

// A long run draws every hold and still writes promptly.
func TestWriteManyHolds(t *testing.T) {
	var h hb
	v, tm := int64(0), int64(0)
	for i := 0; i < 3000; i++ {
		if i%300 == 0 {
			h.cycle(i/300+1, tm)
		}
		if i%100 == 50 {
			h.fault([]string{"partition", "clock-jump"}[i/100%2], "n"+strconv.Itoa(i/100%3+1), tm, tm+400, i/300+1)
		}
		c := "c" + string(rune('1'+i%5))
		lease := c + "-" + strconv.Itoa(i)
		h.grant(c, lease, tm, tm+1, tm+500, 0)
		h.cs(c, lease, tm+2, tm+8, v)
		v++
		h.release(c, lease, tm+9)
		tm += 11
	}
	meta := Meta{Scenario: "soak", Lock: "single", Expect: []string{checker.ClassSafe}}
	res := check(t, h.ev, &meta)
	dir := t.TempDir()
	start := time.Now()
	if err := Write(dir, meta, h.ev, res); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Write took %v for 3000 holds", d)
	}
	keep(t, dir, "many")
	checkPNG(t, filepath.Join(dir, FileTimeline), 1000, 250)
}

// linearizability.html is bounded: 20k sequential sections with one lost
// update in the middle give a small page showing the illegal stretch and a
// summary, not 20k operations.
func TestLinearizabilityHTMLIsBounded(t *testing.T) {
	var h hb
	v := int64(0)
	tm := int64(0)
	for i := 0; i < 20_000; i++ {
		c := []string{"c1", "c2", "c3"}[i%3]
		lease := fmt.Sprintf("%s-%d", c, i)
		if i == 10_000 { // c1 reads, pauses past its lease; c2 does a whole section; c1 writes
			h.grant("c1", lease, tm, tm+1, tm+5, 0)
			h.access("c1", lease, "read", tm+2, v)
			h.grant("c2", lease+"b", tm+6, tm+7, tm+100, 0)
			h.cs("c2", lease+"b", tm+8, tm+9, v)
			h.release("c2", lease+"b", tm+10)
			h.access("c1", lease, "write", tm+11, v+1)
			h.release("c1", lease, tm+12)
			v++
			tm += 20
			continue
		}
		h.grant(c, lease, tm, tm+1, tm+100, 0)
		h.cs(c, lease, tm+2, tm+3, v)
		v++
		h.release(c, lease, tm+4)
		tm += 5
	}
	meta := Meta{Scenario: "long", Lock: "single", Expect: []string{checker.ClassOverlap, checker.ClassCorruption}}
	res := check(t, h.ev, &meta)
	if !meta.Matched {
		t.Fatalf("observed %v", res.Observed)
	}
	dir := t.TempDir()
	if err := Write(dir, meta, h.ev, res); err != nil {
		t.Fatal(err)
	}
	page := string(nonEmpty(t, filepath.Join(dir, FileLinearize)))
	if len(page) > 200_000 {
		t.Fatalf("linearizability.html is %d bytes for 20k sections; want it bounded", len(page))
	}
	for _, w := range []string{"20001 critical sections", "Illegal", "10000 read 10000 wrote 10001"} {
		if !strings.Contains(page, w) {
			t.Errorf("linearizability.html lacks %q", w)
		}
	}
}

// Findings are grouped by key in the report when there are several keys.
func TestFindingsGroupedByKey(t *testing.T) {
	var h hb
	h.grant("c1", "c1-1", 0, 1, 100, 0)
	h.grant("c2", "c2-1", 0, 2, 100, 0)
	h.grant("c3", "c3-1", 0, 3, 100, 0)
	h.grant("c4", "c4-1", 0, 4, 100, 0)
	for i := range h.ev {
		if h.ev[i].Process == "c1" || h.ev[i].Process == "c2" {
			h.ev[i].Key = "alpha"
		} else {
			h.ev[i].Key = "beta"
		}
	}
	h.release("c1", "c1-1", 10)
	h.release("c2", "c2-1", 11)
	h.release("c3", "c3-1", 12)
	h.release("c4", "c4-1", 13)
	meta := Meta{Scenario: "keys", Lock: "single", Expect: []string{checker.ClassOverlap}}
	res := check(t, h.ev, &meta)
	if len(res.Findings) != 2 {
		t.Fatalf("findings %+v", res.Findings)
	}
	dir := t.TempDir()
	if err := Write(dir, meta, h.ev, res); err != nil {
		t.Fatal(err)
	}
	md := string(nonEmpty(t, filepath.Join(dir, FileMarkdown)))
	a, b := strings.Index(md, "### key alpha (1 finding)"), strings.Index(md, "### key beta (1 finding)")
	if a < 0 || b < a {
		t.Fatalf("report.md does not group findings by key:\n%s", md)
	}
}
