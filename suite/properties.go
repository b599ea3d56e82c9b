package suite

import "github.com/lockfault/lockfault/lockimpl"

// The suite: one line per property.
func init() {
	register(Property{Name: "exclusion/no-faults", Scenario: "exclusion-no-faults",
		Explanation: "with no faults at all, no two clients ever hold the lock at once and no update is lost"})
	register(Property{Name: "crash/frees-within-ttl", Scenario: "crash-frees-within-ttl",
		Explanation: "a holder killed without releasing frees the lock within one TTL"})
	register(Property{Name: "stale/release-after-pause", Scenario: "stale-release-after-pause",
		Explanation: "a holder paused past its lease cannot release the next holder's lock"})
	register(Property{Name: "stale/write-fenced", Scenario: "stale-write-fenced", Requires: lockimpl.CapFencing,
		Explanation: "a holder paused past its lease writes with an older fencing token, and the resource refuses it"})
}
