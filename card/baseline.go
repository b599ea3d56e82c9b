package card

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/lockfault/lockfault/internal/printable"
	"github.com/lockfault/lockfault/internal/userfile"
)

// A baseline records each property's outcome for one lock, one line per
// property, sorted, with no timestamps or run ids, so that it is stable
// across runs and can be committed next to the lock's code:
//
//	# lockfault suite baseline: lock single
//	exclusion/no-faults   held
//	failover/manual       violated
//	fencing/monotonic     not-claimed
//
// Blank lines and lines starting with # are ignored.
type Baseline struct {
	Path     string
	Outcomes map[string]Outcome
	line     map[string]int
}

// Bounds on a baseline file: a file, a line or a property name beyond them
// is refused with the bound in the message.
const (
	MaxBaselineSize   = 1 << 20
	MaxBaselineLine   = 1024
	MaxPropertyLength = 128
)

// baselineOutcomes are the outcomes a baseline may record: a harness error
// says nothing about the lock, so it is never a baseline.
var baselineOutcomes = []Outcome{Held, Violated, NotClaimed}

// FormatBaseline renders a card as a baseline. It refuses a card with a
// harness error: that run says nothing about the lock.
func FormatBaseline(c *Card) ([]byte, error) {
	rows := append([]Row(nil), c.Rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Property < rows[j].Property })
	w := 0
	for _, r := range rows {
		if r.Outcome == HarnessError || r.Outcome == Unknown {
			return nil, fmt.Errorf("property %s: %s (%s): a baseline records only held, violated and not-claimed; a run without evidence says nothing about the lock", r.Property, r.Outcome.Text(), r.Finding)
		}
		w = max(w, len(r.Property))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# lockfault suite baseline: lock %s\n", c.Lock)
	fmt.Fprintf(&b, "# property, outcome (%s); compare with: simulate suite -baseline FILE\n", strings.Join(outcomeNames(baselineOutcomes), ", "))
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %s\n", w, r.Property, r.Outcome)
	}
	return b.Bytes(), nil
}

