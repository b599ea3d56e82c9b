package hunt

import "math/rand/v2"

// Corpus is what the learning search remembers: every coverage key seen
// so far (hashed), and the schedules that covered something new, each the
// parent of the schedules derived from it. Bounded: at most maxCorpusKeys
// keys and maxCorpus schedules (the oldest, least productive one makes
// room).
type Corpus struct {
	seen    map[uint64]bool
	Entries []*CorpusEntry
}

// CorpusEntry is a schedule that covered something new: how many keys,
// and how often it was picked as a parent since.
type CorpusEntry struct {
	Schedule *Schedule
	New      int
	Picked   int
}

const (
	maxCorpus     = 200
	maxCorpusKeys = 1 << 16
)

// NewCorpus is an empty corpus.
func NewCorpus() *Corpus { return &Corpus{seen: map[uint64]bool{}} }

// Keys is how many distinct keys the corpus has seen.
func (c *Corpus) Keys() int { return len(c.seen) }

// Add records a run's coverage: the number of keys no run had covered
// before; a schedule with any joins the corpus.
func (c *Corpus) Add(s *Schedule, keys []string) int {
	n := 0
	for _, k := range keys {
		h := hashKey(k)
		if !c.seen[h] && len(c.seen) < maxCorpusKeys {
			c.seen[h] = true
			n++
		}
	}
	if n == 0 {
		return 0
	}
	if len(c.Entries) >= maxCorpus {
		worst := 0
		for i, e := range c.Entries {
			if e.score() < c.Entries[worst].score() {
				worst = i
			}
		}
		c.Entries = append(c.Entries[:worst], c.Entries[worst+1:]...)
	}
	c.Entries = append(c.Entries, &CorpusEntry{Schedule: s, New: n})
	return n
}

// score weighs a parent: the more it covered that was new, the less it
// was picked already, the more often it is picked (AFL's energy, simply).
func (e *CorpusEntry) score() float64 { return float64(1+e.New) / float64(1+e.Picked) }

// Pick draws a parent with a chance proportional to its score (nil: the
// corpus is empty).
func (c *Corpus) Pick(rng *rand.Rand) *Schedule {
	if len(c.Entries) == 0 {
		return nil
	}
	e := c.Entries[weighted(rng, len(c.Entries), func(i int) float64 { return c.Entries[i].score() })]
	e.Picked++
	return e.Schedule
}

// weighted draws one of n indices (n > 0) with a chance proportional to
// its weight w(i); rounding never draws past the last.
func weighted(rng *rand.Rand, n int, w func(i int) float64) int {
	var total float64
	for i := range n {
		total += w(i)
	}
	r := rng.Float64() * total
	for i := range n {
		if r -= w(i); r < 0 {
			return i
		}
	}
	return n - 1
}
