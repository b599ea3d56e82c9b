// Package history records what happened in a run: every client operation as
// an invocation and a completion, every access to the protected resource and
// every fault's start and end, on one monotonic timeline.
package history

// Event kinds.
const (
	Invoke     = "invoke"      // a client started an operation
	OK         = "ok"          // the operation completed and took effect
	Fail       = "fail"        // the operation completed and certainly did not take effect
	Info       = "info"        // the outcome is unknown (timeout, crash, lost connection)
	Renew      = "renew"       // a lock's own renewal (watchdog) moved a lease's validity
	Access     = "access"      // the protected resource served a read or a write
	FaultStart = "fault-start" // the nemesis began a fault
	FaultEnd   = "fault-end"   // the nemesis healed a fault
	Note       = "note"        // anything else worth seeing on the timeline (cycle starts, setup)
)

// FaultCommandHold is the fault of a client's traffic held at the RESP taps
// by an await: command (its request or reply held until the step after the
// await is applied, or every further command of the client held after the
// reply until that step has ended): in effect a pause of that client's
// traffic, recorded as a fault window (fault-start and fault-end, target
// the client) like every fault the nemesis injects, so that a finding under
// it is never taken for one with no fault around it.
const FaultCommandHold = "command-hold"

// Operation names used by the workload.
const (
	OpAcquire = "acquire"
	OpCS      = "cs" // the critical section: read-modify-write of the resource
	OpRelease = "release"
	OpExtend  = "extend"
)

// Event is one line of history.jsonl. Fields that do not apply are omitted.
type Event struct {
	Seq     int64  `json:"seq"`
	Time    int64  `json:"t"` // CLOCK_MONOTONIC nanoseconds
	Kind    string `json:"kind"`
	Process string `json:"process,omitempty"` // client name, e.g. "c1"
	Op      string `json:"op,omitempty"`
	OpID    int64  `json:"op_id,omitempty"` // pairs an invoke with its completion
	Lease   string `json:"lease,omitempty"` // which grant an operation or access belongs to
	// Key is the name the lock guards (the workload's resource). Holds,
	// overlaps, fencing and corruption are judged per key; an event without
	// one (an old history) belongs to the one implicit key "".
	Key   string `json:"key,omitempty"`
	Error string `json:"error,omitempty"`

	// Grants.
	Token      string `json:"token,omitempty"`
	Fence      int64  `json:"fence,omitempty"`
	ValidityMs int64  `json:"validity_ms,omitempty"`
	ValidUntil int64  `json:"valid_until,omitempty"` // monotonic ns; 0 means no expiry reported

	// Resource accesses and critical sections.
	Access   string `json:"access,omitempty"` // "read" or "write"
	Value    *int64 `json:"value,omitempty"`  // value read or written
	Read     *int64 `json:"read,omitempty"`   // cs completion: value the section read
	Wrote    *int64 `json:"wrote,omitempty"`  // cs completion: value it wrote
	Rejected bool   `json:"rejected,omitempty"`

	// Faults.
	Fault  string `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	Detail string `json:"detail,omitempty"`
	Cycle  int    `json:"cycle,omitempty"`
	// DurationMs: a note "unavailable" (an await that timed out) says how
	// long nothing happened before it.
	DurationMs int64 `json:"duration_ms,omitempty"`
}

// Int64 returns a pointer to v, for the optional numeric fields.
func Int64(v int64) *int64 { return &v }
