package pages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	ttemplate "text/template"
	"time"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/reportfixture"
	"github.com/lockfault/lockfault/report"
)

const xssClient = "<script>alert(1)</script>"

// indexFixture writes a reports folder: two real run folders (reports.Write
// over checked histories; in one of them the stale client is named
// <script>alert(1)</script>), a report card with a violation, and a merged
// campaign with a cell that matches and one that differs.
func indexFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	// A run whose expectation is not met, the client name an attack.
	ev := reportfixture.Race()
	for i := range ev {
		if ev[i].Process == "c1" {
			ev[i].Process = xssClient
		}
		if ev[i].Target == "c1" {
			ev[i].Target = xssClient
		}
	}
	meta := reportfixture.RaceMeta()
	meta.Expect, meta.Allow, meta.RunID = []string{checker.ClassSafe}, nil, "run-xss"
	res := reportfixture.Check(t, ev, &meta)
	if err := report.Write(filepath.Join(root, "gc-pause", "run-xss"), meta, ev, res); err != nil {
		t.Fatal(err)
	}
	// A run that matched.
	ev, meta = reportfixture.Race(), reportfixture.RaceMeta()
	meta.RunID, meta.Started = "run-ok", meta.Started.Add(time.Hour)
	meta.LockLabel = meta.Lock + "+wait-replicas=1" // a lock run with an option is named by its label
	res = reportfixture.Check(t, ev, &meta)
	if err := report.Write(filepath.Join(root, "gc-pause", "run-ok"), meta, ev, res); err != nil {
		t.Fatal(err)
	}
	c := &card.Card{Lock: "single", Backend: "process", RunID: "card-1", Started: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC), Rows: []card.Row{
		{Property: "exclusion/no-faults", Outcome: card.Held},
		{Property: "failover/sentinel", Outcome: card.Violated, Observed: []string{"overlap"}, Finding: "Two holders at once."},
	}}
	if err := WriteCard(filepath.Join(root, "suite", "single", "card-1"), c); err != nil {
		t.Fatal(err)
	}
	held := campaign.Cell{Key: "lock=single | property:exclusion/no-faults", Subject: campaign.CellSubject{Key: "lock=single", Label: "single", Lock: "single"},
		Item: campaign.RunItem{Kind: campaign.KindProperty, Name: "exclusion/no-faults"}, Expect: campaign.Expectation{Outcome: campaign.Held, Source: campaign.SourcePromise},
		Planned: 20, Runs: 20, Counts: []campaign.Count{{Outcome: campaign.Held, N: 20}}, Rate: campaign.NewRate(campaign.Held, 20, 20), Verdict: campaign.Matches}
	differs := held
	differs.Key, differs.Item.Name = "lock=single | property:crash/mid-acquire", "crash/mid-acquire"
	differs.Counts = []campaign.Count{{Outcome: campaign.Held, N: 17}, {Outcome: campaign.Violated, N: 3}}
	differs.Rate, differs.Verdict = campaign.NewRate(campaign.Held, 17, 20), campaign.Differs
	differs.Finding, differs.Reports = "the lock stayed held by "+xssClient, []string{filepath.Join(root, "gc-pause", "run-xss", report.FileMarkdown)}
	rep := &campaign.Report{Campaign: "nightly", DefinitionHash: "sha256:0123456789abcdef", Version: "test", Shards: 2, Merged: []string{"1/2", "2/2"},
		Planned: 40, Done: 40, MatchLowerBound: campaign.MatchLowerBound, Subjects: []string{"lock=single"},
		Items: []campaign.RunItem{held.Item, differs.Item}, Cells: []campaign.Cell{held, differs}, MergedAt: time.Date(2025, 1, 4, 0, 0, 0, 0, time.UTC)}
	if err := rep.Write(filepath.Join(root, "campaigns", "nightly")); err != nil {
		t.Fatal(err)
	}
	// A hunt that found a violation, one of its runs in its folder (folded
	// into its row). Package hunt's tests index a hunt.json it wrote itself.
	hdir := filepath.Join(root, "hunt", "single", "h1")
	ev, meta = reportfixture.Race(), reportfixture.RaceMeta()
	meta.RunID = "hunt-run"
	if err := report.Write(filepath.Join(hdir, "runs", "hunt-run"), meta, ev, reportfixture.Check(t, ev, &meta)); err != nil {
		t.Fatal(err)
	}
	hj := `{"Lock":"single","Seed":7,"Tried":[{},{},{}],"Inconclusive":1,"Started":"2025-01-05T00:00:00Z","Took":90000000000,
"Findings":[{"Fingerprint":{"Class":"overlap","Kind":"both-valid"},"Original":{"Events":[{},{},{}]},"Minimal":{"Events":[{}]},"Rate":[19,20]}]}`
	if err := os.WriteFile(filepath.Join(hdir, FileHuntJSON), []byte(hj), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestIndexListsEveryEntry(t *testing.T) {
	root := indexFixture(t)
	sum, err := WriteIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Runs != 2 || sum.Cards != 1 || sum.Campaigns != 1 || sum.Hunts != 1 || sum.Failures != 4 || sum.Truncated {
		t.Fatalf("summary %+v: want 2 runs (the hunt's own folded into it), 1 card, 1 campaign, 1 hunt, 4 failures (a run, the card, the campaign, the hunt)", sum)
	}
	page, _ := os.ReadFile(sum.Path)
	for _, w := range []string{
		`href="gc-pause/run-xss/report.html"`, `href="suite/single/card-1/suite.html"`, `href="campaigns/nightly/campaign.md"`,
		`href="gc-pause/run-xss/report.md"`,
		"held 17/20 (95 % CI 64–95 %)", "violated 3/20", "1 held, 1 violated",
		"&lt;script&gt;alert(1)&lt;/script&gt;", "Content-Security-Policy", "single-setnx&#43;wait-replicas=1</td>",
		`href="hunt/single/h1/card.md"`, "3 schedules (1 inconclusive) in 1m30s; 1 run",
		"1 violation: overlap/both-valid (3 → 1 faults, reproduced 19 of 20)",
	} {
		if !strings.Contains(string(page), w) {
			t.Errorf("index.html lacks %q", w)
		}
	}
	if n := strings.Count(string(page), "<script"); n != 1 {
		t.Errorf("%d script elements in the page, want only its own", n)
	}
}

// A report.json is read only as far as its first finding, however large
// its holds are; one whose head alone passes MaxIndexRead is shown as
// unreadable, not read further.
func TestIndexReadsOnlyTheHeadOfAReport(t *testing.T) {
	root := t.TempDir()
	write := func(name, schedule string) {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		pad := strings.Repeat(`{"process":"c1","lease":"l","start":1,"end":2,"end_reason":"release","last_access":0},`, 4*MaxIndexRead/80)
		body := `{"meta":{"scenario":"` + name + `","lock":"single","backend":"process","run_id":"r1","seed":0,"expect":["safe"],"matched":true,` +
			`"schedule":["` + schedule + `"],"started":"2025-01-01T00:00:00Z","duration_ns":1},` +
			`"verdict":"safe","matched":true,"result":{"verdict":"safe","observed":["safe"],"findings":null,"holds":[` + pad + `{}]}}`
		os.WriteFile(filepath.Join(dir, report.FileJSON), []byte(body), 0o644)
	}
	write("big-holds", "cycle 1: no fault")
	write("big-meta", strings.Repeat("x", MaxIndexRead))
	d, err := scanIndex(root)
	if err != nil || len(d.Runs) != 2 {
		t.Fatalf("%v, %d runs", err, len(d.Runs))
	}
	for _, r := range d.Runs {
		switch r.Dir {
		case "big-holds":
			if r.Scenario != "big-holds" || r.Verdict != "safe" || !r.Matched || r.Partial || r.Problem != "" || r.Failed() {
				t.Errorf("a report with 1 MiB of holds after its findings: %+v", r)
			}
		case "big-meta":
			if !r.Partial || r.Problem == "" || !r.Failed() {
				t.Errorf("a report whose meta passes the bound: %+v", r)
			}
		}
	}
}

// pageCheck is what a browser must show of the fixture's index, loaded
// with #failures: the page's own script ran (the filter is shown and on:
// its CSP hash is right), it is the only script element, the attacking
// client name is text, and the rows and links are there.
func pageCheck(dom string) error {
	var errs []error
	if !regexp.MustCompile(`<p id="filter">`).MatchString(dom) {
		errs = append(errs, errors.New("the filter is still hidden: the page's script did not run (is its CSP hash right?)"))
	}
	if !regexp.MustCompile(`<body class="failures-only">`).MatchString(dom) {
		errs = append(errs, errors.New("#failures did not turn the filter on"))
	}
	if n := strings.Count(dom, "<script"); n != 1 {
		errs = append(errs, fmt.Errorf("%d script elements in the DOM, want 1 (the page's own)", n))
	}
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		errs = append(errs, errors.New("the client named <script>alert(1)</script> is not shown as text"))
	}
	for _, w := range []string{`<tr class="fail">`, `<tr class="ok">`, `<a href="gc-pause/run-xss/report.html">report</a>`,
		`<a href="suite/single/card-1/suite.html">card-1</a>`, "<th>rate of the expected outcome</th>", "held 17/20 (95 % CI 64–95 %)",
		`<a href="hunt/single/h1/card.md">card.md</a>`} {
		if !strings.Contains(dom, w) {
			errs = append(errs, fmt.Errorf("the DOM lacks %s", w))
		}
	}
	return errors.Join(errs...)
}

