package checker

import (
	"fmt"
	"time"

	"github.com/lockfault/lockfault/history"
)

// Overlaps finds pairs of holds by different clients that intersect in real
// time. A hold counts from its acquire's ok to its end; a client that touched
// the resource after its hold ended is counted as holding until that access
// ("stale-access"). An overlap is "fenced" when the resource rejected an
// access of the older lease, so the stale holder could not do harm.
func Overlaps(holds []Hold, events []history.Event) []Finding {
	rejected := map[string]bool{}
	for _, e := range events {
		if e.Kind == history.Access && e.Rejected {
			rejected[e.Lease] = true
		}
	}
	var out []Finding
	for i := 0; i < len(holds); i++ {
		for j := i + 1; j < len(holds); j++ {
			a, b := holds[i], holds[j]
			if a.Process == b.Process {
				continue
			}
			from, to := max(a.Start, b.Start), min(a.EffectiveEnd(), b.EffectiveEnd())
			if from >= to {
				continue
			}
			kind := "both-valid"
			if max(a.Start, b.Start) >= min(a.End, b.End) {
				kind = "stale-access"
			}
			f := Finding{
				Class:   ClassOverlap,
				Clients: []string{a.Process, b.Process},
				Leases:  []string{a.Lease, b.Lease},
				From:    from, To: to, Kind: kind,
			}
			older, newer := a, b
			if b.Fence < a.Fence {
				older, newer = b, a
			}
			if older.Fence > 0 && rejected[older.Lease] {
				f.Class = ClassFenced
			}
			f.Detail = describeOverlap(a, b, from, to, kind)
			if f.Class == ClassFenced {
				f.Detail += fmt.Sprintf("; the resource rejected lease %s (fence %d) after seeing fence %d, so the stale holder did no harm", older.Lease, older.Fence, newer.Fence)
			}
			out = append(out, f)
		}
	}
	return out
}

func describeOverlap(a, b Hold, from, to int64, kind string) string {
	d := time.Duration(to - from).Round(time.Millisecond)
	s := fmt.Sprintf("%s (lease %s) and %s (lease %s) both held the lock for %v", a.Process, a.Lease, b.Process, b.Lease, d)
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
