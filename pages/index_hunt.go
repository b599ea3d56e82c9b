package pages

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// FileHuntJSON and FileHuntCard are the names of a hunt's record and card
// (package hunt writes them; the index reads them).
const (
	FileHuntJSON = "hunt.json"
	FileHuntCard = "card.md"
)

// indexHunt is one hunt folder (hunt.json). The runs under it (its
// schedules, shrinking candidates and rate runs) are folded into its row,
// not listed one by one: its card links the ones that matter.
type indexHunt struct {
	Dir     string
	Hunt    huntRecord
	Runs    int
	Problem string
}

// huntRecord is what the index reads of a hunt.json (hunt.Result).
type huntRecord struct {
	Lock         string
	Seed         int64
	Tried        []struct{}
	Inconclusive int
	Findings     []struct {
		Fingerprint struct{ Class, Kind string }
		Original    *struct{ Events []struct{} }
		Minimal     *struct{ Events []struct{} }
		Rate        [2]int
		Flaky       bool
	}
	Started     time.Time
	Took        time.Duration
	Interrupted bool
}

// Failed is a hunt that found a violation, was interrupted, or could not
// be read.
func (h *indexHunt) Failed() bool {
	return h.Problem != "" || h.Hunt.Interrupted || len(h.Hunt.Findings) > 0
}

// huntOf is the hunt whose folder holds dir, or nil.
func huntOf(hunts []*indexHunt, dir string) *indexHunt {
	for _, h := range hunts {
		if h.Dir == "." || strings.HasPrefix(dir, h.Dir+"/") {
			return h
		}
	}
	return nil
}

type huntView struct {
	Started, Lock, Seed, Tried, Result, Link, Problem string
	Fail                                              bool
}

func huntViewOf(h *indexHunt) huntView {
	r := h.Hunt
	v := huntView{Started: when(r.Started), Lock: r.Lock, Seed: fmt.Sprint(r.Seed), Link: path.Join(h.Dir, FileHuntCard),
		Problem: h.Problem, Fail: h.Failed()}
	if h.Problem != "" {
		return v
	}
	v.Tried = fmt.Sprintf("%d schedules (%d inconclusive) in %v; %s", len(r.Tried), r.Inconclusive, r.Took.Round(time.Second), count(h.Runs, "run"))
	var found []string
	for _, f := range r.Findings {
		id := f.Fingerprint.Class
		if f.Fingerprint.Kind != "" {
			id += "/" + f.Fingerprint.Kind
		}
		switch {
		case f.Flaky:
			id += " (flaky: never shown again)"
		case f.Minimal != nil && f.Original != nil:
			id += fmt.Sprintf(" (%d → %d faults, reproduced %d of %d)", len(f.Original.Events), len(f.Minimal.Events), f.Rate[0], f.Rate[1])
		}
		found = append(found, id)
	}
	switch {
	case len(found) > 0:
		v.Result = count(len(found), "violation") + ": " + strings.Join(found, "; ")
	default:
		v.Result = "nothing found"
	}
	if r.Interrupted {
		v.Result = "INTERRUPTED; " + v.Result
	}
	return v
}
