package campaign

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for s, want := range map[string]Shard{"1/1": {1, 1}, "2/4": {2, 4}, " 1000/1000 ": {1000, 1000}} {
		if got, err := ParseShard(s); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]string{
		"0/4":                    `-shard: "0/4" has i = 0 (allowed: i/N with 1 ≤ i ≤ N ≤ 1000, e.g. 2/4)`,
		"5/4":                    `-shard: "5/4" has i = 5`,
		"1/0":                    `-shard: "1/0" has N = 0`,
		"1/1001":                 `-shard: "1/1001" has N = 1001`,
		"2":                      `-shard: "2" is not i/N`,
		"a/b":                    `-shard: "a/b" is not two whole numbers`,
		"-1/4":                   `-shard: "-1/4" has i = -1`,
		"1/4/5":                  `is not two whole numbers`,
		"99999999999999999999/1": "is not two whole numbers",
	} {
		if _, err := ParseShard(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", s, err, want)
		}
	}
}

// definitions of several shapes for the shard tests.
func shardDefinitions(t *testing.T) map[string]*Definition {
	t.Helper()
	out := map[string]*Definition{}
	for name, v := range map[string]Values{
		"one run":          {Locks: []string{"single"}, Properties: []string{"exclusion"}, Repetitions: 1},
		"properties × 20":  {Locks: []string{"single", "redlock", "get-set"}, Properties: []string{"crash", "exclusion", "stale"}, Repetitions: 20},
		"seeds × 3":        {Locks: []string{"redlock"}, Hunt: []string{"0:300"}, Repetitions: 3},
		"mixed, worker":    {Locks: []string{"single"}, Worker: "python3 w.py", Properties: []string{"crash"}, Scenarios: []string{"single-crash", "master-failover"}, Hunt: []string{"9"}, Repetitions: 7},
		"big: 3 × 500 × 5": {Locks: []string{"single", "redlock", "get-set"}, Hunt: []string{"1000:500"}, Repetitions: 5},
	} {
		d, err := FromValues(v, testCatalog())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d.Version = "test-1"
		out[name] = d
	}
	return out
}

// The union of the N shards is exactly the unsharded campaign, and no run
// is in two shards, for several N and definitions.
func TestShardsPartitionTheCampaign(t *testing.T) {
	for name, d := range shardDefinitions(t) {
		all := d.Enumerate()
		ids := map[string]bool{}
		for _, s := range all {
			ids[s.Identity] = true
		}
		if len(ids) != len(all) || len(all) != d.Runs() {
			t.Fatalf("%s: %d runs, %d identities, %d planned: identities must be unique", name, len(all), len(ids), d.Runs())
		}
		ns := []int{1, 2, 3, 7, 16, 100, 1000}
		if len(all) > 1000 {
			ns = ns[:5] // Select over 1000 shards of 7,500 runs hashes 7.5 million times
		}
		for _, n := range ns {
			seen := map[string]int{}
			for i := 1; i <= n; i++ {
				for _, s := range (Shard{i, n}).Select(all) {
					if prev, dup := seen[s.Identity]; dup {
						t.Fatalf("%s, N=%d: %s in shards %d and %d", name, n, s.Identity, prev, i)
					}
					if s.Shard != (Shard{i, n}) {
						t.Fatalf("%s: a selected spec says shard %v, want %d/%d", name, s.Shard, i, n)
					}
					seen[s.Identity] = i
				}
			}
			if !maps.Equal(mapKeys(seen), ids) {
				t.Fatalf("%s, N=%d: the shards hold %d runs, the campaign %d", name, n, len(seen), len(ids))
			}
		}
	}
}

func mapKeys(m map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func byIdentity(specs []RunSpec, i int, n int) int { return Of(specs[i].Identity, n) }

// byPosition is the broken assignment the test must catch: round robin
// over the enumeration order, which moves runs when others are added.
func byPosition(specs []RunSpec, i int, n int) int { return i%n + 1 }

// moved counts the runs of the smaller campaign whose shard (of n, by the
// assignment of) differs in the bigger one.
func moved(small, big []RunSpec, n int, of func([]RunSpec, int, int) int) int {
	shard := map[string]int{}
	for i, s := range big {
		shard[s.Identity] = of(big, i, n)
	}
	k := 0
	for i, s := range small {
		if shard[s.Identity] != of(small, i, n) {
			k++
		}
	}
	return k
}

// Adding unrelated runs (another lock, more items, more repetitions) moves
// no run of the original campaign to another shard; a positional
// assignment, the broken one, would move many.
func TestShardAssignmentIgnoresUnrelatedRuns(t *testing.T) {
	small, _ := FromValues(Values{Locks: []string{"single"}, Properties: []string{"crash", "exclusion"}, Hunt: []string{"1:40"}, Repetitions: 5}, testCatalog())
	// shifts: the new runs come before old ones in the enumeration, so a
	// positional assignment moves old runs (more repetitions come last:
	// it would not).
	bigger := map[string]struct {
		v      Values
		shifts bool
	}{
		"another lock":     {Values{Locks: []string{"single", "redlock"}, Properties: []string{"crash", "exclusion"}, Hunt: []string{"1:40"}, Repetitions: 5}, true},
		"more items":       {Values{Locks: []string{"single"}, Properties: []string{"crash", "exclusion", "stale"}, Scenarios: []string{"single-crash"}, Hunt: []string{"1:40", "900:9"}, Repetitions: 5}, true},
		"more repetitions": {Values{Locks: []string{"single"}, Properties: []string{"crash", "exclusion"}, Hunt: []string{"1:40"}, Repetitions: 9}, false},
		"a worker":         {Values{Worker: "python3 w.py", Locks: []string{"single"}, Properties: []string{"crash", "exclusion"}, Hunt: []string{"1:40"}, Repetitions: 5}, true},
	}
	for what, c := range bigger {
		big, err := FromValues(c.v, testCatalog())
		if err != nil {
			t.Fatal(err)
		}
		big.Name = small.Name
		for _, n := range []int{2, 5, 16} {
			if k := moved(small.Enumerate(), big.Enumerate(), n, byIdentity); k != 0 {
				t.Errorf("%s, N=%d: %d runs moved to another shard", what, n, k)
			}
			if k := moved(small.Enumerate(), big.Enumerate(), n, byPosition); c.shifts && k == 0 {
				t.Errorf("%s, N=%d: the positional assignment moved nothing: the check would not catch it", what, n)
			}
		}
	}
}

// The split is even enough to be worth it: 7,500 runs over 2 to 8 shards,
// no shard holds more than 1.25 times its share. (A hash of fixed
// identities, not a timing: the result is the same on every run.)
func TestShardsAreBalanced(t *testing.T) {
	d := shardDefinitions(t)["big: 3 × 500 × 5"]
	specs := d.Enumerate()
	for _, n := range []int{2, 4, 8} {
		var sizes []int
		for i := 1; i <= n; i++ {
			sizes = append(sizes, len((Shard{i, n}).Select(specs)))
		}
		if slices.Max(sizes) > len(specs)/n*5/4 {
			t.Errorf("N=%d: shard sizes %v of %d runs", n, sizes, len(specs))
		}
	}
}
