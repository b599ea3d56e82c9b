package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockfault/lockfault/history"
)

// overlapPass finds overlaps per key.
func overlapPass(in *input) []Finding {
	acc := accessesByLease(in)
	var out []Finding
	for _, k := range in.keys {
		idx := in.byKey[k]
		hs := make([]Hold, len(idx))
		for i, j := range idx {
			hs[i] = in.holds[j]
		}
		in.work.add(len(hs))
		out = append(out, overlaps(hs, acc, &in.work)...)
	}
	return out
}

// leaseAccess is one access to the resource, as the overlap and fencing
// passes need it.
type leaseAccess struct {
	t        int64
	write    bool
	rejected bool
}

// accessesByLease lists each lease's accesses in time order.
func accessesByLease(in *input) map[string][]leaseAccess {
	m := map[string][]leaseAccess{}
	in.work.add(len(in.events))
	for _, e := range in.events {
		if e.Kind == history.Access && e.Lease != "" {
			m[e.Lease] = append(m[e.Lease], leaseAccess{t: e.Time, write: e.Access == "write", rejected: e.Rejected})
		}
	}
	return m
}

// Overlaps finds pairs of holds (of one key) by different clients that
// intersect in real time. A hold counts from its acquire's ok to its end; a
// client that touched the resource after its hold ended is counted as
// holding until that access ("stale-access").
//
// Which of two overlapping holds is stale is decided by real time: the one
// granted first (a later grant supersedes it), never by comparing fencing
// tokens. The overlap is "fenced" when the resource refused an access of
// the stale holder made once the newer grant existed and accepted none of
// its writes from then on: the stale holder could not do harm. A stale
// write the resource accepted leaves the overlap an overlap.
//
// It is a sweep over the holds in start order: each hold is compared only
// with the holds still in effect when it starts (O(n log n) plus the
// number of overlaps).
func Overlaps(holds []Hold, events []history.Event) []Finding {
	acc := map[string][]leaseAccess{}
	for _, e := range events {
		if e.Kind == history.Access && e.Lease != "" {
			acc[e.Lease] = append(acc[e.Lease], leaseAccess{t: e.Time, write: e.Access == "write", rejected: e.Rejected})
		}
	}
	byKey := map[string][]Hold{}
	var keys []string
	for _, h := range holds {
		if _, ok := byKey[h.Key]; !ok {
			keys = append(keys, h.Key)
		}
		byKey[h.Key] = append(byKey[h.Key], h)
	}
	sort.Strings(keys)
	var out []Finding
	for _, k := range keys {
		hs := byKey[k]
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].Start < hs[j].Start })
		out = append(out, overlaps(hs, acc, nil)...)
	}
	return out
}

// overlaps sweeps the holds of one key, ordered by start.
func overlaps(hs []Hold, acc map[string][]leaseAccess, w *work) []Finding {
	var out []Finding
	var active []int // holds whose effective end is after the current start
	for j := range hs {
		b := hs[j]
		kept := active[:0]
		w.add(1 + len(active))
		for _, i := range active {
			if hs[i].EffectiveEnd() > b.Start {
				kept = append(kept, i)
			}
		}
		active = kept
		for _, i := range active {
			a := hs[i] // a started no later than b: a is the stale one
			if a.Process == b.Process {
				continue
			}
			from, to := b.Start, min(a.EffectiveEnd(), b.EffectiveEnd())
			if from >= to {
				continue
			}
			kind := "both-valid"
			if b.Start >= min(a.End, b.End) {
				kind = "stale-access"
			}
			f := Finding{
				Class:   ClassOverlap,
				Key:     b.Key,
				Clients: []string{a.Process, b.Process},
				Leases:  []string{a.Lease, b.Lease},
				From:    from, To: to, Kind: kind,
			}
			f.Detail = describeOverlap(a, b, from, to, kind)
			if refusedAt, ok := fencedOut(acc[a.Lease], b.Start, w); ok {
				f.Class = ClassFenced
				f.Detail += fmt.Sprintf("; the resource refused %s's access at %+.3f s after %s was granted (fence %d over %d), and accepted none of its writes from then on, so the stale holder did no harm",
					a.Lease, float64(refusedAt-b.Start)/1e9, b.Lease, b.Fence, a.Fence)
			}
			out = append(out, f)
		}
		active = append(active, j)
	}
	return out
}

// fencedOut says whether the stale lease's accesses from since on include
// a refusal and no accepted write, and when the first refusal was.
func fencedOut(as []leaseAccess, since int64, w *work) (int64, bool) {
	i := sort.Search(len(as), func(i int) bool { return as[i].t >= since })
	var refused int64 = -1
	w.add(len(as) - i)
	for _, a := range as[i:] {
		if a.rejected {
			if refused < 0 {
				refused = a.t
			}
		} else if a.write {
			return 0, false
		}
	}
	return refused, refused >= 0
}

func describeOverlap(a, b Hold, from, to int64, kind string) string {
	d := time.Duration(to - from).Round(time.Millisecond)
	s := fmt.Sprintf("%s (lease %s) and %s (lease %s) both held the lock", a.Process, a.Lease, b.Process, b.Lease)
	if a.Key != "" {
		s += fmt.Sprintf(" on key %q", a.Key)
	}
	s += fmt.Sprintf(" for %v", d)
	if kind == "stale-access" {
		stale := a
		if b.End < to && b.LastAccess > b.End {
			stale = b
		}
		s += fmt.Sprintf("; %s's hold had ended (%s) but it still accessed the resource %v later",
			stale.Process, stale.EndReason, time.Duration(stale.LastAccess-stale.End).Round(time.Millisecond))
	}
	return s
}