// WriteBaseline writes the card's baseline to path.
func WriteBaseline(path string, c *Card) error {
	data, err := FormatBaseline(c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// ReadBaseline reads a baseline file. known says whether a property name
// exists in the suite; a malformed line, an unknown outcome or property
// and a duplicate are errors naming file:line. The file must be a regular
// file of at most MaxBaselineSize bytes: anything else (a FIFO, which would
// block the reader, a device, a directory) is refused before it is read.
func ReadBaseline(path string, known func(string) bool) (*Baseline, error) {
	data, err := userfile.ReadFile(path, MaxBaselineSize)
	if err != nil {
		return nil, fmt.Errorf("baseline: %v", err)
	}
	return ParseBaseline(path, data, known)
}

// ParseBaseline parses baseline text; path is used in error messages.
func ParseBaseline(path string, data []byte, known func(string) bool) (*Baseline, error) {
	if len(data) > MaxBaselineSize {
		return nil, fmt.Errorf("%s: %d bytes (allowed: at most %d)", path, len(data), MaxBaselineSize)
	}
	b := &Baseline{Path: path, Outcomes: map[string]Outcome{}, line: map[string]int{}}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	n := 0
	for _, raw := range lines {
		n++
		if len(raw) > MaxBaselineLine {
			return nil, fmt.Errorf("%s:%d: line: %d bytes (allowed: at most %d)", path, n, len(raw), MaxBaselineLine)
		}
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if what, at, bad := printable.Find(line, true); bad { // a tab between the fields is fine
			return nil, fmt.Errorf("%s:%d: line: contains %s at character %d (allowed: printable text, spaces and tabs; no other control or format character)", path, n, what, at)
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want two fields, property and outcome, got %d: %q", path, n, len(f), line)
		}
		prop, out := f[0], Outcome(f[1])
		if len(prop) > MaxPropertyLength {
			return nil, fmt.Errorf("%s:%d: property: %d bytes (allowed: at most %d)", path, n, len(prop), MaxPropertyLength)
		}
		if known != nil && !known(prop) {
			return nil, fmt.Errorf("%s:%d: property: %q is not a property of the suite (see `simulate suite -list`)", path, n, prop)
		}
		if !slices.Contains(baselineOutcomes, out) {
			return nil, fmt.Errorf("%s:%d: outcome: %q is not allowed (allowed: %s)", path, n, f[1], strings.Join(outcomeNames(baselineOutcomes), ", "))
		}
		if first, dup := b.line[prop]; dup {
			return nil, fmt.Errorf("%s:%d: property: %s is listed twice (first at line %d)", path, n, prop, first)
		}
		b.Outcomes[prop], b.line[prop] = out, n
	}
	if len(b.Outcomes) == 0 {
		return nil, fmt.Errorf("%s:%d: no property in the baseline (want lines `property outcome`)", path, max(n, 1))
	}
	return b, nil
}

// Change is one property whose outcome differs from the baseline.
type Change struct {
	Property string
	Before   Outcome // "" for a property the baseline does not list
	Now      Outcome
	Finding  string
	Report   string
}

// Diff is a card compared with a baseline.
type Diff struct {
	// Regressions: a property that held (or was not violated) before is
	// now violated, or a property that held is no longer claimed.
	Regressions []Change
	// Improvements: violated before, held now.
	Improvements []Change
	// Other changes that are not failures: a property new to the suite,
	// or a move between not-claimed and held.
	Other []Change
	// Harness lists the properties whose run failed: nothing is known.
	Harness []Change
}

// Compare diffs a card with the baseline. Properties the baseline lists
// but the card did not run (filtered out) are not compared.
func (b *Baseline) Compare(c *Card) Diff {
	var d Diff
	for _, r := range c.Rows {
		before, listed := b.Outcomes[r.Property]
		ch := Change{Property: r.Property, Before: before, Now: r.Outcome, Finding: r.Finding, Report: r.Report}
		switch {
		case r.Outcome == HarnessError || r.Outcome == Unknown:
			d.Harness = append(d.Harness, ch)
		case !listed:
			d.Other = append(d.Other, ch)
		case before == r.Outcome:
		case r.Outcome == Violated:
			d.Regressions = append(d.Regressions, ch)
		case before == Held && r.Outcome == NotClaimed:
			d.Regressions = append(d.Regressions, ch)
		case before == Violated && r.Outcome == Held:
			d.Improvements = append(d.Improvements, ch)
		default:
			d.Other = append(d.Other, ch)
		}
	}
	return d
}

// Exit is the regression gate's exit code: 2 when a run failed, 1 when a
// property regressed, 0 otherwise.
func (d Diff) Exit() int {
	switch {
	case len(d.Harness) > 0:
		return 2
	case len(d.Regressions) > 0:
		return 1
	}
	return 0
}

// Text renders the diff for a terminal.
func (d Diff) Text(baselinePath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "regression gate against %s: %d regressed, %d improved, %d other change(s), %d harness error(s)\n",
		baselinePath, len(d.Regressions), len(d.Improvements), len(d.Other), len(d.Harness))
	section := func(title string, cs []Change) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		w := 0
		for _, c := range cs {
			w = max(w, len(c.Property))
		}
		for _, c := range cs {
			before := string(c.Before)
			if before == "" {
				before = "(not in baseline)"
			}
			fmt.Fprintf(&b, "  %-*s  before %-13s now %s", w, c.Property, before, c.Now)
			if c.Report != "" {
				fmt.Fprintf(&b, "  report %s", c.Report)
			}
			b.WriteString("\n")
			if c.Finding != "" && c.Now != Held {
				fmt.Fprintf(&b, "  %-*s  %s\n", w, "", c.Finding)
			}
		}
	}
	section("REGRESSED", d.Regressions)
	section("harness error", d.Harness)
	section("improved", d.Improvements)
	section("changed (not a failure; rewrite the baseline to accept)", d.Other)
	return b.String()
}

func outcomeNames(xs []Outcome) []string {
	var out []string
	for _, x := range xs {
		out = append(out, string(x))
	}
	return out
}
