package pages

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/report"
)

// FileIndex is the one page over a reports folder.
const FileIndex = "index.html"

// IndexSummary says what WriteIndex found.
type IndexSummary struct {
	Path                          string
	Runs, Cards, Campaigns, Hunts int
	// ShardRuns are the runs in campaign shard folders, counted by their
	// campaigns' cells rather than listed (not in Runs).
	ShardRuns int
	// Failures counts the entries shown as failures (runs that did not
	// match, cards with a violation or a harness error, campaigns with a
	// cell that differs or with runs missing, hunts that found a violation
	// or were interrupted).
	Failures int
	// Truncated: the scan stopped at MaxIndexEntries.
	Truncated bool
}

// WriteIndex writes <root>/index.html: one static page (no server, no
// external asset, no script needed to read it) listing every campaign
// (campaign.json: its cells with rates), every report card (suite.json),
// every hunt (hunt.json, its runs folded into its row) and every other run
// (report.json) found under root, newest first, each with
// its outcome and a link to its own report. A checkbox, shown only when
// scripts run, hides every row that is not a failure. Every string from
// the files is escaped by html/template, and a Content-Security-Policy
// allows only the page's own style and script.
func WriteIndex(root string) (IndexSummary, error) {
	d, err := scanIndex(root)
	if err != nil {
		return IndexSummary{}, err
	}
	v := buildIndexView(d, time.Now())
	var b bytes.Buffer
	if err := indexTemplate.Execute(&b, v); err != nil {
		return IndexSummary{}, err
	}
	// A temp file of its own, renamed over the page: shards and runs that
	// share a reports folder rewrite it at the same time, and a reader sees
	// one whole page or the other.
	p := filepath.Join(root, FileIndex)
	tmp, err := os.CreateTemp(root, "."+FileIndex+"-*")
	if err != nil {
		return IndexSummary{}, err
	}
	_, err = tmp.Write(b.Bytes())
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return IndexSummary{}, err
	}
	return IndexSummary{Path: p, Runs: len(d.Runs), ShardRuns: d.ShardRuns, Cards: len(d.Cards), Campaigns: len(d.Campaigns), Hunts: len(d.Hunts), Failures: v.Failures, Truncated: d.Truncated}, nil
}

// The view the template renders: every value a plain string, formatted
// here, escaped there.
type indexView struct {
	Generated   string
	Summary     string
	Failures    int
	Truncated   bool
	TruncatedAt int
	CSP         string
	Campaigns   []campaignView
	Cards       []cardView
	Hunts       []huntView
	Runs        []runView
}

type campaignView struct {
	Name, Link, JUnit, Summary, Problem string
	Fail                                bool
	Cells                               []cellView
	More                                int
}

type cellView struct {
	Subject, Item, Expect, Rate, Others, Verdict, Finding, Report string
	Fail                                                          bool
}

type cardView struct {
	Lock, Worker, Backend, RunID, Started, Tally, Link, Problem string
	Fail                                                        bool
}

type runView struct {
	Started, Scenario, Lock, Backend, Verdict, Expect, Match, Finding, Link, Problem string
	Fail                                                                             bool
}

func buildIndexView(d *indexData, now time.Time) *indexView {
	v := &indexView{Generated: now.UTC().Format("2006-01-02 15:04:05 UTC"), Truncated: d.Truncated, TruncatedAt: MaxIndexEntries, CSP: indexCSP}
	slices.SortStableFunc(d.Campaigns, func(a, b *indexCampaign) int { return b.Report.MergedAt.Compare(a.Report.MergedAt) })
	slices.SortStableFunc(d.Cards, func(a, b *indexCard) int { return b.Card.Started.Compare(a.Card.Started) })
	slices.SortStableFunc(d.Runs, func(a, b *indexRun) int {
		return cmp.Or(b.Started.Compare(a.Started), strings.Compare(a.Dir, b.Dir))
	})
	for _, c := range d.Campaigns {
		cv := campaignView{Name: c.Report.Campaign, Link: fileLink(c.Dir, campaign.FileMarkdown), JUnit: fileLink(c.Dir, campaign.FileJUnit), Problem: c.Problem, Fail: c.Failed()}
		if c.Problem == "" {
			r := c.Report
			cv.Summary = fmt.Sprintf("definition %s, %s; %s; %d cells: %d match, %d differ, %d not claimed, %d without a run",
				campaign.ShortHash(r.DefinitionHash), r.Version, r.CompletenessText(), len(r.Cells),
				r.Count(campaign.Matches), r.Count(campaign.Differs), r.Count(campaign.Unclaimed), r.Count(campaign.NoRuns))
			for i, cell := range r.Cells {
				if i >= MaxIndexCells {
					cv.More = len(r.Cells) - i
					break
				}
				cv.Cells = append(cv.Cells, cellOf(c.Dir, cell))
			}
		}
		v.Campaigns = append(v.Campaigns, cv)
	}
	for _, c := range d.Cards {
		v.Cards = append(v.Cards, cardView{Lock: c.Card.Lock, Worker: c.Card.Worker, Backend: c.Card.Backend, RunID: c.Card.RunID,
			Started: when(c.Card.Started), Tally: c.Card.Tally(), Link: fileLink(c.Dir, FileSuiteHTML), Problem: c.Problem, Fail: c.Failed()})
	}
	slices.SortStableFunc(d.Hunts, func(a, b *indexHunt) int { return b.Hunt.Started.Compare(a.Hunt.Started) })
	for _, h := range d.Hunts {
		v.Hunts = append(v.Hunts, huntViewOf(h))
	}
	for _, r := range d.Runs {
		rv := runView{Started: when(r.Started), Scenario: r.Scenario, Lock: r.Lock, Backend: r.Backend, Link: fileLink(r.Dir, report.FileHTML),
			Expect: strings.Join(r.Expect, ", "), Finding: r.Finding, Problem: r.Problem, Fail: r.Failed()}
		rv.Verdict = r.Verdict
		if len(r.Observed) > 0 {
			rv.Verdict += " (" + strings.Join(r.Observed, ", ") + ")"
		}
		switch {
		case r.Error != "":
			rv.Match = "harness error: " + r.Error
		case r.Matched:
			rv.Match = "yes"
		default:
			rv.Match = "NO: " + r.Why
		}
		if r.Partial {
			rv.Problem = strings.TrimSpace(rv.Problem + fmt.Sprintf(" (only the first %d KiB of report.json were read)", MaxIndexRead>>10))
		}
		v.Runs = append(v.Runs, rv)
	}
	for _, c := range v.Campaigns {
		v.Failures += b2i(c.Fail)
	}
	for _, c := range v.Cards {
		v.Failures += b2i(c.Fail)
	}
	for _, h := range v.Hunts {
		v.Failures += b2i(h.Fail)
	}
	for _, r := range v.Runs {
		v.Failures += b2i(r.Fail)
	}
	v.Summary = indexHeadline(d, v)
	return v
}

