package hunt

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockfault/lockfault/scenarios"
)

// nearPool keeps the schedules whose runs came nearest to a violation
// (NearMiss below nearEnough), the parents of the learning search's
// refinements: at most maxNear, the nearest first. A parent refined
// maxRefines times leaves the pool: what small changes of it could show,
// they had their chance to.
type nearPool struct {
	entries []*nearEntry
}

type nearEntry struct {
	s      *Schedule
	margin float64
	picked int
}

const (
	// nearEnough: a margin under a sixth of a TTL. A correct lock's expiry
	// hand-off is just above 0 (its drift margin and the next holder's
	// retry); a pause or a cut that ends a hold by expiry lands there.
	nearEnough = 0.15
	maxNear    = 8
	maxRefines = 10
)

func (p *nearPool) add(s *Schedule, m float64) {
	if math.IsNaN(m) || m >= nearEnough {
		return
	}
	p.entries = append(p.entries, &nearEntry{s: s, margin: m})
	slices.SortStableFunc(p.entries, func(a, b *nearEntry) int { return cmp.Compare(a.margin, b.margin) })
	if len(p.entries) > maxNear {
		p.entries = p.entries[:maxNear]
	}
}

// best is the smallest margin in the pool (+Inf: empty).
func (p *nearPool) best() float64 {
	if len(p.entries) == 0 {
		return math.Inf(1)
	}
	return p.entries[0].margin
}

// pick draws a parent: a run below 0 weighs four times one above, and a
// parent weighs less the more it was refined already.
func (p *nearPool) pick(rng *rand.Rand) *nearEntry {
	i := weighted(rng, len(p.entries), func(i int) float64 {
		e, f := p.entries[i], 1.0
		if e.margin < 0 {
			f = 4
		}
		return f / float64(1+e.picked)
	})
	e := p.entries[i]
	if e.picked++; e.picked >= maxRefines {
		p.entries = slices.Delete(p.entries, i, i+1)
	}
	return e
}

// refinements are the small changes Refine makes to a schedule that came
// near a violation: the situation is there, what is missing is a little
// more of it (a fault a little earlier or later, a little longer or
// shorter), less of what spoils it (a second fault), or a holder that
// acts on what its lock told it.
var refinements = []struct {
	name string
	f    func(g *Generator, s *Schedule) bool
}{
	{"nudge-time", (*Generator).refTime},
	{"nudge-length", (*Generator).refLength},
	{"drop-later", (*Generator).refDrop},
	{"hold-to-validity", (*Generator).refHoldToValidity},
}

// againShare: the share of a refinement of a run below 0 that runs the
// schedule again unchanged. A run whose lock reported a validity the key
// did not have is one step from an overlap, and the step may be timing
// alone (the run's own scheduling).
const againShare = 0.25

// Refine derives a schedule from a parent that came near a violation:
// one or two small changes (refinements), or, for a parent below 0, in
// againShare of the draws none. It names what it did (Derived).
func (g *Generator) Refine(e *nearEntry) *Schedule {
	s := e.s.clone()
	s.Shrink = 0
	s.Derived = nil
	if e.margin < 0 && g.chance(againShare) {
		s.Derived = []string{"again"}
		return s
	}
	n := 1 + g.rng.IntN(2)
	for tries := 0; len(s.Derived) < n && tries < 20; tries++ {
		r := refinements[g.rng.IntN(len(refinements))]
		if r.f(g, s) {
			s.Derived = append(s.Derived, r.name)
		}
	}
	g.fix(s)
	return s
}

// refTime moves a fault by 0.02 to 0.15 TTL, earlier or later.
func (g *Generator) refTime(s *Schedule) bool {
	i := g.some(s)
	if i < 0 || s.WhileFree {
		return false
	}
	d := scale(s.TTL, 0.02+0.13*g.rng.Float64())
	if g.chance(0.5) {
		d = -d
	}
	at := max(s.Events[i].At+d, 0)
	if at == s.Events[i].At {
		return false
	}
	s.Events[i].At = at
	return true
}

// refLength makes a fault 0.6 to 1.6 times as long.
func (g *Generator) refLength(s *Schedule) bool {
	i := g.some(s)
	if i < 0 || s.Events[i].Dur == 0 || s.WhileFree {
		return false
	}
	e := &s.Events[i]
	e.Dur = max((time.Duration(float64(e.Dur) * (0.6 + g.rng.Float64()))).Round(time.Millisecond), 10*time.Millisecond)
	return true
}

// refDrop drops a fault other than the cycle's first (the one at its
// anchor).
func (g *Generator) refDrop(s *Schedule) bool {
	if len(s.Events) < 2 {
		return false
	}
	i := 1 + g.rng.IntN(len(s.Events)-1)
	s.Events = slices.Delete(s.Events, i, i+1)
	return true
}

// refHoldToValidity: the holders' critical sections last until shortly
// before the validity their lock reported, so a validity the key did not
// have shows as an overlap.
func (g *Generator) refHoldToValidity(s *Schedule) bool {
	w := &s.Workload
	if w.HoldUntilValid > 0 || w.Hold.D() >= s.TTL {
		return false
	}
	w.HoldUntilValid = scenarios.Duration(scale(s.TTL, 0.1))
	return true
}
