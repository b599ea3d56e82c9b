package checker

import (
	"fmt"
	"sort"

	"github.com/lockfault/lockfault/history"
)

// fenceInversionPass finds refusals of the legitimate holder. The resource
// refuses an access whose fencing token is smaller than one it has seen; if
// the refused access came from the current holder (inside its hold, and no
// later grant of the key had happened yet), the token it had seen was an
// older grant's: the tokens did not grow with the grants. One finding per
// refused hold, from its first refused access to its last, naming the
// refused client first and the earlier holder with the larger token second.
func fenceInversionPass(in *input) []Finding {
	type span struct{ from, to int64 }
	refused := map[int]*span{}
	var order []int
	in.work.add(len(in.events))
	for _, e := range in.events {
		if e.Kind != history.Access || !e.Rejected || e.Lease == "" {
			continue
		}
		hi, ok := in.hold[e.Lease]
		if !ok {
			continue
		}
		h := in.holds[hi]
		if e.Time < h.Start || e.Time > h.End {
			continue // outside its hold: fencing a holder whose grant ended
		}
		if superseded(in, hi, e.Time) {
			continue // a later grant exists: this is fencing doing its job
		}
		if s := refused[hi]; s != nil {
			s.to = e.Time
		} else {
			refused[hi] = &span{e.Time, e.Time}
			order = append(order, hi)
		}
	}
	if len(order) == 0 {
		return nil
	}
	// For each hold, the earlier-started hold of its key with the largest
	// token (a running maximum over the key's holds in start order).
	maxBefore := make([]int, len(in.holds))
	in.work.add(len(in.holds) + len(order))
	for _, idx := range in.byKey {
		best := -1
		for p := 0; p < len(idx); {
			q := p // holds starting at the same instant are not "earlier"
			for q < len(idx) && in.holds[idx[q]].Start == in.holds[idx[p]].Start {
				maxBefore[idx[q]] = best
				q++
			}
			for ; p < q; p++ {
				if best < 0 || in.holds[idx[p]].Fence > in.holds[best].Fence {
					best = idx[p]
				}
			}
		}
	}
	var out []Finding
	for _, hi := range order {
		h, s := in.holds[hi], refused[hi]
		f := Finding{Class: ClassFenceInversion, Key: h.Key, Clients: []string{h.Process}, Leases: []string{h.Lease}, From: s.from, To: s.to}
		// The culprit: the earlier grant of the key with the largest token.
		var culprit *Hold
		if j := maxBefore[hi]; j >= 0 && in.holds[j].Fence > h.Fence {
			culprit = &in.holds[j]
		}
		f.Detail = fmt.Sprintf("the resource refused %s (lease %s, fence %d) while it was the current holder", h.Process, h.Lease, h.Fence)
		if culprit != nil {
			f.Clients = append(f.Clients, culprit.Process)
			f.Leases = append(f.Leases, culprit.Lease)
			f.Detail += fmt.Sprintf(": %s (lease %s) was granted earlier with the larger fence %d, so the tokens did not follow the order of the grants", culprit.Process, culprit.Lease, culprit.Fence)
		} else {
			f.Detail += ": no earlier grant of the key carried a larger token, so the refusal has no legitimate cause"
		}
		out = append(out, f)
	}
	return out
}

// superseded says whether another grant of hold hi's key started after it
// and no later than t.
func superseded(in *input, hi int, t int64) bool {
	h := in.holds[hi]
	idx := in.byKey[h.Key]
	// First hold of the key starting strictly after h.
	p := sort.Search(len(idx), func(i int) bool { return in.holds[idx[i]].Start > h.Start })
	return p < len(idx) && in.holds[idx[p]].Start <= t
}