// chromium runs Debian's chromium headless on args and returns its
// standard output. It runs in a process group of its own, killed (by the
// recorded group id) when it ends or overruns, and a profile in a temp dir.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian package chromium): the page is not rendered in a browser")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + t.TempDir()}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // any helper of its group still alive
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// The page renders in a real browser: headless Chromium loads it from the
// file system, runs its script under its Content-Security-Policy, and
// shows the attacking client name as text. The same check fails on the
// page rendered without escaping (text/template): it is the check that
// catches an unescaped string.
func TestIndexRendersInChromium(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed (Debian package chromium): the page is not rendered in a browser")
	}
	root := indexFixture(t)
	sum, err := WriteIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, "--dump-dom", "file://"+sum.Path+"#failures")
	if err := pageCheck(dom); err != nil {
		t.Fatalf("the page as Chromium shows it:\n%v\n%s", err, dom)
	}
	if out := os.Getenv("LOCKFAULT_INDEX_SCREENSHOTS"); out != "" {
		for name, frag := range map[string]string{"index.png": "", "index-failures.png": "#failures"} {
			chromium(t, "--window-size=1400,1100", "--screenshot="+filepath.Join(out, name), "file://"+sum.Path+frag)
		}
	}

	// The broken page: the same template and data through text/template.
	d, _ := scanIndex(root)
	broken := ttemplate.Must(ttemplate.New("index").Funcs(ttemplate.FuncMap(indexFuncs)).Parse(indexPage))
	var b bytes.Buffer
	if err := broken.Execute(&b, buildIndexView(d, time.Now())); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "unescaped.html")
	os.WriteFile(bad, b.Bytes(), 0o644)
	err = pageCheck(chromium(t, "--dump-dom", "file://"+bad+"#failures"))
	if err == nil || !strings.Contains(err.Error(), "script elements in the DOM") || !strings.Contains(err.Error(), "is not shown as text") {
		t.Fatalf("the check passed an unescaped page: %v", err)
	}
}

