package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockfault/lockfault/history"
)

// gaps returns, per key, the stretches with no holder in which clients were
// trying to acquire: the complement of the key's holds within the span of
// its acquire activity, keeping only stretches that contain an attempt.
func gaps(in *input) map[string][][2]int64 {
	type act struct {
		first, last int64
		attempts    []int64
	}
	acts := map[string]*act{}
	for i, e := range in.events {
		if e.Op != history.OpAcquire {
			continue
		}
		k := in.evKeys[i]
		a := acts[k]
		if a == nil {
			a = &act{first: e.Time}
			acts[k] = a
		}
		a.last = e.Time
		if e.Kind == history.Invoke {
			a.attempts = append(a.attempts, e.Time)
		}
	}
	out := map[string][][2]int64{}
	for k, a := range acts {
		type iv struct{ a, b int64 }
		var free []iv
		cur := a.first
		for _, hi := range in.byKey[k] { // ordered by start
			h := in.holds[hi]
			if h.End <= cur {
				continue
			}
			if h.Start > cur {
				free = append(free, iv{cur, min(h.Start, a.last)})
			}
			cur = max(cur, h.End)
			if cur >= a.last {
				break
			}
		}
		if cur < a.last {
			free = append(free, iv{cur, a.last})
		}
		for _, f := range free {
			i := sort.Search(len(a.attempts), func(i int) bool { return a.attempts[i] >= f.a })
			if i < len(a.attempts) && a.attempts[i] <= f.b && f.b > f.a {
				out[k] = append(out[k], [2]int64{f.a, f.b})
			}
		}
	}
	return out
}

func maxUnavailable(in *input) int64 {
	var m int64
	for _, gs := range gaps(in) {
		for _, g := range gs {
			m = max(m, g[1]-g[0])
		}
	}
	return m
}

// stuckPass reports, per key, every stretch longer than StuckAfter in which
// clients kept trying and nobody held the lock.
func stuckPass(in *input) []Finding {
	if in.opt.StuckAfter <= 0 {
		return nil
	}
	limit := in.opt.StuckAfter
	var out []Finding
	all := gaps(in)
	for _, k := range in.keys {
		for _, g := range all[k] {
			if d := time.Duration(g[1] - g[0]); d > limit {
				out = append(out, Finding{Class: ClassStuck, Key: k, From: g[0], To: g[1],
					Detail: fmt.Sprintf("nobody acquired the lock for %v although clients kept trying (limit %v)", d.Round(time.Millisecond), limit)})
			}
		}
	}
	return out
}

// penalties: for each fault, the time from its start to the next grant.
func penalties(faults []Window, holds []Hold) []int64 {
	var out []int64
	// holds are ordered by start.
	for _, f := range faults {
		i := sort.Search(len(holds), func(i int) bool { return holds[i].Start >= f.Start })
		if i < len(holds) {
			out = append(out, holds[i].Start-f.Start)
		}
	}
	return out
}
