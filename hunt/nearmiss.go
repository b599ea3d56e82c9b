package hunt

import (
	"math"
	"time"

	"github.com/lockfault/lockfault/history"
)

// NearMiss measures how near a run came to a mutual-exclusion violation:
// the learning search's second feedback, beside the coverage keys (see
// docs/HUNT.md, "The learning search"). The idea is targeted
// property-based testing's (Löscher and Sagonas, ISSTA 2017): a number
// the search drives down, not only situations it collects.
//
// Each holder believed it held its key from its grant (the acquire's
// reply) to the end of the validity its lock last reported for the lease
// (acquire, extend, renewal): a holder that acts after that acts on its
// own account (a stale access, the client's, not the lock's), as the
// checker judges it. A lock that reports no validity is believed until the
// holder's last access. For two clients' holds of the same key, the
// earlier not let go (its release not begun) when the later was granted,
// the margin is the gap between the two beliefs, in TTLs: the later start
// less the earlier end. The run's margin is the smallest:
//
//   - below 0: two clients were told they held the key at once: an
//     overlap, or one step from it (a holder that had used that validity
//     would have written beside the other);
//   - a little above 0: the key changed hands just after the old belief
//     ended (a correct lock's expiry hand-off: its drift margin and the
//     new holder's retry);
//   - +Inf: every key changed hands by a release, or never.
//
// A grant whose reply came after the validity it reported (a reply held
// longer than the TTL) is believed by nobody: its belief ends before it
// starts.
//
// Bounded: at most maxClaims grants are compared (the work counted by
// the pairs it looks at, never by time).
func NearMiss(events []history.Event, ttl time.Duration) float64 {
	if ttl <= 0 {
		return math.Inf(1)
	}
	var claims []*claim
	open := map[string]*claim{}    // client → its latest claim not let go
	byLease := map[string]*claim{} // lease → claim
	for _, e := range events {
		switch {
		case e.Op == history.OpAcquire && e.Kind == history.OK && e.Process != "":
			if len(claims) == maxClaims {
				break
			}
			c := &claim{client: e.Process, key: e.Key, granted: e.Time, end: e.Time, valid: e.ValidUntil}
			claims = append(claims, c)
			open[e.Process] = c
			if e.Lease != "" {
				byLease[e.Lease] = c
			}
		case e.Op == history.OpRelease && e.Kind == history.Invoke:
			// The lease released (a re-entrant client holds several).
			c := byLease[e.Lease]
			if c == nil || c.client != e.Process {
				c = open[e.Process]
			}
			if c != nil && c.letGo == 0 {
				c.letGo = e.Time
			}
			if open[e.Process] == c {
				delete(open, e.Process)
			}
		case (e.Op == history.OpExtend && e.Kind == history.OK) || e.Kind == history.Renew:
			if c := byLease[e.Lease]; c != nil && e.ValidUntil > 0 {
				c.valid = max(c.valid, e.ValidUntil)
			}
		case e.Kind == history.Access && !e.Rejected:
			c := byLease[e.Lease]
			if c == nil {
				c = open[e.Process]
			}
			if c != nil && c.client == e.Process {
				c.end = max(c.end, e.Time)
			}
		}
	}
	m := math.Inf(1)
	for j, b := range claims {
		for _, a := range claims[:j] {
			if a.client == b.client || a.key != b.key || a.granted > b.granted || (a.letGo != 0 && a.letGo <= b.granted) {
				continue
			}
			m = math.Min(m, float64(b.granted-min(a.believed(), b.believed()))/float64(ttl))
		}
	}
	return m
}

// maxClaims bounds the grants NearMiss compares (pairs: its square).
const maxClaims = 2000

// claim is one grant as its holder saw it.
type claim struct {
	client, key string
	granted     int64 // the acquire's completion
	valid       int64 // the end of the validity its lock last reported (0: none)
	end         int64 // its last access (or its grant)
	letGo       int64 // its release began (0: never)
}

// believed is when the holder's belief ends: the validity its lock
// reported, or (none reported) its last access.
func (c *claim) believed() int64 {
	if c.valid > 0 {
		return c.valid
	}
	return c.end
}

// nearBucket names a margin (NearMiss) for a coverage key: "near <0" and
// the steps towards it are situations of their own.
func nearBucket(m float64) string {
	switch {
	case math.IsInf(m, 1):
		return "none"
	case m < 0:
		return "<0"
	case m < 0.05:
		return "0-0.05"
	case m < 0.15:
		return "0.05-0.15"
	case m < 0.5:
		return "0.15-0.5"
	}
	return "0.5+"
}
