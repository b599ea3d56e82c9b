package checker

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

// Benchmarks on generated histories (speed lives here, never in timed
// tests). Run with `make bench` or
//
//	go test -run '^$' -bench . -benchtime 1x ./checker/
//
// Each reports events/s besides the time per check.

var benchCache = map[string][]history.Event{}

func benchHistory(name string, keys []string, sections int, kind string) []history.Event {
	if evs, ok := benchCache[name]; ok {
		return evs
	}
	g := newGen(1, keys, 8, false)
	at := -1
	if kind != "" {
		at = sections / 2
	}
	for i := 0; i < sections; i++ {
		k := keys[i%len(keys)]
		if i == at {
			g.inject(kind, k)
			continue
		}
		g.legal(k)
	}
	history.SortByTime(g.ev)
	benchCache[name] = g.ev
	return g.ev
}

func benchCheck(b *testing.B, evs []history.Event, want string) {
	b.ReportAllocs()
	b.ResetTimer()
	var r *Result
	for i := 0; i < b.N; i++ {
		r = Check(evs, Options{StuckAfter: time.Second})
	}
	b.StopTimer()
	if r.Verdict != want {
		b.Fatalf("verdict %s (observed %v), want %s", r.Verdict, r.Observed, want)
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(evs)), "events")
}

// 100k critical sections on one key (800k events), legal.
func BenchmarkCheck100kSectionsOneKey(b *testing.B) {
	benchCheck(b, benchHistory("100k", []string{"k"}, 100_000, ""), ClassSafe)
}

// The same with one lost update in the middle.
func BenchmarkCheck100kSectionsOneLostUpdate(b *testing.B) {
	benchCheck(b, benchHistory("100k-lost", []string{"k"}, 100_000, injLostUpdate), ClassOverlap)
}

// 1M events over 64 keys.
func BenchmarkCheck1MEvents64Keys(b *testing.B) {
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("key%02d", i)
	}
	benchCheck(b, benchHistory("1M-64", keys, 125_000, ""), ClassSafe)
}

// The overlap pass alone on the 100k-section history.
func BenchmarkOverlapPass(b *testing.B) {
	evs := benchHistory("100k", []string{"k"}, 100_000, "")
	holds := Holds(evs)
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		n = len(Overlaps(holds, evs))
	}
	b.StopTimer()
	if n != 0 {
		b.Fatalf("%d overlaps in a legal history", n)
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
