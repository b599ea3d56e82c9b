package plots

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
	"github.com/lockfault/lockfault/internal/reportfixture"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/report"
)

const ms = int64(time.Millisecond)

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
	ev := reportfixture.Race()
	meta := reportfixture.RaceMeta()
	res := reportfixture.Check(t, ev, &meta)
	if !meta.Matched {
		t.Fatalf("the hand-made race did not give the expected verdict: observed %v (%s)", res.Observed, meta.Why)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, report.FileHistory), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, meta, ev, res); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "race")
	for _, f := range []string{report.FileJSON, report.FileMarkdown, report.FileHTML, report.FileTimeline, report.FileLinearize} {
		nonEmpty(t, filepath.Join(dir, f))
	}

	var got struct {
		Meta    report.Meta     `json:"meta"`
		Verdict string          `json:"verdict"`
		Result  *checker.Result `json:"result"`
		Files   []string        `json:"files"`
	}
	if err := json.Unmarshal(nonEmpty(t, filepath.Join(dir, report.FileJSON)), &got); err != nil {
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

	md := string(nonEmpty(t, filepath.Join(dir, report.FileMarkdown)))
	for _, want := range []string{"overlap", "stale-access", "corruption", "Lost update", "pause(c1)", "c1-2", "![timeline](timeline.png)",
		"[linearizability.html](linearizability.html)", "1 increment lost", "cycle 2: pause c1", "A client paused past its lease"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md does not mention %q", want)
		}
	}
	page := string(nonEmpty(t, filepath.Join(dir, report.FileHTML)))
	if !strings.Contains(page, "<html") || !strings.Contains(page, "data:image/png;base64,") || !strings.Contains(page, "Lost update") {
		t.Errorf("report.html is not a self-contained page with the timeline")
	}
	lin := string(nonEmpty(t, filepath.Join(dir, report.FileLinearize)))
	if !strings.Contains(lin, "<html") || !strings.Contains(lin, "pause(c1)") {
		t.Errorf("linearizability.html lacks the page or the fault annotation")
	}
	checkPNG(t, filepath.Join(dir, report.FileTimeline), 1000, 250)

	sum := report.Summary(dir, meta, res)
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
	meta := reportfixture.RaceMeta()
	meta.Error, meta.Interrupted = "redis-server did not start", true
	dir := t.TempDir()
	if err := report.Write(dir, meta, nil, nil); err != nil {
		t.Fatal(err)
	}
	md := string(nonEmpty(t, filepath.Join(dir, report.FileMarkdown)))
	if !strings.Contains(md, "redis-server did not start") || !strings.Contains(md, "Interrupted") {
		t.Errorf("report.md does not say the run failed:\n%s", md)
	}
	checkPNG(t, filepath.Join(dir, report.FileTimeline), 1000, 100)
	if s := report.Summary(dir, meta, nil); !strings.Contains(s, "HARNESS ERROR") {
		t.Errorf("summary: %s", s)
	}
}

// A longer run: four clients, twelve cycles, a partition in each, an
// unhealed fault at the end, and many holds. Mostly a rendering check.
func TestWriteLongRun(t *testing.T) {
	var h reportfixture.History
	clients := []string{"c1", "c2", "c3", "c10"}
	v := int64(0)
	tm := int64(0)
	for cyc := 1; cyc <= 12; cyc++ {
		h.Cycle(cyc, tm)
		if cyc%3 == 0 {
			h.Fault("partition", "n1", tm+100, tm+900, cyc)
		}
		for i := 0; i < 8; i++ {
			c := clients[(i+cyc)%len(clients)]
			lease := c + "-" + string(rune('a'+cyc)) + string(rune('a'+i))
			h.Grant(c, lease, tm, tm+3, tm+400, 0)
			h.CS(c, lease, tm+5, tm+60, v)
			v++
			h.Release(c, lease, tm+80)
			tm += 120
		}
		if cyc%3 == 0 { // a both-valid overlap while partitioned
			h.Grant("c3", "c3-x"+string(rune('a'+cyc)), tm-200, tm-100, tm+300, 0)
			h.Release("c3", "c3-x"+string(rune('a'+cyc)), tm)
		}
	}
	h.Fault("kill", "redis-1", tm-300, 0, 12)
	meta := report.Meta{Scenario: "failover", Lock: "redlock-3", Backend: "docker", Expect: []string{checker.ClassOverlap}}
	res := reportfixture.Check(t, h.Events(), &meta)
	dir := t.TempDir()
	if err := report.Write(dir, meta, h.Events(), res); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "long")
	checkPNG(t, filepath.Join(dir, report.FileTimeline), 1000, 300)
	md := string(nonEmpty(t, filepath.Join(dir, report.FileMarkdown)))
	if !strings.Contains(md, "unhealed") {
		t.Errorf("report.md does not show the unhealed fault")
	}
}

