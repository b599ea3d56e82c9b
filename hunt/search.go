package hunt

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lockfault/lockfault/scenarios"
)

// Searches a hunt can use (-search).
const (
	SearchRandom = "random" // the tuned generator alone: every schedule a fresh draw
	// SearchLearn: the tuned generator's fresh draws, the corpus and its
	// mutations, the refinements of the runs nearest a violation, and the
	// probe and stretches of an extend that overclaims its validity.
	SearchLearn = "learn"
	// SearchLearnPlain: the same over the plain generator's fresh draws
	// (to measure whether the special cases still pay).
	SearchLearnPlain = "learn-plain"
)

// Searches are the names -search allows.
var Searches = []string{SearchRandom, SearchLearn, SearchLearnPlain}

// Feedback is what one run tells the search: the situations it covered
// (Coverage), the smallest margin to a violation it came to (NearMiss,
// in TTLs; +Inf: none), and the operations whose reported validity
// overclaimed (Overclaims).
type Feedback struct {
	Keys   []string
	Margin float64
	Over   []string
}

// Search draws the hunt's schedules and learns from what each covered.
type Search interface {
	Next() *Schedule
	// Observe is told what a schedule's run covered and how near it came
	// to a violation (Feedback): it returns how many keys were new.
	Observe(s *Schedule, f Feedback) int
	// Keys is how many distinct keys the runs covered so far.
	Keys() int
}

// NewSearch is the search of that name over a space, from a seed.
func NewSearch(name string, sp *Space, seed int64) (Search, error) {
	switch name {
	case SearchRandom, "":
		return &randomSearch{gen: NewGenerator(sp, seed), corpus: NewCorpus()}, nil
	case SearchLearn:
		return newLearnSearch(NewGenerator(sp, seed), sp, seed), nil
	case SearchLearnPlain:
		return newLearnSearch(NewPlainGenerator(sp, seed), sp, seed), nil
	}
	return nil, fmt.Errorf("-search %q: unknown (allowed: %v)", name, Searches)
}

// randomSearch is today's generator: it keeps the coverage only to report
// it, never to draw.
type randomSearch struct {
	gen    *Generator
	corpus *Corpus
}

func (r *randomSearch) Next() *Schedule { return r.gen.Next() }
func (r *randomSearch) Observe(s *Schedule, f Feedback) int {
	return r.corpus.Add(s, f.Keys)
}
func (r *randomSearch) Keys() int { return r.corpus.Keys() }

// learnSearch draws from four sources: fresh schedules from its
// generator; schedules derived from a parent of the corpus (Mutate,
// spliced with another in some), which covered something new;
// refinements (Refine) of the schedules that came nearest to a violation
// (nearPool); stretches (Stretch), the attack on an operation that
// overclaimed its validity (Overclaims) in overclaimRuns runs or in the
// one probe (Probe, drawn as soon as the lock was seen to extend); and
// splits (Split), the attack on an operation seen to send a blind write
// beside another command. Once
// some run came within nearEnough of one, refineShare of the draws
// refine (refineBelowZero once a run's margin was below 0: a lock that
// reported a validity the key did not have); of the rest, mutateShare
// derive from the corpus and the others are fresh (stretchShare of them
// attacks, once there is one to draw), so the search never stops
// exploring. The first draw, and every draw before the corpus has a
// parent, is fresh.
type learnSearch struct {
	fresh  *Generator // fresh draws
	mut    *Generator // mutations: its own random stream
	str    *Generator // stretches: their own random stream
	corpus *Corpus
	near   *nearPool
	over   []string       // the operations overclaiming in overclaimRuns runs
	overIn map[string]int // runs each operation overclaimed in
	probe  int            // the index of the probe schedule (Probe), 0: not yet
	n      int
}

const (
	mutateShare     = 0.3
	refineShare     = 0.25
	refineBelowZero = 0.5
	stretchShare    = 0.5
)

func newLearnSearch(fresh *Generator, sp *Space, seed int64) *learnSearch {
	m := NewPlainGenerator(sp, seed)
	m.rng = rand.New(rand.NewPCG(uint64(seed)^0x9e3779b97f4a7c15, uint64(seed)))
	st := NewGenerator(sp, seed)
	st.rng = rand.New(rand.NewPCG(uint64(seed)^0x2545f4914f6cdd1d, uint64(seed)+1))
	return &learnSearch{fresh: fresh, mut: m, str: st, corpus: NewCorpus(), near: &nearPool{}, overIn: map[string]int{}}
}

func (l *learnSearch) Next() *Schedule {
	l.n++
	var s *Schedule
	refine := refineShare
	if l.near.best() < 0 {
		refine = refineBelowZero
	}
	r := l.mut.rng.Float64()
	if l.probe == 0 && l.n > 1 {
		// Once: as soon as the lock was seen to extend (its commands are
		// learnt from the runs that finished).
		if p := l.str.Probe(scenarios.OpExtend); p != nil {
			l.probe = l.n
			p.Index, p.Seed = l.n, l.fresh.Seed
			return p
		}
	}
	switch {
	case l.n == 1 || len(l.corpus.Entries) == 0:
		s = l.fresh.Next()
	case len(l.near.entries) > 0 && r < refine:
		parent := l.near.pick(l.mut.rng)
		s = l.mut.Refine(parent)
		s.Parent = parent.s.Index
	case r < refine+(1-refine)*mutateShare:
		parent := l.corpus.Pick(l.mut.rng)
		other := l.corpus.Pick(l.mut.rng)
		s = l.mut.Mutate(parent, other)
		s.Parent = parent.Index
	default:
		s = l.freshOrAttack()
	}
	s.Index = l.n
	s.Seed = l.fresh.Seed
	return s
}

// freshOrAttack is a fresh draw or, in stretchShare of them once the runs
// showed the lock a weak spot, the attack on it: a stretch of an operation
// that overclaimed (Stretch), a split of one that is not atomic (Split).
// The coin is tossed only once there is one: the draws of a lock that
// never shows one are the same as without them.
func (l *learnSearch) freshOrAttack() *Schedule {
	split := l.str.space.nonAtomic()
	if len(l.over)+len(split) == 0 || l.mut.rng.Float64() >= stretchShare {
		return l.fresh.Next()
	}
	i := l.mut.rng.IntN(len(l.over) + len(split))
	if i < len(l.over) {
		return l.str.Stretch(l.over[i])
	}
	return l.str.Split(split[i-len(l.over)])
}

func (l *learnSearch) Observe(s *Schedule, f Feedback) int {
	l.near.add(s, f.Margin)
	for _, op := range f.Over {
		// A probe is a controlled experiment: one overclaim of it is enough.
		if l.overIn[op]++; (l.overIn[op] >= overclaimRuns || l.probe > 0 && s.Index == l.probe) && !slices.Contains(l.over, op) {
			l.over = append(l.over, op)
		}
	}
	return l.corpus.Add(s, f.Keys)
}

func (l *learnSearch) Keys() int { return l.corpus.Keys() }
