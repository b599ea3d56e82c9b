package suite

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
)

// Reasons shared by several locks in the table.
const (
	nodeClock       = "Redis expires keys by its realtime clock: a forward jump frees the held key early, and no fencing token guards the resource (C10)"
	nodeDrift       = "Redis expires keys by its realtime clock: a clock that runs fast frees the held key early, and no fencing token guards the resource"
	mastersClock    = "a master whose clock jumps drops the holder's key early, and a majority without the holder's key grants it again; no fencing token guards the resource (C10)"
	asyncFailover   = "asynchronous replication loses the grant on failover (C5)"
	clusterFailover = "asynchronous replication loses the grant when the cluster fails the key's master over to its replica (C5 on a cluster)"
	clusterMinority = "its validity is the TTL: a grant from a master cut off in a minority outlives the majority's failover of that master, whose replica never got the key"
	clusterClock    = "every node's clock moves (the property's fault acts on all of them): the keys expire early on every master, and no fencing token guards the resource"
	// Measured (simulate cards, process backend): a Redlock-style lock
	// gives up on a master after its per-node timeout, so a client whose
	// replies come 350 ms late is never granted (the independent masters'
	// locks do not claim these properties for that reason).
	redlockSlow = "unavailable: every request to a master is cut at the lock's per-node timeout (far below 350 ms), so the slow client is never granted"
	// Measured: the client cut off with the key's master gets no grant
	// after the majority promoted its replica: its requests time out on the
	// old master within the context the lock gives each one, and it is not
	// granted within 20 s of the cut.
	clusterStuckAfterCut = "unavailable (measured): with the key's master cut off from it, the second client's acquires time out on the old master and it is not granted within 20 s, after the majority promoted the replica"
	sentinelFailover     = "asynchronous replication loses the grant on a Sentinel failover (C5)"
)

