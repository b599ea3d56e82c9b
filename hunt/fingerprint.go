package hunt

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/lockimpl"
)

// violations are the classes a hunt reports: broken exclusion, a corrupted
// resource, a refused legitimate holder, an extend of a released lease, a
// lock whose process died, a lock nobody can take.
var violations = []string{checker.ClassOverlap, checker.ClassCorruption, checker.ClassFenceInversion,
	checker.ClassStaleExtend, checker.ClassDied, checker.ClassStuck}

// A Fingerprint names a violation the way the shrinker recognises it again:
// its class and kind ("overlap/both-valid"). Faults are the fault kinds
// around it (for the report; the shrinker removes faults, so they are not
// part of what must reappear).
type Fingerprint struct {
	Class  string
	Kind   string
	Faults []string
	Detail string
}

// ID is the fingerprint's identity: class, and kind if any.
func (f Fingerprint) ID() string {
	if f.Kind == "" {
		return f.Class
	}
	return f.Class + "/" + f.Kind
}

// Fingerprints are the violations of a result the hunt reports, one per
// identity, minus what a lock without fencing cannot prevent (a client
// acting after its own lease ran out, under a fault: a stale access; see
// excusedStale) and what a lock with fencing does not promise (two grants
// that overlapped under a fault while the resource took their accesses in
// an order fencing allows; see excusedByFencing). A corruption that comes
// with an overlap is that overlap's doing, not a violation of its own.
func Fingerprints(res *checker.Result, info lockimpl.Info, ttl time.Duration) []Fingerprint {
	if res == nil {
		return nil
	}
	var out []Fingerprint
	seen := map[string]bool{}
	overlaps := slices.ContainsFunc(res.Findings, func(f checker.Finding) bool { return f.Class == checker.ClassOverlap })
	for _, f := range res.Findings {
		if !slices.Contains(violations, f.Class) {
			continue
		}
		if f.Class == checker.ClassOverlap && (excusedStale(info, f) || excusedByFencing(info, res, f)) {
			continue
		}
		if f.Class == checker.ClassStuck && stuckAfterFaults(res, f, info.Needs == lockfault.NeedsEtcd, ttl) != stuckNow {
			continue
		}
		if f.Class == checker.ClassCorruption && overlaps {
			// What an overlap did to the resource: the overlap is the
			// violation (or, if excused, so is this).
			continue
		}
		kind := f.Kind
		if f.Class != checker.ClassOverlap {
			kind = ""
		}
		fp := Fingerprint{Class: f.Class, Kind: kind, Faults: faultKinds(f.Faults), Detail: f.Detail}
		if !seen[fp.ID()] {
			seen[fp.ID()] = true
			out = append(out, fp)
		}
	}
	return out
}

// What a stuck finding is once the faults' actual end is known.
type stuckness int

const (
	stuckNow      stuckness = iota // stuck: a violation
	stuckExcused                   // back soon after the faults: held
	stuckUnjudged                  // back soon after the faults but for the harness's own stalls: inconclusive
)

// stuckAfterFaults judges a stretch in which nobody acquired the lock
// against the end of the faults that began before it ended: excused when it
// ended within stuckSlack of that end (or while one of them was still on):
// the lock came back as soon as the nodes did. A schedule's stuck limit is
// its faults' planned span plus stuckSlack (Schedule.Compile); a fault can
// keep a node down longer than planned (a restart of a paused node waits
// for the pause to end, then for the node to shut down and start: 4 s
// where 0 was planned, and broken-extend-from-end's hunt reported the
// 5.1 s without a grant as stuck), so the slack is measured from the
// faults' actual end, as the history recorded it. A lock that stays stuck
// once the faults are over (a key without an expiry) is still reported,
// unless it is within the slack with the harness's own stalls after that
// end taken out (checker.Stalls): then nobody can say, and the run is
// inconclusive (the docker false-alarm campaign's redlock seed 2, whose
// per-node calls timed out with no fault on, was stuck 5.14 s after the
// heal where 5.0 s is allowed).
func stuckAfterFaults(res *checker.Result, f checker.Finding, etcd bool, ttl time.Duration) stuckness {
	var end int64
	for _, w := range res.Faults {
		if w.Start > f.To {
			continue
		}
		if w.End == 0 || w.End > f.To {
			return stuckExcused // a fault was still on when the stretch ended
		}
		end = max(end, w.End)
	}
	if end == 0 {
		return stuckNow
	}
	slack := int64(stuckSlack(etcd, ttl))
	switch after := f.To - end; {
	case after <= slack:
		return stuckExcused
	case after-checker.Stalled(res.Stalls, end, f.To) <= slack:
		return stuckUnjudged
	}
	return stuckNow
}

// Unjudged says why a run whose result has no violation the hunt reports
// proved nothing ("" when it did): a history the checker could not judge
// (unknown observed, whatever else was), or a stuck stretch that only the
// harness's own stalls made too long.
func Unjudged(res *checker.Result, info lockimpl.Info, ttl time.Duration) string {
	if res == nil {
		return "no result"
	}
	for _, f := range res.Findings {
		if f.Class == checker.ClassStuck && stuckAfterFaults(res, f, info.Needs == lockfault.NeedsEtcd, ttl) == stuckUnjudged {
			return f.Detail + ": after the faults ended, within the slack but for the harness's own stalls (path-slow notes)"
		}
	}
	if slices.Contains(res.Observed, checker.ClassUnknown) {
		if res.Reason != "" {
			return res.Reason
		}
		return "verdict unknown"
	}
	return ""
}

// stuckSlack is how long after its faults a lock may take to be granted
// again before it counts as stuck: two of its leases (a key written just
// before the faults ended expires; see leaseBound) and a second.
func stuckSlack(etcd bool, ttl time.Duration) time.Duration {
	return 2*leaseBound(etcd, ttl) + time.Second
}

// leaseBound is how long a lock's lease outlives its holder's last renewal:
// the TTL, except on etcd, which grants whole seconds and at least its
// minimum lease TTL (etcdMinLease), and extends every lease by an election
// timeout when a node becomes leader (a restarted node). A holder whose
// release and revoke failed while etcd was down keeps the lock that long
// once etcd is back: the false-alarm campaign's etcd seed 8 (TTL 1 s)
// granted again 5.0 s after etcd came back, and was reported stuck.
func leaseBound(etcd bool, ttl time.Duration) time.Duration {
	if !etcd {
		return ttl
	}
	whole := (ttl + time.Second - 1) / time.Second * time.Second
	return max(whole, etcdMinLease) + etcdElection
}

// etcd's minimum lease TTL (3/2 of its election ticks, in whole seconds)
// and its election timeout, with the defaults the nodes run with.
const (
	etcdMinLease = 2 * time.Second
	etcdElection = time.Second
)

// faultKinds strips the targets from "pause-client(c1)".
func faultKinds(fs []string) []string {
	var out []string
	for _, f := range fs {
		if i := strings.IndexByte(f, '('); i > 0 {
			f = f[:i]
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// has says whether a list of fingerprints holds one with this identity.
func has(fps []Fingerprint, id string) bool {
	return slices.ContainsFunc(fps, func(f Fingerprint) bool { return f.ID() == id })
}
