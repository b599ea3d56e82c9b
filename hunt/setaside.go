package hunt

import (
	"math/rand/v2"
	"slices"
)

// The overfitting guard of the learning search (issue 34): a third of the
// suite's mutation locks, drawn at random with a recorded seed before the
// search was tuned, are never used to tune it, and are reported apart in
// every measurement; so are the hunt's own mutation locks (HuntOnly),
// slips the property suite does not catch, added at the same time.

// SetAsidePool is the suite's mutation locks as they were when the set
// was drawn (27 November 2026: the 18 of docs/HUNT.md's table).
var SetAsidePool = []string{
	"broken-blind-extend", "broken-client-fence", "broken-const-fence", "broken-del-release",
	"broken-extend-any-master", "broken-extend-every-master", "broken-extend-from-end", "broken-get-then-del",
	"broken-ignore-nx", "broken-memory-fence", "broken-name-identity", "broken-no-renewal",
	"broken-no-ttl", "broken-swallow-extend-error", "broken-token-per-client", "broken-uncounted-reentry",
	"broken-validity-from-end", "broken-wall-clock",
}

// SetAsideSeed drew SetAside from SetAsidePool (DrawSetAside).
const SetAsideSeed = 34

// SetAside are the mutation locks the search is not tuned on:
// DrawSetAside(SetAsidePool, SetAsideSeed), written out so a reader sees
// them (a test checks the two agree).
var SetAside = []string{
	"broken-client-fence", "broken-const-fence", "broken-del-release",
	"broken-extend-every-master", "broken-extend-from-end", "broken-validity-from-end",
}

// HuntOnly are the hunt's own mutation locks (suite/broken_test.go): one
// slip each of the correct single-master lock that no property of the
// suite catches (TestSuiteMissesHuntOnlyMutations). They are set aside
// too. Two more candidates were caught by the suite and dropped: a SET NX
// whose reply never came taken as granted (liveness/node-paused-acquire,
// liveness/holder-partition, extend/partition), and an extend that
// deletes a key it finds not its own (identity/extend-old-lease,
// extend/after-pause).
var HuntOnly = []string{"broken-extend-micros"}

// DrawSetAside draws a third of pool (sorted first) with seed: the set
// aside, sorted.
func DrawSetAside(pool []string, seed uint64) []string {
	p := slices.Clone(pool)
	slices.Sort(p)
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	out := p[:len(p)/3]
	slices.Sort(out)
	return out
}

// IsSetAside: the lock is kept out of the search's tuning.
func IsSetAside(lock string) bool {
	return slices.Contains(SetAside, lock) || slices.Contains(HuntOnly, lock)
}
