package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockfault/lockfault/history"
)

// gaps returns the stretches with no holder in which clients were trying to
// acquire: the complement of the holds within the span of acquire activity,
// keeping only stretches that contain an acquire attempt.
func gaps(events []history.Event, holds []Hold) [][2]int64 {
	var first, last int64 = -1, -1
	var attempts []int64
	for _, e := range events {
		if e.Op != history.OpAcquire {
			continue
		}
		if first < 0 {
			first = e.Time
		}
		last = e.Time
		if e.Kind == history.Invoke {
			attempts = append(attempts, e.Time)
		}
	}
	if first < 0 {
		return nil
	}
	type iv struct{ a, b int64 }
	var busy []iv
	for _, h := range holds {
		busy = append(busy, iv{h.Start, h.End})
	}
	sort.Slice(busy, func(i, j int) bool { return busy[i].a < busy[j].a })
	var free []iv
	cur := first
	for _, b := range busy {
		if b.b <= cur {
			continue
		}
		if b.a > cur {
			free = append(free, iv{cur, min(b.a, last)})
		}
		cur = max(cur, b.b)
		if cur >= last {
			break
		}
	}
	if cur < last {
		free = append(free, iv{cur, last})
	}
	var out [][2]int64
	for _, f := range free {
		i := sort.Search(len(attempts), func(i int) bool { return attempts[i] >= f.a })
		if i < len(attempts) && attempts[i] <= f.b && f.b > f.a {
			out = append(out, [2]int64{f.a, f.b})
		}
	}
	return out
}

func maxUnavailable(events []history.Event, holds []Hold) int64 {
	var m int64
	for _, g := range gaps(events, holds) {
		m = max(m, g[1]-g[0])
	}
	return m
}

// Stuck reports every stretch longer than limit in which clients kept
// trying and nobody held the lock.
func Stuck(events []history.Event, holds []Hold, limit time.Duration) []Finding {
	var out []Finding
	for _, g := range gaps(events, holds) {
		if d := time.Duration(g[1] - g[0]); d > limit {
			out = append(out, Finding{Class: ClassStuck, From: g[0], To: g[1],
				Detail: fmt.Sprintf("nobody acquired the lock for %v although clients kept trying (limit %v)", d.Round(time.Millisecond), limit)})
		}
	}
	return out
}

// penalties: for each fault, the time from its start to the next grant.
func penalties(faults []Window, holds []Hold) []int64 {
	var out []int64
	for _, f := range faults {
		next := int64(-1)
		for _, h := range holds {
			if h.Start >= f.Start && (next < 0 || h.Start < next) {
				next = h.Start
			}
		}
		if next >= 0 {
			out = append(out, next-f.Start)
		}
	}
	return out
}