func BenchmarkWriteIndex3000Runs(b *testing.B) {
	root := b.TempDir()
	src := filepath.Join(root, "src")
	ev, meta := reportfixture.Race(), reportfixture.RaceMeta()
	res := checker.Check(append([]history.Event(nil), ev...), checker.Options{StuckAfter: 5 * time.Second})
	if err := report.Write(src, meta, ev, res); err != nil {
		b.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(src, report.FileJSON))
	for i := range 3000 {
		dir := filepath.Join(root, fmt.Sprintf("scenario-%d", i%30), fmt.Sprintf("run-%05d", i))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, report.FileJSON), data, 0o644)
		os.WriteFile(filepath.Join(dir, report.FileHistory), []byte("{}\n"), 0o644)
	}
	b.ResetTimer()
	for b.Loop() {
		sum, err := WriteIndex(root)
		if err != nil || sum.Runs != 3000 {
			b.Fatalf("%+v %v", sum, err)
		}
	}
}

// TestIndexHeadlineCountsEachLevelOnce: the headline counts a campaign's
// runs and cells as its own line does (runs done, cells that differ or
// have no run), and the runs in its shard folders (a violation a property
// expects is a run that "did not match" on its own) are neither listed
// nor counted as runs or failures of their own.
func TestIndexHeadlineCountsEachLevelOnce(t *testing.T) {
	root := indexFixture(t)
	shard := filepath.Join(root, "nightly", "shard-1")
	for i := range 3 {
		ev, meta := reportfixture.Race(), reportfixture.RaceMeta()
		meta.Expect, meta.Allow, meta.RunID = []string{checker.ClassSafe}, nil, fmt.Sprintf("shard-run-%d", i)
		if err := report.Write(filepath.Join(shard, "runs", meta.RunID), meta, ev, reportfixture.Check(t, ev, &meta)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(shard, campaign.FileResults), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := WriteIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Runs != 2 || sum.ShardRuns != 3 || sum.Failures != 4 {
		t.Errorf("summary %+v: want the 2 runs of the fixture listed, the shard's 3 counted apart, 4 failures as before", sum)
	}
	page, _ := os.ReadFile(sum.Path)
	want := "1 campaign (40 runs in 2 cells: 1 unexpected); 1 report card (1 with a violation or a harness error); " +
		"1 hunt (1 found a violation or stopped short); 2 runs outside them (1 unexpected); " +
		"the 3 runs in campaign shard folders are their campaigns&#39; runs."
	if !strings.Contains(string(page), want) {
		t.Errorf("the headline is not\n  %s\npage:\n%s", want, page[:min(len(page), 3000)])
	}
	// The campaign's own line, below, says the same numbers.
	if !strings.Contains(string(page), "40 of 40 runs") || !strings.Contains(string(page), "2 cells: 1 match, 1 differ, 0 not claimed, 0 without a run") {
		t.Errorf("the campaign's line disagrees with the headline")
	}
	if strings.Contains(string(page), "shard-run-") {
		t.Errorf("a shard's run is listed as a run of its own")
	}
}
