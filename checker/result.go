// Package checker judges a history: per lock key it finds overlapping
// holds (mutual exclusion broken), corruption of the protected resource (a
// linearizability check of the critical sections, stretch by stretch),
// overlaps that fencing turned harmless, refusals of the legitimate holder
// (fence inversion), extends of released leases that succeeded (stale
// extend), liveness failures (stuck locks), and histories that
// cannot be judged (unknown, never safe). Each class is one pass over the
// history (see passes in check.go).
package checker

import (
	"fmt"
	"sort"
	"strings"
)

// Verdict classes.
const (
	ClassOverlap    = "overlap"
	ClassCorruption = "corruption"
	ClassFenced     = "fenced"
	ClassStuck      = "stuck"
	ClassSafe       = "safe"
	// ClassFenceInversion: the resource refused the current, legitimate
	// holder because an older grant carried a larger fencing token.
	ClassFenceInversion = "fence-inversion"
	// ClassStaleExtend: an extend succeeded on a lease the client had
	// already released with success.
	ClassStaleExtend = "stale-extend"
	// ClassUnavailable: the lock granted nothing while a fault lasted
	// (a finding with its duration, not a harness error).
	ClassUnavailable = "unavailable"
	// ClassNotExercised: a fault of the schedule never reached the lock
	// (a failpoint never hit, a target that never existed).
	ClassNotExercised = "not-exercised"
	// ClassUnknown: the history cannot be judged (empty, unreadable, no
	// completed operation, or the linearizability check timed out).
	ClassUnknown = "unknown"
)

// Classes lists the classes a scenario may expect, in priority order: the
// headline verdict is the first observed. Overlap (mutual exclusion broken)
// comes first; corruption is what it did to the resource.
var Classes = []string{ClassOverlap, ClassCorruption, ClassFenceInversion, ClassStaleExtend, ClassDied, ClassFenced, ClassStuck,
	ClassUnavailable, ClassNotExercised, ClassUnknown, ClassSafe}

// Finding is one thing that went wrong.
type Finding struct {
	Class string `json:"class"`
	// Key is the lock key the finding is about ("" for the one implicit key
	// of a history without keys, and for findings about the whole run).
	Key     string   `json:"key,omitempty"`
	Clients []string `json:"clients,omitempty"`
	Leases  []string `json:"leases,omitempty"`
	From    int64    `json:"from"` // monotonic ns
	To      int64    `json:"to"`
	// Kind refines an overlap: "both-valid" (two holds whose validity had
	// not run out), "stale-access" (a client acted on the resource after its
	// own hold had ended, during another's hold).
	Kind   string   `json:"kind,omitempty"`
	Faults []string `json:"faults,omitempty"` // faults active around the finding
	Cycle  int      `json:"cycle,omitempty"`
	Detail string   `json:"detail"`
}

// Hold is one client's possession of the lock.
type Hold struct {
	Process    string `json:"process"`
	Key        string `json:"key,omitempty"`
	Lease      string `json:"lease"`
	Fence      int64  `json:"fence,omitempty"`
	Start      int64  `json:"start"`       // acquire ok
	End        int64  `json:"end"`         // release invoked, validity ran out, or the client died
	EndReason  string `json:"end_reason"`  // release, expired, crashed, run-end
	LastAccess int64  `json:"last_access"` // last resource access under this lease, 0 if none
	// FirstAccess is the first resource access under this lease, and
	// LastAccepted the last one the resource did not refuse (0 if none).
	FirstAccess  int64 `json:"first_access,omitempty"`
	LastAccepted int64 `json:"last_accepted,omitempty"`
	ValidUntil   int64 `json:"valid_until,omitempty"`
	// KeptUntil: an extend or renewal that succeeded after the lease had
	// lapsed by its own account (a grant whose reply came after the
	// validity it reported: its node was paused) showed the key was still
	// the client's; KeptUntil is the end of the validity it reported, at
	// most the release, the client's death or the run's end (0: none
	// such). Safety judges the lease by End, as its holder had to; liveness
	// counts the key held until KeptUntil: nobody else could take it.
	KeptUntil int64 `json:"kept_until,omitempty"`
}