// violations lists, for each built-in lock, the properties it is known to
// break and why ("*": every property that applies). Every other property that applies to the lock is expected
// to hold; one that does not apply is not claimed. The suite's promise test
// (TestPromises) runs each lock through the suite and compares.
var violations = map[string]map[string]string{
	"single-cluster": {
		"cluster/minority-grant": clusterMinority,
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": clusterFailover,
	},
	// redislock-cluster and redsync-cluster hold failover/async-replica
	// (measured) only because go-redis's ClusterClient keeps sending to the
	// killed master through the property's 2 s window (EOF: acquires of
	// unknown outcome) and learns the new master after it: not because the
	// grant survives the failover.
	"redislock-cluster": {
		"cluster/minority-grant": clusterStuckAfterCut,
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
	},
	"redsync-cluster": {
		"cluster/minority-grant":     clusterStuckAfterCut,
		"clock/node-jump":            nodeClock,
		"clock/node-drift":           nodeDrift,
		"validity/slow-acquire":      redlockSlow,
		"extend/validity-from-start": redlockSlow,
	},
	"redlock-cluster": {
		"clock/node-jump":            clusterClock,
		"clock/node-drift":           clusterClock,
		"validity/slow-acquire":      redlockSlow,
		"extend/validity-from-start": redlockSlow,
		"cluster/minority-grant":     "unavailable: the client cut off with the key's master reaches one of the three masters that hold its keys and is never granted, so the minority grant the property awaits never comes (the schedule cannot exercise it)",
	},
	"rueidislock-cluster": {
		// Measured: for the suite's resource ("order") two of its three
		// keys (rueidislock:0:order, slot 7764; rueidislock:1:order, slot
		// 9781) fall on the master serving lock:order's slot (9975), which
		// these properties fail over or cut off.
		"failover/async-replica": "two of its three keys sit on the key's master (their slots fall in its range): a failover to the replica that lacks them loses the majority, and a second client acquires while the first one's lock context still says held",
		"cluster/minority-grant": "two of its three keys sit on the master cut off in the minority: the client on that side holds a majority there, and after the majority's failover a second client acquires while the first one's lock context still says held",
		"clock/node-jump":        clusterClock,
		"clock/node-drift":       clusterClock,
		"validity/slow-acquire":  "unavailable: each attempt is cut at TryNextAfter (20 ms by default); with 350 ms on the replies the slow client is never granted",
		"clock/client-steps":     "rueidislock dates its keys' expiry from the client's wall clock (SET NX PXAT and PEXPIREAT deadline.UnixMilli(), rueidislock/lock.go): a client whose clock steps back sets an expiry the server reaches early, and a second client acquires while the first one's lock context still says held",
	},
	"setnx-expire": {
		"clock/node-jump":              nodeClock,
		"clock/node-drift":             nodeDrift,
		"crash/mid-acquire":            "the key is set without a TTL and the holder dies before its EXPIRE: stuck (C1)",
		"liveness/node-paused-acquire": "an acquire that timed out on the paused server never sends its EXPIRE, and the server sets its key without a TTL when it resumes: stuck (C1)",
		// A failover loses an unreplicated grant for every single-master lock.
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
	},
	"get-set": {
		// Every other property has clients asking for a free key at the
		// same moment, and they overlap (see heldDespite).
		"*": "GET then SET is check-then-act: two clients that both see an empty key both hold the lock",
	},
	"del-release": {
		"clock/node-jump":           nodeClock,
		"clock/node-drift":          nodeDrift,
		"stale/release-after-pause": "the release is a plain DEL: a stale holder deletes the next holder's key (C2)",
		"identity/old-lease":        "the release is a plain DEL: releasing an old lease deletes the client's current grant",
		"failover/async-replica":    asyncFailover,
		"failover/sentinel":         sentinelFailover,
	},
	"get-del-release": {
		"clock/node-jump":           nodeClock,
		"clock/node-drift":          nodeDrift,
		"stale/release-mid-release": "the key changes hands between the GET and the DEL (C3)",
		"failover/async-replica":    asyncFailover,
		"failover/sentinel":         sentinelFailover,
	},
	"single": {
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
	},
	"fenced": {
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
		"fencing/node-restart":   "the token counter lives in Redis's memory: a restart without persistence starts it again from 1",
		"fencing/failover":       "the token counter is replicated asynchronously: a failover loses its last increments and tokens repeat",
	},
	"redisson": {
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": asyncFailover + "; option wait-replicas is the remedy",
		"failover/sentinel":      sentinelFailover + "; option wait-replicas is the remedy",
		// Redisson's lock script grants when the key is missing or has the
		// client's field: after an expiry a re-entry is a fresh grant.
		"reentrancy/expiry": "a re-entry after the outer hold expired is a fresh grant (the lock script creates the hash anew); the inner release deletes it and the outer critical section runs unprotected",
	},
	"redlock": {
		"clock/masters-jump": mastersClock,
	},
	"redsync": {
		"clock/masters-jump": mastersClock,
	},
	"gocron-redis-lock": {
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
	},
	"go-zero": {
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
		// Measured (make cards): go-zero's docs say the lock can be
		// re-entered, but a re-entry re-sets the one key and does not count:
		// the inner release deletes it while the outer holder still runs.
		"reentrancy/counts": "a re-entry re-sets the key without counting it: the inner release deletes the key and a second client acquires while the outer holder still runs",
		"reentrancy/expiry": "a re-entry re-sets the key without counting it: the inner release deletes the key and a second client acquires while the outer holder still runs",
	},
	"rueidislock": {
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
		// Measured (make cards): rueidislock bounds every attempt on a key
		// by its TryNextAfter option (20 ms by default, rueidislock/lock.go:
		// acquire's context.WithTimeout), so a client whose replies come
		// 20 ms late or more is never granted: "context deadline exceeded".
		"validity/slow-acquire": "unavailable: each attempt is cut at TryNextAfter (20 ms by default); with 350 ms on the replies the slow client is never granted",
		// Measured once a client clock step reached the library (the clock
		// overlay; before it the step moved nothing in lockfault-ext and
		// this property was held without being exercised).
		"clock/client-steps":          "rueidislock dates its keys' expiry from the client's wall clock (SET NX PXAT and PEXPIREAT deadline.UnixMilli(), rueidislock/lock.go): a client whose clock steps back sets an expiry the server reaches early, and a second client acquires while the first one's lock context still says held",
		"renewal/validity-from-start": "unavailable: each attempt is cut at TryNextAfter (20 ms by default); with 350 ms on the replies the slow client is never granted",
	},
	"redislock": {
		"clock/node-jump":        nodeClock,
		"clock/node-drift":       nodeDrift,
		"failover/async-replica": asyncFailover,
		"failover/sentinel":      sentinelFailover,
	},
}

