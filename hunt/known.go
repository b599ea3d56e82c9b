package hunt

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/suite"
)

// A Limit is a kind of fault a lock never promised to survive: the hunt
// draws none of its faults, so what it finds is new.
type Limit struct {
	Name   string
	Faults []string // the fault kinds it excludes
	// Modes are the draws of a fault it excludes while the fault's other
	// draws stay (a manual failover that may lose writes, beside one that
	// cannot).
	Modes []Mode
	Doc   string
}

// Mode is some values of one param of a fault.
type Mode struct {
	Fault, Param string
	Values       []string
}

// Limits are the known limits a hunt can be told about (-known,
// Options.KnownViolations).
var Limits = []Limit{
	{Name: "failover", Faults: []string{"promote", "sentinel-failover", "cluster-failover", "cluster-minority-partition"},
		Modes: []Mode{{"cluster-manual-failover", "mode", []string{"force", "takeover"}}},
		Doc:   "a failover loses grants that were replicated asynchronously (C5): by hand, by the Sentinels, or by a Redis Cluster (of a master killed, stopped or cut off in a minority, or a manual failover that does not wait for the replica: force, takeover)"},
	{Name: "node-clock", Faults: []string{"clock-jump", "clock-drift"}, Doc: "a node's realtime clock that jumps or runs fast expires keys early; no fencing token guards the resource (C10)"},
	{Name: "client-clock", Faults: []string{"clock-client"}, Doc: "the lock reads the client's wall clock"},
	{Name: "node-restart", Faults: []string{"kill", "power-loss", "restart"}, Doc: "a node that restarts loses what it had not persisted"},
	{Name: "client-crash", Faults: []string{"crash-client", "clone-client"}, Doc: "a client that dies (or a second process under its name) leaves the lock in a state it does not recover from"},
	{Name: "client-pause", Faults: []string{"pause-client"}, Doc: "a client stopped inside the lock's own steps is not protected against"},
	{Name: "node-pause", Faults: []string{"pause-node"}, Doc: "a stopped node is not survived"},
	{Name: "partition", Faults: []string{"partition-client", "partition-peer"}, Doc: "a network partition is not survived"},
	{Name: "latency", Faults: []string{"latency"}, Doc: "slow links are not survived"},
	// Not failover: redislock-cluster and redsync-cluster break
	// cluster/minority-grant (their cut-off client is not granted again)
	// and hold failover/async-replica; not partition: they survive
	// partition-client and partition-peer.
	{Name: "minority-partition", Faults: []string{"cluster-minority-partition"},
		Doc: "a Redis Cluster master cut off in a minority with some clients is not survived: its grants outlive the majority's failover, or the clients on its side are not granted again (cluster/minority-grant); a lock whose only flaw is this survives the cluster's failover of a killed master and the other partitions"},
	// No fault: a workload the generator does not draw.
	{Name: "reentry", Doc: "a re-entry (the holder acquiring the lock again) is not counted: the inner release frees the lock while the outer holder still runs (reentrancy/counts); the generator draws no re-entrant workload, so the hunt looks for something else"},
	// No other limit's faults move a slot.
	{Name: "slot-migration", Faults: []string{"cluster-migrate-slot"},
		Doc: "a migration of the lock key's slot between Redis Cluster masters (the key moving, ASK and MOVED redirections) is not survived (cluster/slot-migration)"},
}

// LimitNames lists the names -known accepts.
func LimitNames() []string {
	out := make([]string, len(Limits))
	for i, l := range Limits {
		out[i] = l.Name
	}
	return out
}

