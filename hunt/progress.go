package hunt

import (
	"math"
	"path/filepath"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/runner"
)

// CoveragePoint is the hunt's coverage after a run: how many schedules had
// ended, when, and how many distinct coverage keys they had covered.
type CoveragePoint struct {
	Schedules int     `json:"schedules"`
	Seconds   float64 `json:"seconds"`
	Keys      int     `json:"keys"`
	// New: keys this run covered first (the schedule joined the corpus).
	New   int `json:"new,omitempty"`
	Index int `json:"index"` // the schedule's index
	// Near: the run's margin to a violation (NearMiss, in TTLs), when it
	// had one.
	Near *float64 `json:"near,omitempty"`
	// Over: the operations whose reported validity overclaimed
	// (Overclaims).
	Over []string `json:"over,omitempty"`
}

// observe abstracts a run into its coverage (Coverage, from its history
// and the commands the lock sent), tells the search, and records the
// hunt's coverage over time. A run with no history covers its commands
// alone.
func (res *Result) observe(search Search, s *Schedule, out *runner.Outcome) {
	var keys, over []string
	margin := math.Inf(1)
	if out != nil {
		var events []history.Event
		if out.Dir != "" {
			events, _ = history.Read(filepath.Join(out.Dir, "history.jsonl"))
		}
		keys = Coverage(events, s.TTL, out.Commands)
		margin = NearMiss(events, s.TTL)
		keys = append(keys, "near "+nearBucket(margin))
		over = Overclaims(events, s.TTL)
		for _, op := range over {
			keys = append(keys, "overclaim "+op)
		}
	}
	n := search.Observe(s, Feedback{Keys: keys, Margin: margin, Over: over})
	if len(res.Coverage) < maxCoveragePoints {
		res.Coverage = append(res.Coverage, CoveragePoint{Schedules: len(res.Coverage) + 1, Seconds: time.Since(res.Started).Seconds(),
			Keys: search.Keys(), New: n, Index: s.Index, Near: finite(margin), Over: over})
	}
}

// maxCoveragePoints bounds the record (a hunt's runs are bounded by
// MaxRuns too).
const maxCoveragePoints = MaxRuns

// finite is m, or nil for an infinite margin (JSON has no infinity).
func finite(m float64) *float64 {
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return nil
	}
	return &m
}
