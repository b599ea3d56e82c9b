// Package card is the report card of one lock against the property suite:
// one row per property with its outcome (held, violated, not claimed,
// harness error), the baseline file that records those outcomes for a
// regression gate, and the JUnit XML that CI systems read. It holds data
// and its file formats only; running the suite is runner's job and the
// pictures are reports'.
package card

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Outcome of one property for one lock.
type Outcome string

// The outcomes, as written in baselines and suite.json.
const (
	// Held: the run matched the property's expectation and every fault of
	// its schedule reached the lock.
	Held Outcome = "held"
	// Violated: the run did not match (the row says what was observed).
	Violated Outcome = "violated"
	// NotClaimed: the lock does not declare what the property needs (its
	// kind or a capability); the property was not run.
	NotClaimed Outcome = "not-claimed"
	// Unknown: the run proved nothing: its history cannot be judged, or
	// it lacks the evidence the property needs (no critical section
	// completed around its faults). Never held.
	Unknown Outcome = "unknown"
	// HarnessError: the run itself failed, so nothing is known.
	HarnessError Outcome = "harness-error"
)

// Outcomes lists every outcome, in the order a card sorts them by badness.
var Outcomes = []Outcome{Held, Violated, NotClaimed, Unknown, HarnessError}

// Valid reports whether o is one of Outcomes.
func (o Outcome) Valid() bool {
	for _, k := range Outcomes {
		if o == k {
			return true
		}
	}
	return false
}

// Text is the outcome as a person reads it ("not claimed").
func (o Outcome) Text() string { return strings.ReplaceAll(string(o), "-", " ") }

// Row is one property's line on the card.
type Row struct {
	Property    string  `json:"property"`
	Explanation string  `json:"explanation,omitempty"`
	Outcome     Outcome `json:"outcome"`
	// Scenario is the property's scenario name.
	Scenario string `json:"scenario,omitempty"`
	// Expect is what the scenario expected; Observed what the checker saw.
	Expect   []string `json:"expect,omitempty"`
	Observed []string `json:"observed,omitempty"`
	// BadCycles of Cycles fault cycles showed something the property does
	// not allow (violated rows).
	BadCycles int `json:"bad_cycles,omitempty"`
	Cycles    int `json:"cycles,omitempty"`
	// Finding is a one-line sentence: the first finding for a violation,
	// the reason for not claimed, the error for a harness error.
	Finding string `json:"finding,omitempty"`
	// Findings are the sentences of every finding (at most a few).
	Findings []string `json:"findings,omitempty"`
	// Report is the run's report.md (relative to the card's folder when
	// the card is written), empty when the property was not run.
	Report   string        `json:"report,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Evidence is what the run showed against what the property needs
	// for "held" to mean something: "3 of 3 cycles with evidence (≥1
	// grant, ≥1 critical section per cycle), 45 grants, 41 critical
	// sections".
	Evidence string `json:"evidence,omitempty"`
}

// Summary is the row in one line: outcome, and for a violation the
// classes, cycles and the finding.
func (r Row) Summary() string {
	switch r.Outcome {
	case Held:
		if r.Evidence != "" {
			return "held: " + r.Evidence
		}
		return "held"
	case Violated:
		s := "violated: " + strings.Join(r.Observed, ", ")
		if r.Cycles > 0 {
			s += fmt.Sprintf(" in %d/%d cycles", r.BadCycles, r.Cycles)
		}
		if r.Finding != "" {
			s += ": " + r.Finding
		}
		return s
	case NotClaimed:
		return "not claimed: " + r.Finding
	}
	if r.Outcome == Unknown {
		return "unknown: " + r.Finding
	}
	return "harness error: " + r.Finding
}

// Card is one lock's report card.
type Card struct {
	Lock   string   `json:"lock"`
	Needs  string   `json:"needs,omitempty"`
	Caps   []string `json:"caps,omitempty"`
	Worker string   `json:"worker,omitempty"` // external worker command, if any
	// Version is the exact version of the lock's code (a library's module
	// or package version); a baseline keys on it.
	Version  string        `json:"version,omitempty"`
	Backend  string        `json:"backend"`
	RunID    string        `json:"run_id"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Rows     []Row         `json:"rows"`
	// Dir is the folder the card was written to (not serialised).
	Dir string `json:"-"`
}

// RelativeTo is a copy of the card whose report paths are relative to dir
// (the folder a file that links them is written to).
func (c *Card) RelativeTo(dir string) *Card {
	rel := *c
	rel.Rows = append([]Row(nil), c.Rows...)
	for i, r := range rel.Rows {
		if r.Report == "" {
			continue
		}
		if p, err := filepath.Rel(dir, r.Report); err == nil {
			rel.Rows[i].Report = filepath.ToSlash(p)
		}
	}
	return &rel
}

// Sort orders the rows by property name.
func (c *Card) Sort() {
	sort.Slice(c.Rows, func(i, j int) bool { return c.Rows[i].Property < c.Rows[j].Property })
}

// Count returns how many rows have an outcome.
func (c *Card) Count(o Outcome) int {
	n := 0
	for _, r := range c.Rows {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

// Row returns the row of a property.
func (c *Card) Row(property string) (Row, bool) {
	for _, r := range c.Rows {
		if r.Property == property {
			return r, true
		}
	}
	return Row{}, false
}

// Tally is the card in one line: "5 held, 1 violated, 3 not claimed".
func (c *Card) Tally() string {
	var parts []string
	for _, o := range Outcomes {
		if n := c.Count(o); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o.Text()))
		}
	}
	if len(parts) == 0 {
		return "no properties"
	}
	return strings.Join(parts, ", ")
}

// Text renders the card for a terminal: one line per property.
func (c *Card) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "report card: lock %s", c.Lock)
	if c.Worker != "" {
		fmt.Fprintf(&b, " (worker %s)", c.Worker)
	}
	fmt.Fprintf(&b, "  backend %s  run %s  %s\n", c.Backend, c.RunID, c.Duration.Round(time.Second))
	w := 0
	for _, r := range c.Rows {
		w = max(w, len(r.Property))
	}
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, r.Property, r.Summary())
		if r.Outcome == Violated && r.Report != "" {
			fmt.Fprintf(&b, "  %-*s  report: %s\n", w, "", r.Report)
		}
	}
	fmt.Fprintf(&b, "%s\n", c.Tally())
	return b.String()
}

// WriteJSON writes the card as suite.json.
func (c *Card) WriteJSON(path string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadJSON reads a suite.json.
func ReadJSON(path string) (*Card, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Card
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &c, nil
}