// ParseKnown checks a list of limit names (as -known gives it, comma
// separated) and returns them sorted and without repeats.
func ParseKnown(list []string) ([]string, error) {
	var out []string
	for _, k := range list {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !slices.Contains(LimitNames(), k) {
			return nil, fmt.Errorf("unknown known limit %q (allowed: %s)", k, strings.Join(LimitNames(), ", "))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// limitOf maps a property of the promise table to the limit it stands for
// (the properties absent here name a flaw of the lock's own algorithm that
// no fault class captures: the hunt may find it again, and says so).
var limitOf = map[string]string{
	"failover/async-replica":     "failover",
	"failover/sentinel":          "failover",
	"fencing/failover":           "failover",
	"clock/node-jump":            "node-clock",
	"clock/node-drift":           "node-clock",
	"clock/masters-jump":         "node-clock",
	"clock/client-steps":         "client-clock",
	"fencing/node-restart":       "node-restart",
	"extend/majority-restart":    "node-restart",
	"crash/mid-acquire":          "client-crash",
	"crash/frees-within-ttl":     "client-crash",
	"identity/restart-same-name": "client-crash",
	"stale/release-after-pause":  "client-pause",
	"stale/release-mid-release":  "client-pause",
	"extend/after-pause":         "client-pause",
	"validity/slow-acquire":      "latency",
	"liveness/holder-partition":  "partition",
	"extend/partition":           "partition",
	"reentrancy/counts":          "reentry",
	"cluster/minority-grant":     "minority-partition",
	"cluster/slot-migration":     "slot-migration",
}

// BuiltInLimits are a built-in lock's known limits, from the promise table
// (the suite's table of the properties each lock is known to break).
func BuiltInLimits(lock string) []string {
	var props []string
	for p := range suite.KnownViolations(lock) {
		props = append(props, p)
	}
	return LimitsOf(props)
}

// LimitsOf maps properties a lock is known to break to the known limits
// they stand for (a property no fault class captures maps to none).
func LimitsOf(properties []string) []string {
	var out []string
	for _, p := range properties {
		if l, ok := limitOf[p]; ok && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// excluded lists the fault kinds the limits exclude.
func excluded(limits []string) []string {
	var out []string
	for _, l := range Limits {
		if slices.Contains(limits, l.Name) {
			out = append(out, l.Faults...)
		}
	}
	return out
}

// excludedModes lists the values of a fault's param the limits exclude.
func excludedModes(limits []string, fault, param string) []string {
	var out []string
	for _, l := range Limits {
		if !slices.Contains(limits, l.Name) {
			continue
		}
		for _, m := range l.Modes {
			if m.Fault == fault && m.Param == param {
				out = append(out, m.Values...)
			}
		}
	}
	return out
}

// excusedStale says whether a finding is one a lock without fencing cannot
// prevent, whatever the fault: a client that acts on the resource after its
// own lease ran out (it was paused, delayed or cut off) overlaps the next
// holder, and only a fencing token stops it (Kleppmann). The hunt reports
// those only for locks that claim fencing, and for any lock when no fault
// was around the finding (none active, none in the 30 s before): a holder
// whose lease ran out while nothing harmed anyone is the lock's own doing,
// a watchdog that did not renew (the generator draws holds longer than the
// TTL only for a lock that renews its holders' leases).
func excusedStale(info lockimpl.Info, f checker.Finding) bool {
	return f.Kind == "stale-access" && !slices.Contains(info.Caps, lockimpl.CapFencing) && len(f.Faults) > 0
}

// excusedByFencing says whether an overlap is one a lock that claims
// fencing never promised to prevent: under a fault, two grants of the key
// overlapped (a node's clock jumped and expired a key early, a holder was
// stopped past its validity), and the accesses the resource accepted from
// the two holders still came in an order fencing allows (see conflict). A
// fencing lock promises the resource, not the grants: the resource
// refuses a token smaller than one it has seen. Before this, false-alarm
// hunts of `fenced` reported a node clock jump of +3 s as an overlap
// although the older holder's next step found its lock gone; a client
// stopped 300 ms in its section that wrote after its validity, before the
// next holder's first access; and a client stopped 900 ms after its
// acquire's reply (fence 9) whose key a clock jump expired, so that
// another was granted fence 10 first and the stopped one, resuming,
// released without touching the resource.
func excusedByFencing(info lockimpl.Info, res *checker.Result, f checker.Finding) bool {
	if f.Class != checker.ClassOverlap || !slices.Contains(info.Caps, lockimpl.CapFencing) || len(f.Faults) == 0 || len(f.Leases) < 2 {
		return false
	}
	a, b := holdOf(res, f.Leases[0]), holdOf(res, f.Leases[1])
	return a != nil && b != nil && !conflict(a, b)
}

// conflict says whether the resource accepted the two holds' accesses in an
// order fencing forbids: an access of the hold with the smaller token at
// or after the other's first access, or, for the same token (a lock that
// hands everyone one token, or none), accesses of each at or after the
// other's first (interleaved: the resource could not order them). The
// accesses of one before the other's first, and refused ones, are
// harmless.
func conflict(a, b *checker.Hold) bool {
	aAfterB := b.FirstAccess > 0 && a.LastAccepted >= b.FirstAccess
	bAfterA := a.FirstAccess > 0 && b.LastAccepted >= a.FirstAccess
	switch {
	case a.Fence < b.Fence:
		return aAfterB
	case b.Fence < a.Fence:
		return bAfterA
	}
	return aAfterB && bAfterA
}

// holdOf is the hold of a lease in a result, nil if none.
func holdOf(res *checker.Result, lease string) *checker.Hold {
	for i := range res.Holds {
		if res.Holds[i].Lease == lease {
			return &res.Holds[i]
		}
	}
	return nil
}
