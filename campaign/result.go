package campaign

import (
	"fmt"
	"slices"
	"time"
)

// Result is one run's line in results.jsonl.
type Result struct {
	Campaign       string     `json:"campaign"`
	DefinitionHash string     `json:"definition_hash"`
	Version        string     `json:"lockfault_version"`
	Shard          string     `json:"shard"` // "i/N"
	Identity       string     `json:"identity"`
	Subject        RunSubject `json:"subject"`
	Item           RunItem    `json:"item"`
	Repetition     int        `json:"repetition"`
	Outcome        Outcome    `json:"outcome"`
	// Observed are the checker's classes ("overlap", "safe", ...).
	Observed []string `json:"observed,omitempty"`
	// Finding is one sentence: the first finding of a violation, the
	// reason of not-claimed or no-match, the error of a harness error.
	Finding string        `json:"finding,omitempty"`
	Wall    time.Duration `json:"wall_ns"`
	// Report is the run's report (report.md or its folder), relative to
	// the results folder.
	Report   string    `json:"report,omitempty"`
	Finished time.Time `json:"finished"`
}

// RunSubject is the subject as the run saw it: the lock name (a worker's
// as it declared it), the worker command, and the exact version of the
// lock's code the worker declared (a library's module version).
type RunSubject struct {
	Lock           string `json:"lock,omitempty"`
	Worker         string `json:"worker,omitempty"`
	LibraryVersion string `json:"library_version,omitempty"`
}

// RunItem is the item of a run: its kind and name (property, scenario,
// or the hunt seed).
type RunItem struct {
	Kind ItemKind `json:"kind"`
	Name string   `json:"name"`
}

// Bounds of a result line.
const (
	MaxLineLen     = 64 << 10
	MaxObserved    = 16
	MaxFindingLen  = 2000
	MaxVersionLen  = 200
	MaxResultsSize = MaxRuns * MaxLineLen / 16 // 400 MiB: a results file of MaxRuns average lines
)

// check validates a line read back; what is wrong names the field.
func (r *Result) check() error {
	switch {
	case r.Identity == "":
		return fmt.Errorf("identity: empty")
	case r.DefinitionHash == "":
		return fmt.Errorf("definition_hash: empty")
	case !r.Outcome.Valid():
		return fmt.Errorf("outcome: %q (allowed: %s)", r.Outcome, outcomeNames(Outcomes))
	case !slices.Contains(ItemKinds, r.Item.Kind):
		return fmt.Errorf("item.kind: %q (allowed: property, scenario, hunt)", r.Item.Kind)
	case !slices.Contains(outcomesFor(r.Item.Kind), r.Outcome):
		return fmt.Errorf("outcome: %q is not an outcome of a %s (allowed: %s)", r.Outcome, r.Item.Kind, outcomeNames(outcomesFor(r.Item.Kind)))
	case r.Repetition < 1 || r.Repetition > MaxRepetitions:
		return fmt.Errorf("repetition: %d (allowed: 1 to %d)", r.Repetition, MaxRepetitions)
	case len(r.Observed) > MaxObserved:
		return fmt.Errorf("observed: %d classes (allowed: at most %d)", len(r.Observed), MaxObserved)
	case len(r.Subject.LibraryVersion) > MaxVersionLen || len(r.Version) > MaxVersionLen:
		return fmt.Errorf("version: longer than %d characters", MaxVersionLen)
	case r.Wall < 0:
		return fmt.Errorf("wall_ns: negative")
	}
	if _, err := ParseShard(r.Shard); err != nil {
		return fmt.Errorf("shard: %q is not i/N", r.Shard)
	}
	return nil
}