// heldDespite lists, for a lock whose violations say "*", the properties it
// nevertheless holds: their schedules never have two clients ask for a free
// key at the same moment (the clients start apart, or there is one client
// and its clone, and each pauses 1 s after a release), so a check-then-act
// race cannot show.
var heldDespite = map[string]map[string]bool{
	"get-set": {"clock/client-steps": true, "validity/slow-acquire": true, "identity/restart-same-name": true},
}

// Remedies lists the safety options lockfault's cards cover: a shipped
// lock with an option on (its label, as runner.BuiltIn reads it), the
// properties the lock without it violates and the option is meant to win
// (each then expected to hold), and why. make cards runs each beside the
// lock without it.
var Remedies = map[string]map[string]string{
	"redisson+wait-replicas=1": {
		"failover/async-replica": "a grant waits for one replica's acknowledgement (WAIT 1) and is refused without it, so the replica a failover promotes has every grant",
		"failover/sentinel":      "a grant waits for one replica's acknowledgement (WAIT 1) and is refused without it, so the replica the Sentinels promote has every grant",
	},
}

// Promise is the promise table's entry for a subject and a property: the
// lock's (Expected), except where the subject's options are a remedy for
// the property (Remedies). A lock with a safety option on is carded on the
// properties the option is meant to win only: the rest are the lock's own
// card (wait-replicas=1 on a topology without a replica grants nothing).
func Promise(subj runner.Subject, p Property) (outcome card.Outcome, why string) {
	if ok, why := p.AppliesTo(subj); !ok {
		return card.NotClaimed, why
	}
	outcome, why = Expected(subj.Info, p)
	if outcome == card.Violated {
		if r, ok := Remedies[subj.Label()][p.Name]; ok {
			return card.Held, r
		}
	}
	return outcome, why
}

// AppliesTo says whether the property is run against a subject: it applies
// to the lock (Applies), and a lock with a safety option on is run on the
// properties the option is meant to win only.
func (p Property) AppliesTo(subj runner.Subject) (bool, string) {
	if ok, why := p.Applies(subj.Info); !ok {
		return false, why
	}
	if r, ok := Remedies[subj.Label()]; ok {
		if _, wins := r[p.Name]; !wins {
			return false, fmt.Sprintf("%s is carded on the properties its option is meant to win; %s's own card has this one", subj.Label(), subj.Name())
		}
	}
	return true, ""
}

// RemedyLocks are the labels of Remedies, sorted.
func RemedyLocks() []string { return slices.Sorted(maps.Keys(Remedies)) }

// Expected is the promise table's entry for a lock and a property: held,
// violated (with the reason) or not claimed (with the reason).
func Expected(info lockimpl.Info, p Property) (outcome card.Outcome, why string) {
	if ok, why := p.Applies(info); !ok {
		return card.NotClaimed, why
	}
	if why, ok := violations[info.Name][p.Name]; ok {
		return card.Violated, why
	}
	if heldDespite[info.Name][p.Name] {
		return card.Held, ""
	}
	if why, ok := violations[info.Name]["*"]; ok {
		return card.Violated, why
	}
	return card.Held, ""
}

// PromiseTable renders the promise table of the given locks as Markdown:
// one row per property, one column per lock (README shows it).
func PromiseTable(locks []lockimpl.Info) string {
	sort.Slice(locks, func(i, j int) bool { return locks[i].Name < locks[j].Name })
	var b strings.Builder
	b.WriteString("| property |")
	for _, l := range locks {
		b.WriteString(" " + l.Name + " |")
	}
	b.WriteString("\n|---|")
	for range locks {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range All() {
		fmt.Fprintf(&b, "| %s |", p.Name)
		for _, l := range locks {
			o, _ := Expected(l, p)
			cell := map[card.Outcome]string{card.Held: "held", card.Violated: "**violated**", card.NotClaimed: "–"}[o]
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// KnownViolations returns the properties a built-in lock is known to break,
// each with its reason ("*": every property that applies), as the promise
// table says: the hunt turns them into the lock's known limits.
func KnownViolations(lock string) map[string]string {
	return maps.Clone(violations[lock])
}
