package hunt

import (
	"fmt"
	"math/rand/v2"
)

// Searches a hunt can use (-search).
const (
	SearchRandom = "random" // the tuned generator alone: every schedule a fresh draw
	SearchLearn  = "learn"  // the plain generator, a corpus and its mutations
	// SearchLearnTuned: the tuned generator's fresh draws, with the corpus
	// and its mutations (to measure whether the special cases still pay).
	SearchLearnTuned = "learn-tuned"
)

// Searches are the names -search allows.
var Searches = []string{SearchRandom, SearchLearn, SearchLearnTuned}

// Search draws the hunt's schedules and learns from what each covered.
type Search interface {
	Next() *Schedule
	// Observe is told what a schedule's run covered (Coverage): it returns
	// how many keys were new.
	Observe(s *Schedule, keys []string) int
	// Keys is how many distinct keys the runs covered so far.
	Keys() int
}

// NewSearch is the search of that name over a space, from a seed.
func NewSearch(name string, sp *Space, seed int64) (Search, error) {
	switch name {
	case SearchRandom, "":
		return &randomSearch{gen: NewGenerator(sp, seed), corpus: NewCorpus()}, nil
	case SearchLearn:
		return newLearnSearch(NewPlainGenerator(sp, seed), sp, seed), nil
	case SearchLearnTuned:
		return newLearnSearch(NewGenerator(sp, seed), sp, seed), nil
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
func (r *randomSearch) Observe(s *Schedule, keys []string) int {
	return r.corpus.Add(s, keys)
}
func (r *randomSearch) Keys() int { return r.corpus.Keys() }

// learnSearch draws fresh schedules from its generator in freshShare of
// the draws (and until the corpus has a parent), and otherwise derives one
// from a parent of the corpus (Mutate), spliced with another in some.
type learnSearch struct {
	fresh  *Generator // fresh draws
	mut    *Generator // mutations: its own random stream
	corpus *Corpus
	n      int
}

// freshShare: the share of draws that are fresh once the corpus has
// parents, so the search never stops exploring.
const freshShare = 0.3

func newLearnSearch(fresh *Generator, sp *Space, seed int64) *learnSearch {
	m := NewPlainGenerator(sp, seed)
	m.rng = rand.New(rand.NewPCG(uint64(seed)^0x9e3779b97f4a7c15, uint64(seed)))
	return &learnSearch{fresh: fresh, mut: m, corpus: NewCorpus()}
}

func (l *learnSearch) Next() *Schedule {
	l.n++
	var s *Schedule
	if l.n == 1 || len(l.corpus.Entries) == 0 || l.mut.chance(freshShare) {
		s = l.fresh.Next()
	} else {
		parent := l.corpus.Pick(l.mut.rng)
		other := l.corpus.Pick(l.mut.rng)
		s = l.mut.Mutate(parent, other)
		s.Parent = parent.Index
	}
	s.Index = l.n
	s.Seed = l.fresh.Seed
	return s
}

func (l *learnSearch) Observe(s *Schedule, keys []string) int {
	return l.corpus.Add(s, keys)
}

func (l *learnSearch) Keys() int { return l.corpus.Keys() }
