package campaign

import (
	"slices"
	"sort"
	"time"
)

// Verdict of a cell against its expectation.
type Verdict string

// The verdicts.
const (
	// Matches: the expected outcome's rate clears MatchLowerBound (or,
	// for an expected not-claimed, every run was not claimed).
	Matches Verdict = "matches"
	// Differs: it does not (too few runs included).
	Differs Verdict = "differs"
	// Unclaimed: every run was not claimed and nothing but the default
	// expected otherwise (a worker's lock that does not claim the
	// property): nothing to judge, as a card's not-claimed row.
	Unclaimed Verdict = "not-claimed"
	// NoRuns: no run of the cell finished (a missing shard, an
	// interrupted one).
	NoRuns Verdict = "no-runs"
)

// CellSubject is a cell's subject as tables show it.
type CellSubject struct {
	Key    string `json:"key"`
	Label  string `json:"label"`
	Lock   string `json:"lock,omitempty"`
	Worker string `json:"worker,omitempty"`
	// LibraryVersion is the exact version of the lock's code the runs
	// declared (one per subject: merge refuses a mix).
	LibraryVersion string `json:"library_version,omitempty"`
}

// Count is how many runs ended with an outcome.
type Count struct {
	Outcome Outcome `json:"outcome"`
	N       int     `json:"n"`
}

// MaxCellReports bounds the reports a cell links (of runs that did not
// show the expected outcome).
const MaxCellReports = 5

// Cell is one subject × item: its runs' outcomes, the rate of the expected
// one, and the verdict.
type Cell struct {
	Key     string      `json:"key"`
	Subject CellSubject `json:"subject"`
	Item    RunItem     `json:"item"`
	Expect  Expectation `json:"expect"`
	// Planned runs (the definition's repetitions) and Runs that finished.
	Planned int     `json:"planned"`
	Runs    int     `json:"runs"`
	Counts  []Count `json:"counts"`
	// Rate is the expected outcome's rate.
	Rate    Rate    `json:"rate"`
	Verdict Verdict `json:"verdict"`
	// Observed is every class any run observed.
	Observed []string `json:"observed,omitempty"`
	// Finding is the first finding of a run that did not show the
	// expected outcome, and Reports the reports of such runs (at most
	// MaxCellReports), relative to the campaign's folder.
	Finding string        `json:"finding,omitempty"`
	Reports []string      `json:"reports,omitempty"`
	Wall    time.Duration `json:"wall_ns"`
}

// Count returns how many runs ended with an outcome.
func (c *Cell) Count(o Outcome) int {
	for _, x := range c.Counts {
		if x.Outcome == o {
			return x.N
		}
	}
	return 0
}

// Others are the counts of the outcomes other than the expected one.
func (c *Cell) Others() []Rate {
	var out []Rate
	for _, x := range c.Counts {
		if x.Outcome != c.Expect.Outcome && x.N > 0 {
			out = append(out, NewRate(x.Outcome, x.N, c.Runs))
		}
	}
	return out
}

// newCell aggregates the results of one cell (in identity order).
func newCell(s Subject, it Item, exp Expectation, planned int, rs []*Result, reportPath func(*Result) string) Cell {
	c := Cell{Key: CellKey(s, it), Subject: CellSubject{Key: s.Key(), Label: s.Label(), Lock: s.Lock, Worker: s.Worker},
		Item: it.RunItem(), Expect: exp, Planned: planned, Runs: len(rs)}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Repetition < rs[j].Repetition })
	n := map[Outcome]int{}
	obs := map[string]bool{}
	for _, r := range rs {
		n[r.Outcome]++
		c.Wall += r.Wall
		for _, o := range r.Observed {
			obs[o] = true
		}
		if c.Subject.LibraryVersion == "" {
			c.Subject.LibraryVersion = r.Subject.LibraryVersion
		}
		if s.Lock == "" && c.Subject.Lock == "" && r.Subject.Lock != "" {
			// A worker named by its command alone: the lock it declared
			// names its column.
			c.Subject.Lock, c.Subject.Label = r.Subject.Lock, r.Subject.Lock
		}
		if r.Outcome == exp.Outcome {
			continue
		}
		if c.Finding == "" {
			c.Finding = r.Finding
		}
		if p := reportPath(r); p != "" && len(c.Reports) < MaxCellReports {
			c.Reports = append(c.Reports, p)
		}
	}
	for _, o := range Outcomes {
		if n[o] > 0 {
			c.Counts = append(c.Counts, Count{o, n[o]})
		}
	}
	for o := range obs {
		c.Observed = append(c.Observed, o)
	}
	slices.Sort(c.Observed)
	c.Rate, c.Verdict = judge(exp, n, len(rs), it.Kind == KindHunt)
	return c
}

// judge applies the match rule (see MatchLowerBound). A hunt's cell
// matches when every run of it showed the expected outcome: a hunt is
// itself many schedules, and is run once per seed (a false-alarm
// campaign's cells, each held once, all showed as differing).
func judge(exp Expectation, n map[Outcome]int, runs int, hunt bool) (Rate, Verdict) {
	r := NewRate(exp.Outcome, n[exp.Outcome], runs)
	switch {
	case runs == 0:
		return r, NoRuns
	case hunt:
		if n[exp.Outcome] == runs {
			return r, Matches
		}
		return r, Differs
	case exp.Outcome == NotClaimed:
		// Whether a lock claims a property is decided before anything
		// runs: one run says it all, and every run must agree.
		if n[NotClaimed] == runs {
			return r, Matches
		}
		return r, Differs
	case n[NotClaimed] == runs && exp.Source == SourceDefault:
		return r, Unclaimed
	case r.Clears():
		return r, Matches
	}
	return r, Differs
}
