package checker

import (
	"fmt"
	"time"

	"github.com/lockfault/lockfault/history"
)

// staleExtendPass finds extends that succeeded on a lease the client had
// already released with success. After a successful release the lock holds
// nothing under that lease: a correct extend of it fails. One that succeeds
// renewed something else (the client's newer grant, or another client's key)
// and tells the client it holds a lease it gave up. One finding per lease,
// at its first such extend.
func staleExtendPass(in *input) []Finding {
	released := map[string]int64{} // lease -> time of its successful release
	reported := map[string]bool{}
	var out []Finding
	in.work.add(len(in.events))
	for i, e := range in.events {
		if e.Kind != history.OK || e.Lease == "" {
			continue
		}
		switch e.Op {
		case history.OpRelease:
			if _, ok := released[e.Lease]; !ok {
				released[e.Lease] = e.Time
			}
		case history.OpExtend:
			at, ok := released[e.Lease]
			if !ok || reported[e.Lease] {
				continue
			}
			reported[e.Lease] = true
			out = append(out, Finding{Class: ClassStaleExtend, Key: in.evKeys[i], Clients: []string{e.Process}, Leases: []string{e.Lease},
				From: at, To: e.Time,
				Detail: fmt.Sprintf("%s extended lease %s with success %v after it had released it with success: the lock renewed a lease that no longer existed",
					e.Process, e.Lease, time.Duration(e.Time-at).Round(time.Millisecond))})
		}
	}
	return out
}
