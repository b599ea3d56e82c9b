package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
)

// renewal is a property of a lock's own renewals: it needs a watchdog and
// turns it on with a 1 s lease (a lock without these options runs without
// them); its scenario is the name with "-" for "/".
func renewal(name, broken, correct, explanation string) Property {
	return Property{Name: name, Broken: broken, Correct: correct, Scenario: strings.ReplaceAll(name, "/", "-"), Requires: lockimpl.CapWatchdog,
		Options: RenewalOptions(time.Second), Explanation: explanation,
		NotOnCluster: fmt.Sprintf("its mutation pair (%s, %s) runs on one master: a lock's own renewals are not proven on a cluster", broken, correct)}
}

// RenewalOptions are the lock options that turn on a lock's own renewals
// (a watchdog) with the given lease, for a lock that declares them
// (lockimpl.Info.Declared).
func RenewalOptions(lease time.Duration) map[string]string {
	return map[string]string{"watchdog": "true", "lease": lease.String()}
}

// The suite: one line per property.
func init() {
	registerExclusionToValidity()
	registerIdentityToCluster()
}

// registerExclusionToValidity registers the first half of the suite, in
// its order: exclusion, crash, stale, extend, validity and clock
// properties, and a paused node's liveness.
func registerExclusionToValidity() {
	register(Property{Name: "exclusion/no-faults", Broken: "broken-ignore-nx", Correct: "broken-correct", Scenario: "exclusion-no-faults",
		Explanation: "with no faults at all, no two clients ever hold the lock at once and no update is lost",
		Cluster:     &Pair{Broken: "broken-ignore-nx-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "crash/frees-within-ttl", Broken: "broken-no-ttl", Correct: "broken-correct", Scenario: "crash-frees-within-ttl",
		Explanation: "a holder killed without releasing frees the lock within one TTL",
		Cluster:     &Pair{Broken: "broken-no-ttl-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "stale/release-after-pause", Broken: "broken-del-release", Correct: "broken-correct", Scenario: "stale-release-after-pause",
		Explanation: "a holder paused past its lease cannot release the next holder's lock",
		Cluster:     &Pair{Broken: "broken-del-release-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "stale/write-fenced", Broken: "broken-const-fence", Correct: "fenced", Scenario: "stale-write-fenced", Requires: lockimpl.CapFencing,
		Explanation: "a holder paused past its lease writes with an older fencing token, and the resource refuses it",
		Cluster:     &Pair{Broken: "broken-const-fence-cluster", Correct: "time-fence-cluster"}})
	register(Property{Name: "extend/after-pause", Broken: "broken-blind-extend", Correct: "broken-correct", Scenario: "extend-after-pause", Requires: lockimpl.CapExtend,
		Explanation: "a holder paused past its lease cannot extend it: the extend fails and the next holder keeps the lock",
		Cluster:     &Pair{Broken: "broken-blind-extend-cluster", Correct: "broken-correct-cluster"}})
	// Independent masters give up on a node after a few ms (Redlock's
	// per-node timeout), so a slow reply fails their acquire instead of
	// slowing it: the slow-validity properties apply to single-master and
	// etcd locks (C17, redlock-slow-nodes, covers slow masters).
	register(Property{Name: "validity/slow-acquire", Broken: "broken-validity-from-end", Correct: "broken-correct", Scenario: "validity-slow-acquire", Needs: []lockfault.Needs{lockfault.NeedsSingle, lockfault.NeedsEtcd},
		Explanation: "the validity an acquire reports is measured from its start: a slow acquire does not claim time the key does not have",
		Cluster:     &Pair{Broken: "broken-validity-from-end-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "validity/paused-acquire", Broken: "broken-validity-from-end", Correct: "broken-correct", Scenario: "validity-paused-acquire", Failpoint: "after-setnx",
		Explanation: "a holder paused inside its acquire, after the first write, for most of the TTL claims no validity the key does not have",
		Cluster:     &Pair{Broken: "broken-validity-from-end-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "clock/masters-jump", Broken: "redlock", Correct: "quorum-time-fence", Scenario: "clock-masters-jump", Needs: []lockfault.Needs{lockfault.NeedsMasters},
		Explanation:  "a forward jump of one master's clock, which frees the holder's key there, does not let a second holder lose the first one's update",
		NotOnCluster: "its schedule names the nodes of the independent masters (n1, n4, n5); on a cluster the keys of a spread Redlock sit on the masters their slots choose"})
	register(Property{Name: "clock/node-jump", Broken: "broken-correct", Correct: "fenced", Scenario: "clock-node-jump", Needs: []lockfault.Needs{lockfault.NeedsSingle},
		Explanation: "a forward jump of the server's clock, which expires the holder's key early, does not let a second holder lose the first one's update",
		Cluster:     &Pair{Broken: "broken-correct-cluster", Correct: "time-fence-cluster"}})
	register(Property{Name: "clock/node-drift", Broken: "broken-correct", Correct: "fenced", Scenario: "clock-node-drift", Needs: []lockfault.Needs{lockfault.NeedsSingle},
		Explanation: "a server clock that runs fast, which expires the holder's key early, does not let a second holder lose the first one's update",
		Cluster:     &Pair{Broken: "broken-correct-cluster", Correct: "time-fence-cluster"}})
	register(Property{Name: "clock/client-steps", Broken: "broken-wall-clock", Correct: "broken-correct", Scenario: "clock-client-steps",
		Explanation: "a holder whose wall clock steps back during its acquires claims no validity the key does not have: validity is measured on the monotonic clock",
		Cluster:     &Pair{Broken: "broken-wall-clock-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "extend/validity-from-start", Broken: "broken-extend-from-end", Correct: "broken-correct", Scenario: "extend-validity-from-start", Requires: lockimpl.CapExtend, Needs: []lockfault.Needs{lockfault.NeedsSingle, lockfault.NeedsEtcd},
		Explanation: "the validity an extend reports is measured from the extend's own start",
		Cluster:     &Pair{Broken: "broken-extend-from-end-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "extend/paused", Broken: "broken-extend-from-end", Correct: "broken-correct", Scenario: "extend-paused", Requires: lockimpl.CapExtend, Failpoint: "after-extend",
		Explanation: "a holder paused inside its extend, after the servers renewed the key, for most of the TTL claims no validity the key does not have",
		Cluster:     &Pair{Broken: "broken-extend-from-end-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "liveness/node-paused-acquire", Broken: "broken-no-ttl", Correct: "broken-correct", Scenario: "liveness-node-paused-acquire",
		Explanation: "acquires that time out on a paused server, which carries out their writes when it resumes, leave no key without an expiry: the lock is granted again within one TTL",
		Cluster:     &Pair{Broken: "broken-no-ttl-cluster", Correct: "broken-correct-cluster"}})
}

// registerIdentityToCluster registers the second half, in its order:
// identity, reentrancy, liveness, crash, failover, fencing, the renewals,
// the cluster's own and the independent masters' extends.
func registerIdentityToCluster() {
	register(Property{Name: "identity/old-lease", Broken: "broken-token-per-client", Correct: "broken-correct", Scenario: "identity-old-lease",
		Explanation: "a client that releases an old lease after it acquired again does not release its new grant",
		Cluster:     &Pair{Broken: "broken-token-per-client-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "identity/extend-old-lease", Broken: "broken-blind-extend", Correct: "broken-correct", Scenario: "identity-extend-old-lease", Requires: lockimpl.CapExtend,
		Explanation: "a client that extends an old lease after it acquired again gets a refusal: nothing is held under the old lease",
		Cluster:     &Pair{Broken: "broken-blind-extend-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "identity/restart-same-name", Broken: "broken-name-identity", Correct: "broken-correct", Scenario: "identity-restart-same-name",
		Explanation: "a second process started under a paused holder's name is a different holder: it waits for the old lease like anyone else",
		Cluster:     &Pair{Broken: "broken-name-identity-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "reentrancy/counts", Broken: "broken-uncounted-reentry", Correct: "redisson", Scenario: "reentrancy-counts", Requires: lockimpl.CapReentrant,
		Explanation:  "a reentrant lock counts: after N acquires it is held until the N-th release",
		NotOnCluster: "no reentrant lock runs on a cluster, and its control (redisson) runs on one master"})
	register(Property{Name: "reentrancy/expiry", Broken: "broken-local-reentry", Correct: "reentrant-watchdog", Scenario: "reentrancy-expiry", Requires: lockimpl.CapReentrant,
		Explanation:  "a re-entry after the hold it re-enters expired is refused: the key is no longer the client's",
		NotOnCluster: "no reentrant lock runs on a cluster, and its control (reentrant-watchdog) runs on one master"})
	reentrantRenewal := renewal("reentrancy/watchdog", "broken-reentry-watchdog", "reentrant-watchdog", "a reentrant lock's renewals go on until the release that balances the first acquire")
	reentrantRenewal.Requires = lockimpl.CapReentrant + "+" + lockimpl.CapWatchdog
	reentrantRenewal.NotOnCluster = "no reentrant lock runs on a cluster, and its control (reentrant-watchdog) runs on one master"
	register(reentrantRenewal)
	register(Property{Name: "liveness/holder-partition", Broken: "broken-no-ttl", Correct: "broken-correct", Scenario: "liveness-holder-partition",
		Explanation: "a holder cut off from every node keeps the lock unavailable for at most one TTL",
		Cluster:     &Pair{Broken: "broken-no-ttl-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "crash/mid-acquire", Broken: "broken-no-ttl", Correct: "broken-correct", Scenario: "crash-mid-acquire", Failpoint: "after-setnx",
		Explanation: "a client killed inside its acquire, after the first write, leaves nothing that outlives one TTL",
		Cluster:     &Pair{Broken: "broken-no-ttl-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "stale/release-mid-release", Broken: "broken-get-then-del", Correct: "broken-correct", Scenario: "stale-release-mid-release", Failpoint: "release-after-get",
		Explanation: "a holder paused inside its release, after checking the key, cannot delete the next holder's key",
		Cluster:     &Pair{Broken: "broken-get-then-del-cluster", Correct: "broken-correct-cluster"}})
	register(Property{Name: "failover/async-replica", Broken: "broken-correct", Correct: "acked", Scenario: "failover-async-replica", Needs: []lockfault.Needs{lockfault.NeedsSingle},
		Explanation: "a failover to an asynchronous replica does not hand a held lock to a second client",
		Cluster:     &Pair{Broken: "broken-correct-cluster", Correct: "acked-cluster"}})
	register(Property{Name: "failover/sentinel", Broken: "broken-correct", Correct: "acked", Scenario: "failover-sentinel", Needs: []lockfault.Needs{lockfault.NeedsSingle},
		Explanation:  "a failover by the Sentinels to an asynchronous replica does not hand a held lock to a second client",
		NotOnCluster: "a cluster has no Sentinels: it fails its masters over itself, which failover/async-replica attacks on a cluster"})
	register(Property{Name: "fencing/monotonic", Broken: "broken-client-fence", Correct: "fenced", Scenario: "fencing-monotonic", Requires: lockimpl.CapFencing,
		Explanation: "fencing tokens strictly increase with the grants, across clients and client restarts",
		Cluster:     &Pair{Broken: "broken-client-fence-cluster", Correct: "time-fence-cluster"}})
	register(Property{Name: "fencing/failover", Broken: "broken-memory-fence", Correct: "time-fence", Scenario: "fencing-failover", Requires: lockimpl.CapFencing, Needs: []lockfault.Needs{lockfault.NeedsSingle},
		Explanation:  "fencing tokens keep increasing across a failover to an asynchronous replica",
		NotOnCluster: "its failover is written for a master with a replica; the cluster's own failover is attacked by failover/async-replica, without fencing"})
	register(Property{Name: "fencing/node-restart", Broken: "broken-memory-fence", Correct: "time-fence", Scenario: "fencing-node-restart", Requires: lockimpl.CapFencing,
		Explanation:  "fencing tokens keep increasing across a restart of every node",
		NotOnCluster: "its schedule restarts every node at once, which a cluster's slot map and failovers were not proven to survive (no mutation pair has run there)"})
	register(Property{Name: "extend/partition", Broken: "broken-swallow-extend-error", Correct: "broken-correct", Scenario: "extend-partition", Requires: lockimpl.CapExtend,
		Explanation: "an extend that cannot reach the servers does not succeed",
		Cluster:     &Pair{Broken: "broken-swallow-extend-error-cluster", Correct: "broken-correct-cluster"}})
	registerRenewals()
	register(Property{Name: "cluster/slot-migration", Broken: "broken-cluster-no-redirect", Correct: "single-cluster", Scenario: "cluster-slot-migration", Needs: []lockfault.Needs{lockfault.NeedsCluster},
		Explanation: "a held lock survives a migration of its key's slot: nobody else acquires while it is held, and the holder's release, sent while the key moves, frees it at once"})
	register(Property{Name: "cluster/minority-grant", Broken: "single-cluster", Correct: "cluster-capped-validity", Scenario: "cluster-minority-grant", Needs: []lockfault.Needs{lockfault.NeedsCluster},
		Explanation: "a grant from a master cut off in a minority is not trusted past the node timeout: its validity ends before the majority can fail that master over and grant the lock again"})
	register(Property{Name: "extend/majority-restart", Broken: "broken-extend-any-master", Correct: "redlock", Scenario: "extend-majority-restart", Requires: lockimpl.CapExtend, Needs: []lockfault.Needs{lockfault.NeedsMasters},
		Explanation:  "an extend succeeds only where a majority of the masters still held the lock",
		NotOnCluster: "written for independent masters (a Redlock's key on each): killing a majority of a cluster's masters fails them over to their replicas, another experiment"})
	register(Property{Name: "extend/minority-down", Broken: "broken-extend-every-master", Correct: "redlock", Scenario: "extend-minority-down", Requires: lockimpl.CapExtend, Needs: []lockfault.Needs{lockfault.NeedsMasters},
		Explanation:  "with a minority of the masters down, a holder's extends still succeed: the lock stays with its holder",
		NotOnCluster: "written for independent masters (a Redlock's key on each): killing a cluster's master fails it over to its replica, another experiment"})
}

// registerRenewals registers the properties of a lock that renews its own
// lease (a watchdog), in their place among init's.
func registerRenewals() {
	register(renewal("renewal/keeps-live-holder", "broken-no-renewal", "redisson",
		"the lock's renewals keep a live holder's short lease through a long critical section, and stop when it dies"))
	register(renewal("renewal/fails-while-valid", "broken-renew-on-error", "watchdog",
		"a holder whose renewals fail while its lease is still valid stops believing it holds the lock before the lease ends"))
	register(renewal("renewal/stale-after-pause", "broken-blind-renewal", "watchdog",
		"a holder paused past its lease cannot renew it when it resumes, and stops believing it holds the lock"))
	register(renewal("renewal/validity-from-start", "broken-renew-from-end", "watchdog",
		"the validity a renewal reports is measured from the renewal's start: a renewal answered late claims no time the key does not have"))
	nodePaused := renewal("renewal/node-paused", "broken-renew-on-error", "watchdog",
		"a holder whose renewals time out on a paused server, while its key expires there, stops believing it holds the lock before the key expires")
	nodePaused.Options["lease"] = "3s" // longer than the client's 500 ms read timeout: a renewal times out well within its lease
	register(nodePaused)
}