// indexHeadline counts each kind of entry at its own level, as its table below
// does: a campaign's runs and cells (unexpected: a cell that differs or has
// no run, as the campaign's own line counts them), cards, hunts, and the
// runs outside campaigns and hunts (unexpected: did not match or failed).
// The runs in campaign shard folders are their campaigns' runs, not more.
func indexHeadline(d *indexData, v *indexView) string {
	var runs, cells, unexpected, incomplete, unreadable int
	for _, c := range d.Campaigns {
		if c.Problem != "" {
			unreadable++
			continue
		}
		runs += c.Report.Done
		cells += len(c.Report.Cells)
		unexpected += c.Report.Count(campaign.Differs) + c.Report.Count(campaign.NoRuns)
		incomplete += b2i(!c.Report.Complete())
	}
	s := count(len(d.Campaigns), "campaign")
	if len(d.Campaigns) > 0 {
		s += fmt.Sprintf(" (%s in %s: %d unexpected", count(runs, "run"), count(cells, "cell"), unexpected)
		if incomplete > 0 {
			s += fmt.Sprintf("; %d incomplete", incomplete)
		}
		if unreadable > 0 {
			s += fmt.Sprintf("; %d unreadable", unreadable)
		}
		s += ")"
	}
	var cardFails, huntFails, runFails int
	for _, c := range v.Cards {
		cardFails += b2i(c.Fail)
	}
	for _, h := range v.Hunts {
		huntFails += b2i(h.Fail)
	}
	for _, r := range v.Runs {
		runFails += b2i(r.Fail)
	}
	s += fmt.Sprintf("; %s (%d with a violation or a harness error); %s (%d found a violation or stopped short); %s outside them (%d unexpected)",
		count(len(v.Cards), "report card"), cardFails, count(len(v.Hunts), "hunt"), huntFails, count(len(v.Runs), "run"), runFails)
	if d.ShardRuns > 0 {
		s += fmt.Sprintf("; the %s in campaign shard folders are their campaigns' runs", count(d.ShardRuns, "run"))
	}
	return s + "."
}

func cellOf(dir string, c campaign.Cell) cellView {
	cv := cellView{Subject: c.Subject.Label, Item: string(c.Item.Kind) + ":" + c.Item.Name,
		Expect: c.Expect.Outcome.Text() + " (" + c.Expect.Source + ")", Verdict: string(c.Verdict), Finding: c.Finding,
		Fail: c.Verdict == campaign.Differs || c.Verdict == campaign.NoRuns}
	if c.Runs > 0 {
		cv.Rate = c.Rate.String()
	}
	var others []string
	for _, o := range c.Others() {
		others = append(others, fmt.Sprintf("%s %d/%d", o.Outcome.Text(), o.K, o.N))
	}
	cv.Others = strings.Join(others, ", ")
	if c.Subject.LibraryVersion != "" {
		cv.Subject += " " + c.Subject.LibraryVersion
	}
	if len(c.Reports) > 0 {
		cv.Report = fileLink(dir, c.Reports[0])
	}
	return cv
}

// fileLink is a file of a folder, relative to the root, as an href.
func fileLink(dir, file string) string {
	if dir == "." || dir == "" {
		return file
	}
	return path.Join(dir, file)
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// count is "1 run" or "3 runs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The page's own style and script, allowed by hash in its
// Content-Security-Policy (nothing else may run or load).
const (
	indexStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:1500px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
h1{border-bottom:2px solid #ddd;padding-bottom:.3em}h2{border-bottom:1px solid #eee;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}tr.fail td.v{background:#fbe0e0}tr.ok td.v{background:#e3f6e3}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}.note{color:#666}
#filter{background:#fff8e5;border:1px solid #e0a000;padding:.4em .8em;display:inline-block}
body.failures-only tr.ok,body.failures-only section.ok{display:none}`
	indexScript = `
var box = document.getElementById("failures");
function only() { document.body.classList.toggle("failures-only", box.checked); }
box.parentNode.parentNode.hidden = false;
box.addEventListener("change", only);
if (location.hash === "#failures") { box.checked = true; only(); }
`
)

var indexCSP = "default-src 'none'; style-src '" + cspHash(indexStyle) + "'; script-src '" + cspHash(indexScript) +
	"'; img-src data:; base-uri 'none'; form-action 'none'"

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// rowClass is a row's class: "fail" rows stay when the filter is on.
func rowClass(fail bool) string {
	if fail {
		return "fail"
	}
	return "ok"
}
