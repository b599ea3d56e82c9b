package card

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sample() *Card {
	return &Card{Lock: "single", Backend: "process", RunID: "r1", Started: time.Unix(0, 0), Duration: 3 * time.Second, Rows: []Row{
		{Property: "liveness/crash", Outcome: Held, Duration: time.Second},
		{Property: "failover/manual", Outcome: Violated, Observed: []string{"overlap"}, BadCycles: 3, Cycles: 5,
			Finding: "Two holders at once: c1 and c2.", Findings: []string{"Two holders at once: c1 and c2."}, Report: "failover/r/report.md"},
		{Property: "fencing/monotonic", Outcome: NotClaimed, Finding: "single does not claim fencing"},
		{Property: "clock/jump", Outcome: HarnessError, Finding: "start cluster: boom"},
	}}
}

var known = func(p string) bool {
	return p == "liveness/crash" || p == "failover/manual" || p == "fencing/monotonic" || p == "clock/jump"
}

func TestBaselineIsSortedStableAndRoundTrips(t *testing.T) {
	c := sample()
	if _, err := FormatBaseline(c); err == nil || !strings.Contains(err.Error(), "clock/jump: harness error") {
		t.Fatalf("a card with a harness error was written as a baseline: %v", err)
	}
	c.Rows = c.Rows[:3]
	a, err := FormatBaseline(c)
	if err != nil {
		t.Fatal(err)
	}
	// Another run of the same lock: other run id, times, order, reports.
	c2 := sample()
	c2.Rows = []Row{c.Rows[2], c.Rows[0], c.Rows[1]}
	c2.RunID, c2.Started, c2.Rows[2].Report = "r2", time.Now(), "elsewhere"
	b, _ := FormatBaseline(c2)
	if string(a) != string(b) {
		t.Fatalf("baseline not stable across runs:\n%s\nvs\n%s", a, b)
	}
	want := "failover/manual    violated\nfencing/monotonic  not-claimed\nliveness/crash     held\n"
	if !strings.HasSuffix(string(a), want) {
		t.Fatalf("baseline body:\n%s\nwant suffix:\n%s", a, want)
	}
	bl, err := ParseBaseline("b.txt", a, known)
	if err != nil {
		t.Fatal(err)
	}
	if d := bl.Compare(c); d.Exit() != 0 || len(d.Regressions)+len(d.Improvements)+len(d.Other) != 0 {
		t.Fatalf("same card differs from its own baseline: %+v", d)
	}
}

func TestBaselineErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ text, want string }{
		{"# c\nliveness/crash held\nnope/x held\n", `b.txt:3: property: "nope/x" is not a property of the suite`},
		{"liveness/crash fine\n", `b.txt:1: outcome: "fine" is not allowed (allowed: held, violated, not-claimed)`},
		{"liveness/crash harness-error\n", `b.txt:1: outcome: "harness-error" is not allowed`},
		{"\nliveness/crash\n", "b.txt:2: want two fields, property and outcome, got 1"},
		{"liveness/crash held\nliveness/crash held\n", "b.txt:2: property: liveness/crash is listed twice (first at line 1)"},
		{"# only comments\n", "b.txt:1: no property in the baseline"},
	}
	for _, c := range cases {
		_, err := ParseBaseline("b.txt", []byte(c.text), known)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}

func TestDiffRegressionImprovementHarness(t *testing.T) {
	bl, err := ParseBaseline("b.txt", []byte("liveness/crash held\nfailover/manual violated\nfencing/monotonic held\n"), known)
	if err != nil {
		t.Fatal(err)
	}
	now := &Card{Lock: "single", Rows: []Row{
		{Property: "liveness/crash", Outcome: Violated, Finding: "stuck", Report: "x/report.md"},
		{Property: "failover/manual", Outcome: Held},
		{Property: "fencing/monotonic", Outcome: Held},
	}}
	d := bl.Compare(now)
	if d.Exit() != 1 || len(d.Regressions) != 1 || d.Regressions[0].Property != "liveness/crash" ||
		d.Regressions[0].Before != Held || d.Regressions[0].Now != Violated {
		t.Fatalf("regression not found: %+v", d)
	}
	if len(d.Improvements) != 1 || d.Improvements[0].Property != "failover/manual" {
		t.Fatalf("improvement not reported: %+v", d)
	}
	txt := d.Text("b.txt")
	for _, w := range []string{"REGRESSED", "liveness/crash", "before held", "now violated", "report x/report.md", "improved", "failover/manual"} {
		if !strings.Contains(txt, w) {
			t.Errorf("diff text lacks %q:\n%s", w, txt)
		}
	}
	// Only improvements: exit 0.
	now.Rows[0].Outcome = Held
	if d := bl.Compare(now); d.Exit() != 0 {
		t.Fatalf("improvement only: exit %d", d.Exit())
	}
	// Held -> no longer claimed is a regression too.
	now.Rows[2].Outcome = NotClaimed
	if d := bl.Compare(now); d.Exit() != 1 {
		t.Fatalf("held -> not claimed: exit %d", d.Exit())
	}
	// A harness error wins: exit 2.
	now.Rows[1].Outcome = HarnessError
	if d := bl.Compare(now); d.Exit() != 2 {
		t.Fatalf("harness error: exit %d", d.Exit())
	}
}

func TestJUnitOneCasePerPropertyWithItsOutcome(t *testing.T) {
	c := sample()
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := c.WriteJUnit(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var doc JUnitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Skipped != 1 || s.Errors != 1 || len(s.Cases) != 4 {
		t.Fatalf("counts: %+v", s)
	}
	got := map[string]string{}
	for _, tc := range s.Cases {
		switch {
		case tc.Failure != nil:
			got[tc.Name] = "failure:" + tc.Failure.Message
		case tc.Skipped != nil:
			got[tc.Name] = "skipped"
		case tc.Error != nil:
			got[tc.Name] = "error"
		default:
			got[tc.Name] = "pass"
		}
	}
	want := map[string]string{"liveness/crash": "pass", "failover/manual": "failure:Two holders at once: c1 and c2. (report: failover/r/report.md)",
		"fencing/monotonic": "skipped", "clock/jump": "error"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestCardTextAndJSON(t *testing.T) {
	c := sample()
	txt := c.Text()
	for _, w := range []string{"lock single", "failover/manual", "violated: overlap in 3/5 cycles: Two holders", "report: failover/r/report.md",
		"not claimed: single does not claim fencing", "1 held, 1 violated, 1 not claimed, 1 harness error"} {
		if !strings.Contains(txt, w) {
			t.Errorf("card text lacks %q:\n%s", w, txt)
		}
	}
	path := filepath.Join(t.TempDir(), "suite.json")
	if err := c.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil || len(back.Rows) != 4 || back.Rows[1].Outcome != Violated || back.Rows[1].BadCycles != 3 {
		t.Fatalf("json round trip: %v %+v", err, back)
	}
}