func TestWriteClaims(t *testing.T) {
	rows := []pages.ClaimRow{
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
	if err := pages.WriteClaims(md, pngPath, rows); err != nil {
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
	var h reportfixture.History
	h.Cycle(1, 0)
	h.Grant("c1", "c1-1", 0, 1, 100, 33)
	h.Access("c1", "c1-1", "read", 2, 0)
	h.Grant("c3", "c3-1", 0, 150, 1150, 34)
	h.CS("c3", "c3-1", 151, 160, 0)
	h.Release("c3", "c3-1", 161)
	h.Add(history.Event{Time: 300 * ms, Kind: history.Access, Process: "c1", Lease: "c1-1", Access: "write", Fence: 33, Rejected: true})
	h.Release("c1", "c1-1", 301)
	h.Cycle(2, 400)
	h.Fault("partition", "n1", 420, 900, 2)
	h.Grant("c2", "c2-1", 400, 405, 0, 0) // no TTL
	h.Add(history.Event{Time: 410 * ms, Kind: history.Note, Op: "crashed", Process: "c2"})
	for i := int64(0); i < 70; i++ {
		h.Fail("c1", 420+i*100, 500+i*100)
	}
	meta := report.Meta{Scenario: "mixed", Lock: "fenced", Backend: "process", Expect: []string{checker.ClassFenced, checker.ClassStuck}}
	res := reportfixture.Check(t, h.Events(), &meta)
	if !meta.Matched {
		t.Fatalf("observed %v: %s", res.Observed, meta.Why)
	}
	dir := t.TempDir()
	if err := report.Write(dir, meta, h.Events(), res); err != nil {
		t.Fatal(err)
	}
	keep(t, dir, "fenced")
	md := string(nonEmpty(t, filepath.Join(dir, report.FileMarkdown)))
	for _, want := range []string{"fenced", "stuck", "Overlap made harmless", "Lock stuck"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	checkPNG(t, filepath.Join(dir, report.FileTimeline), 1000, 250)
}

// The harness's stalls outside faults are a row of the statistics: how
// many, how long together, the longest.
func TestWriteShowsTheHarnessStalls(t *testing.T) {
	var h reportfixture.History
	h.Cycle(1, 0)
	h.Grant("c1", "c1-1", 0, 1, 2000, 33)
	h.CS("c1", "c1-1", 2, 10, 0)
	h.Release("c1", "c1-1", 11)
	h.Fault("pause-node", "n1", 100, 400, 1)
	for _, n := range [][2]int64{{300, 250}, {900, 300}, {1000, 200}} { // end, ms: 50 ms of the first is outside the pause
		h.Add(history.Event{Time: n[0] * ms, Kind: history.Note, Op: history.NotePathSlow, Target: "n1", DurationMs: n[1]})
	}
	meta := report.Meta{Scenario: "stalls", Lock: "single", Backend: "process", Expect: []string{checker.ClassSafe}}
	res := reportfixture.Check(t, h.Events(), &meta)
	dir := t.TempDir()
	if err := report.Write(dir, meta, h.Events(), res); err != nil {
		t.Fatal(err)
	}
	md := string(nonEmpty(t, filepath.Join(dir, report.FileMarkdown)))
	if want := "3 stalls, 450ms in all, the longest 300ms"; !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q", want)
	}
}

// A long run draws every hold and still writes promptly.
func TestWriteManyHolds(t *testing.T) {
	var h reportfixture.History
	v, tm := int64(0), int64(0)
	for i := 0; i < 3000; i++ {
		if i%300 == 0 {
			h.Cycle(i/300+1, tm)
		}
		if i%100 == 50 {
			h.Fault([]string{"partition", "clock-jump"}[i/100%2], "n"+strconv.Itoa(i/100%3+1), tm, tm+400, i/300+1)
		}
		c := "c" + string(rune('1'+i%5))
		lease := c + "-" + strconv.Itoa(i)
		h.Grant(c, lease, tm, tm+1, tm+500, 0)
		h.CS(c, lease, tm+2, tm+8, v)
		v++
		h.Release(c, lease, tm+9)
		tm += 11
	}
	meta := report.Meta{Scenario: "soak", Lock: "single", Expect: []string{checker.ClassSafe}}
	res := reportfixture.Check(t, h.Events(), &meta)
	dir := t.TempDir()
	start := time.Now()
	if err := report.Write(dir, meta, h.Events(), res); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Write took %v for 3000 holds", d)
	}
	keep(t, dir, "many")
	checkPNG(t, filepath.Join(dir, report.FileTimeline), 1000, 250)
}

// linearizability.html is bounded: 20k sequential sections with one lost
// update in the middle give a small page showing the illegal stretch and a
// summary, not 20k operations.
func TestLinearizabilityHTMLIsBounded(t *testing.T) {
	var h reportfixture.History
	v := int64(0)
	tm := int64(0)
	for i := 0; i < 20_000; i++ {
		c := []string{"c1", "c2", "c3"}[i%3]
		lease := fmt.Sprintf("%s-%d", c, i)
		if i == 10_000 { // c1 reads, pauses past its lease; c2 does a whole section; c1 writes
			h.Grant("c1", lease, tm, tm+1, tm+5, 0)
			h.Access("c1", lease, "read", tm+2, v)
			h.Grant("c2", lease+"b", tm+6, tm+7, tm+100, 0)
			h.CS("c2", lease+"b", tm+8, tm+9, v)
			h.Release("c2", lease+"b", tm+10)
			h.Access("c1", lease, "write", tm+11, v+1)
			h.Release("c1", lease, tm+12)
			v++
			tm += 20
			continue
		}
		h.Grant(c, lease, tm, tm+1, tm+100, 0)
		h.CS(c, lease, tm+2, tm+3, v)
		v++
		h.Release(c, lease, tm+4)
		tm += 5
	}
	meta := report.Meta{Scenario: "long", Lock: "single", Expect: []string{checker.ClassOverlap, checker.ClassCorruption}}
	res := reportfixture.Check(t, h.Events(), &meta)
	if !meta.Matched {
		t.Fatalf("observed %v", res.Observed)
	}
	dir := t.TempDir()
	if err := report.Write(dir, meta, h.Events(), res); err != nil {
		t.Fatal(err)
	}
	page := string(nonEmpty(t, filepath.Join(dir, report.FileLinearize)))
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
	var h reportfixture.History
	h.Grant("c1", "c1-1", 0, 1, 100, 0)
	h.Grant("c2", "c2-1", 0, 2, 100, 0)
	h.Grant("c3", "c3-1", 0, 3, 100, 0)
	h.Grant("c4", "c4-1", 0, 4, 100, 0)
	for i := range h.Events() {
		if h.Events()[i].Process == "c1" || h.Events()[i].Process == "c2" {
			h.Events()[i].Key = "alpha"
		} else {
			h.Events()[i].Key = "beta"
		}
	}
	h.Release("c1", "c1-1", 10)
	h.Release("c2", "c2-1", 11)
	h.Release("c3", "c3-1", 12)
	h.Release("c4", "c4-1", 13)
	meta := report.Meta{Scenario: "keys", Lock: "single", Expect: []string{checker.ClassOverlap}}
	res := reportfixture.Check(t, h.Events(), &meta)
	if len(res.Findings) != 2 {
		t.Fatalf("findings %+v", res.Findings)
	}
	dir := t.TempDir()
	if err := report.Write(dir, meta, h.Events(), res); err != nil {
		t.Fatal(err)
	}
	md := string(nonEmpty(t, filepath.Join(dir, report.FileMarkdown)))
	a, b := strings.Index(md, "### key alpha (1 finding)"), strings.Index(md, "### key beta (1 finding)")
	if a < 0 || b < a {
		t.Fatalf("report.md does not group findings by key:\n%s", md)
	}
}