// EffectiveEnd is when the client stopped acting as holder: its hold's end,
// or later if it still touched the resource after that.
func (h Hold) EffectiveEnd() int64 {
	if h.LastAccess > h.End {
		return h.LastAccess
	}
	return h.End
}

// Window is a fault's time span.
type Window struct {
	Fault  string `json:"fault"`
	Target string `json:"target,omitempty"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"` // 0 while unhealed at the end of the history
	Cycle  int    `json:"cycle,omitempty"`
}

// Stats are counts and measurements over the whole run.
type Stats struct {
	Acquires       int     `json:"acquires"`
	Grants         int     `json:"grants"`
	Fails          int     `json:"acquire_fails"`
	Unknown        int     `json:"acquire_unknown"`
	CriticalSecs   int     `json:"critical_sections"`
	Rejected       int     `json:"rejected_accesses"`
	FinalValue     int64   `json:"final_value"`
	MaxUnavailable int64   `json:"max_unavailable_ns"` // longest time with no holder while someone tried
	Cycles         int     `json:"cycles"`
	CyclesOverlap  int     `json:"cycles_with_overlap"` // unfenced or fenced
	AcquireLatency []int64 `json:"-"`
	MeanAcquireNs  int64   `json:"mean_acquire_ns"`
	P99AcquireNs   int64   `json:"p99_acquire_ns"`
	PenaltyNs      []int64 `json:"availability_penalty_ns,omitempty"` // per fault: fault start to the next grant
}

// Result is the checker's output.
type Result struct {
	Verdict  string    `json:"verdict"`
	Observed []string  `json:"observed"`
	Findings []Finding `json:"findings"`
	Holds    []Hold    `json:"holds"`
	Faults   []Window  `json:"faults"`
	// Stalls are the stretches in which the harness's own path stalled
	// with no fault on (see Stalls); a stuck stretch is not charged with
	// them.
	Stalls       []Window `json:"stalls,omitempty"`
	Stats        Stats    `json:"stats"`
	Linearizable string   `json:"linearizable"` // Ok, Illegal, Unknown (porcupine's words)
	// Evidence is what the run showed against what its scenario required
	// (nil when the check was not asked for).
	Evidence *EvidenceSummary `json:"evidence,omitempty"`
	// Reason says why the history could not be judged when unknown is
	// observed.
	Reason string `json:"reason,omitempty"`
	// Keys are the lock keys of the history ("" is the implicit key).
	Keys []string `json:"keys,omitempty"`
	// Segments are the stretches of critical sections that porcupine had
	// to search (several sections in flight at once) or that were not
	// linearizable, at most MaxSegments of them, the illegal ones first;
	// SegmentCount counts all stretches, trivial ones included.
	Segments     []Segment `json:"segments,omitempty"`
	SegmentCount int       `json:"segment_count"`
	// CycleObserved[i] is the set of classes seen in cycle i+1.
	CycleObserved [][]string `json:"cycle_observed,omitempty"`
}

// Rate returns how many cycles showed a class, and the number of cycles.
func (r *Result) Rate(class string) (int, int) {
	n := 0
	for _, cs := range r.CycleObserved {
		for _, c := range cs {
			if c == class {
				n++
				break
			}
		}
	}
	return n, len(r.CycleObserved)
}

// Match says whether the observed classes satisfy an expectation: every
// expected class was observed, and nothing was observed that is neither
// expected nor allowed. Expecting "safe" means expecting nothing.
func Match(observed, expect, allow []string) (bool, string) {
	obs := set(observed)
	exp := set(expect)
	delete(exp, ClassSafe)
	ok := set(allow)
	var missing, extra []string
	for c := range exp {
		if !obs[c] {
			missing = append(missing, c)
		}
	}
	for c := range obs {
		if !exp[c] && !ok[c] {
			extra = append(extra, c)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) == 0 && len(extra) == 0 {
		return true, "as expected"
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, "expected but not observed: "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		why = append(why, "observed but not expected: "+strings.Join(extra, ", "))
	}
	return false, strings.Join(why, "; ")
}

func set(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// ValidClass reports whether c names a verdict class.
func ValidClass(c string) error {
	for _, k := range Classes {
		if k == c {
			return nil
		}
	}
	return fmt.Errorf("unknown verdict %q (allowed: %s)", c, strings.Join(Classes, ", "))
}
