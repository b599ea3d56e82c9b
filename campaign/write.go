package campaign

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockfault/lockfault/card"
)

// Files a merged campaign's folder holds.
const (
	FileJSON     = "campaign.json"
	FileMarkdown = "campaign.md"
	FileJUnit    = "junit.xml"
)

// MaxReportSize bounds campaign.json when it is read back.
const MaxReportSize = 64 << 20

// Write writes campaign.json, campaign.md (the cards table with rates) and
// junit.xml into dir. The reports the cells link are made relative to dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rel := *r
	rel.Cells = slices.Clone(r.Cells)
	for i := range rel.Cells {
		c := &rel.Cells[i]
		c.Reports = slices.Clone(c.Reports)
		for j, p := range c.Reports {
			c.Reports[j] = linkFrom(dir, p)
		}
	}
	var errs []error
	data, err := json.MarshalIndent(&rel, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, FileJSON), append(data, '\n'), 0o644)
	}
	errs = append(errs, err)
	errs = append(errs, os.WriteFile(filepath.Join(dir, FileMarkdown), []byte(rel.Markdown()), 0o644))
	x, err := xml.MarshalIndent(rel.JUnit(), "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, FileJUnit), append([]byte(xml.Header), append(x, '\n')...), 0o644)
	}
	errs = append(errs, err)
	return errors.Join(errs...)
}

// linkFrom is path relative to dir (with forward slashes, ".." if need
// be), or path itself when there is no relative way.
func linkFrom(dir, path string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if rel, err := filepath.Rel(ad, ap); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// ReadReport reads a campaign.json (at most MaxReportSize bytes, no
// unknown field).
func ReadReport(path string) (*Report, error) {
	data, err := readBounded(path, MaxReportSize)
	if err != nil {
		return nil, err
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &r, nil
}

// JUnit is the campaign as JUnit XML: one testsuite per subject, one
// testcase per cell. A cell that differs from its expectation is a
// failure whose message is its rate; a cell with no run is an error; a
// cell whose lock does not claim the item is skipped. An incomplete
// campaign (a shard missing or cut short) adds an erroring testcase
// "campaign/complete", so that CI does not pass on half the runs.
func (r *Report) JUnit() card.JUnitSuites {
	var out card.JUnitSuites
	for _, key := range r.Subjects {
		label := r.subjectLabel(key)
		s := card.JUnitSuite{Name: "lockfault campaign " + r.Campaign + ": " + label,
			Props: []card.JUnitProperty{{Name: "subject", Value: key}, {Name: "definition_hash", Value: r.DefinitionHash},
				{Name: "lockfault_version", Value: r.Version}, {Name: "match_lower_bound", Value: fmt.Sprint(r.MatchLowerBound)}}}
		var secs float64
		for _, c := range r.Cells {
			if c.Subject.Key != key {
				continue
			}
			if c.Subject.LibraryVersion != "" && len(s.Props) == 4 {
				s.Props = append(s.Props, card.JUnitProperty{Name: "library_version", Value: c.Subject.LibraryVersion})
			}
			secs += c.Wall.Seconds()
			tc := card.JUnitCase{Name: string(c.Item.Kind) + ":" + c.Item.Name, Classname: "lockfault.campaign." + label,
				Time: fmt.Sprintf("%.3f", c.Wall.Seconds())}
			switch c.Verdict {
			case Differs:
				s.Failures++
				tc.Failure = &card.JUnitMessage{Message: c.Summary(), Type: "rate", Text: c.Detail()}
			case NoRuns:
				s.Errors++
				tc.Error = &card.JUnitMessage{Message: fmt.Sprintf("no run of this cell finished (0 of %d)", c.Planned), Type: "no-runs"}
			case Unclaimed:
				s.Skipped++
				tc.Skipped = &card.JUnitMessage{Message: "not claimed: " + c.Finding}
			}
			s.Cases = append(s.Cases, tc)
		}
		s.Tests, s.Time = len(s.Cases), fmt.Sprintf("%.3f", secs)
		out.Suites = append(out.Suites, s)
	}
	if !r.Complete() {
		msg := r.CompletenessText()
		out.Suites = append(out.Suites, card.JUnitSuite{Name: "lockfault campaign " + r.Campaign, Tests: 1, Errors: 1, Time: "0.000",
			Cases: []card.JUnitCase{{Name: "campaign/complete", Classname: "lockfault.campaign", Time: "0.000",
				Error: &card.JUnitMessage{Message: msg, Type: "incomplete", Text: msg}}}})
	}
	return out
}

// CompletenessText says how much of the campaign the merge holds.
func (r *Report) CompletenessText() string {
	s := fmt.Sprintf("%d of %d runs, %d of %d shards merged", r.Done, r.Planned, len(r.Merged), r.Shards)
	if len(r.Missing) > 0 {
		s += fmt.Sprintf("; missing shards: %v", r.Missing)
	}
	if len(r.Incomplete) > 0 {
		s += fmt.Sprintf("; cut short: %v", r.Incomplete)
	}
	return s
}

// Summary is the cell in one line: "expected held: held 12/20 (95 % CI
// 39–78 %), violated 8/20 (…)".
func (c *Cell) Summary() string {
	s := fmt.Sprintf("expected %s (%s): %s", c.Expect.Outcome.Text(), c.Expect.Source, c.Rate)
	for _, o := range c.Others() {
		s += ", " + o.String()
	}
	if c.Verdict == Differs && c.Rate.N > 0 && c.Rate.N < MinRunsToMatch && c.Expect.Outcome != NotClaimed {
		s += fmt.Sprintf("; at least %d runs are needed to match", MinRunsToMatch)
	}
	return s
}

// Detail is the summary, the first finding and the reports, one per line.
func (c *Cell) Detail() string {
	s := c.Summary()
	if c.Finding != "" {
		s += "\nfirst finding: " + c.Finding
	}
	for _, p := range c.Reports {
		s += "\nreport: " + p
	}
	return s
}
