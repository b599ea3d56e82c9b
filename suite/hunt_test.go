package suite_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/suite"
)

// huntLock hunts one lock of this test binary (the mutation locks are
// registered here only) with the given budget. Ctrl-C or SIGTERM stops it:
// its runs remove what they started and the test fails as interrupted.
func huntLock(tb testing.TB, lock string, opt hunt.Options) *hunt.Result {
	tb.Helper()
	subj, err := runner.BuiltIn(context.Background(), lock)
	if err != nil {
		tb.Fatal(err)
	}
	opt.Run.Backend = backend()
	opt.Dir = tb.TempDir()
	if d := os.Getenv("LOCKFAULT_HUNT_DIR"); d != "" {
		// Kept after the test: the hunt's card, hunt.json and runs.
		opt.Dir = filepath.Join(d, lock, fmt.Sprint(time.Now().UnixNano()))
	}
	if os.Getenv("LOCKFAULT_HUNT_LOG") != "" {
		opt.Log = os.Stderr
	}
	res, err := hunt.Run(interrupted, subj, opt)
	if interrupted.Err() != nil {
		tb.Fatalf("hunt %s: interrupted (Ctrl-C or SIGTERM)", lock)
	}
	if err != nil {
		tb.Fatalf("hunt %s: %v", lock, err)
	}
	return res
}

// A lock that ignores SET NX's refusal is found by the first schedule (the
// one without faults), shrunk to no fault at all, and its minimal scenario
// is an ordinary scenario file that reproduces.
func TestHuntFindsIgnoreNX(t *testing.T) {
	t.Parallel()
	res := huntLock(t, "broken-ignore-nx", hunt.Options{Seed: 7, Runs: 3, RateRuns: 2, ShrinkRuns: 4, Tries: 1})
	if len(res.Findings) != 1 {
		t.Fatalf("%d findings, want 1 (card: %s)", len(res.Findings), res.Dir)
	}
	f := res.Findings[0]
	if f.Fingerprint.Class != "overlap" || res.UntilFound != 1 {
		t.Errorf("found %s after %d schedules, want an overlap in the first", f.Fingerprint.ID(), res.UntilFound)
	}
	if len(f.Minimal.Events) != 0 || f.Rate[0] < 2 {
		t.Errorf("minimal scenario has %d faults and reproduces in %d of %d runs; want 0 faults, 2 of 2", len(f.Minimal.Events), f.Rate[0], f.Rate[1])
	}
	sc, err := scenarios.Load(f.MinimalYAML)
	if err != nil {
		t.Fatalf("minimal.yaml does not load: %v", err)
	}
	if strings.Join(sc.Expect, ",") != "overlap" {
		t.Errorf("minimal.yaml expects %v, want [overlap]", sc.Expect)
	}
	for _, name := range []string{"card.md", "hunt.json"} {
		if _, err := os.Stat(res.Dir + "/" + name); err != nil {
			t.Errorf("the hunt wrote no %s", name)
		}
	}

	// The hunt's folder is a regression set (-extra): its one minimal
	// scenario, not the scenario files of its runs; it fails on the broken
	// lock and holds on the correct one.
	extra, err := suite.LoadExtra([]string{res.Dir})
	if err != nil || len(extra) != 1 || extra[0].Path != f.MinimalYAML {
		t.Fatalf("-extra of the hunt's folder: %v, %v; want its minimal.yaml alone", extra, err)
	}
	for lock, want := range map[string]card.Outcome{"broken-ignore-nx": card.Violated, "broken-correct": card.Held} {
		subj, err := runner.BuiltIn(context.Background(), lock)
		if err != nil {
			t.Fatal(err)
		}
		row := suite.RunExtra(context.Background(), extra[0], subj, suite.Options{Run: runner.Options{Backend: backend(), ReportsDir: t.TempDir()}}.WithDefaults())
		if row.Outcome != want {
			t.Errorf("the finding as a regression against %s: %s, want %s", lock, row.Summary(), want)
		}
	}
}

// BenchmarkHuntMutations measures the hunt against mutation locks
// (LOCKFAULT_HUNT_LOCKS, comma separated; default every property's broken
// lock and the hunt's own, hunt.HuntOnly): schedules until found, shrink
// time, faults before and after, the minimal scenario's rate over 20 runs.
// Budget per lock: LOCKFAULT_HUNT_TIME (default 10m) and
// LOCKFAULT_HUNT_RUNS (schedules, default no bound); the seeds:
// LOCKFAULT_HUNT_SEEDS (comma separated; LOCKFAULT_HUNT_SEED, one; default
// 1); the search: LOCKFAULT_HUNT_SEARCH (random, learn, learn-plain;
// default random); schedules at once: LOCKFAULT_HUNT_PARALLEL (default 1);
// LOCKFAULT_HUNT_NOSHRINK=1 stops at the find (the side-by-side
// measurement needs no shrink); LOCKFAULT_HUNT_DIR keeps each hunt's folder
// there. LOCKFAULT_HUNT_OUT appends one JSON line
// per hunt to that file (docs/HUNT.md's side-by-side table is made from
// them by cd tools && go run ./bench/huntable).
//
//	LOCKFAULT_HUNT_LOCKS=broken-del-release go test ./suite -run '^$' -bench HuntMutations -benchtime 1x -timeout 0
func BenchmarkHuntMutations(b *testing.B) {
	budget := 10 * time.Minute
	if v := os.Getenv("LOCKFAULT_HUNT_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		budget = d
	}
	seeds := []int64{1}
	if v := cmp.Or(os.Getenv("LOCKFAULT_HUNT_SEEDS"), os.Getenv("LOCKFAULT_HUNT_SEED")); v != "" {
		seeds = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n == 0 {
				b.Fatalf("LOCKFAULT_HUNT_SEEDS=%q: want non-zero integers", v)
			}
			seeds = append(seeds, n)
		}
	}
	intEnv := func(name string) int {
		v := os.Getenv(name)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("%s=%q: want a count", name, v)
		}
		return n
	}
	runs, parallel := intEnv("LOCKFAULT_HUNT_RUNS"), intEnv("LOCKFAULT_HUNT_PARALLEL")
	search := os.Getenv("LOCKFAULT_HUNT_SEARCH")
	noShrink := os.Getenv("LOCKFAULT_HUNT_NOSHRINK") != ""
	locks := strings.Split(os.Getenv("LOCKFAULT_HUNT_LOCKS"), ",")
	if locks[0] == "" {
		locks = append(mutationLocks(), hunt.HuntOnly...)
	}
	for _, lock := range locks {
		for _, seed := range seeds {
			b.Run(fmt.Sprintf("%s/seed-%d", lock, seed), func(b *testing.B) {
				for range b.N {
					// The mutation locks are the single-master lock with one slip: its
					// known limits are theirs (a user says so with -known).
					res := huntLock(b, lock, hunt.Options{Seed: seed, Time: budget, Runs: runs, Search: search, Parallel: parallel, NoShrink: noShrink,
						RateRuns: map[bool]int{true: 1, false: 0}[noShrink], KnownViolations: []string{"node-clock", "failover"}})
					appendHuntLine(b, lock, res)
					if len(res.Findings) == 0 {
						b.Logf("%s: not found in %d schedules (%v)", lock, len(res.Tried), res.Took.Round(time.Second))
						b.ReportMetric(float64(len(res.Tried)), "schedules-tried")
						continue
					}
					f := res.Findings[0]
					b.ReportMetric(float64(res.UntilFound), "schedules-until-found")
					b.ReportMetric(res.FoundAfter.Seconds(), "s-until-found")
					if noShrink {
						b.Logf("%s: %s after %d schedules (%v): %s", lock, f.Fingerprint.ID(), res.UntilFound, res.FoundAfter.Round(time.Second),
							strings.Join(f.Original.Faults(), "; "))
						continue
					}
					b.ReportMetric(f.ShrinkTime.Seconds(), "shrink-s")
					b.ReportMetric(float64(len(f.Original.Events)), "faults-before")
					b.ReportMetric(float64(len(f.Minimal.Events)), "faults-after")
					b.ReportMetric(float64(f.Rate[0]), "reproduced-of-20")
					b.Logf("%s: %s after %d schedules; shrunk %d→%d faults in %v; rate %d/%d; minimal: %s",
						lock, f.Fingerprint.ID(), res.UntilFound, len(f.Original.Events), len(f.Minimal.Events), f.ShrinkTime.Round(time.Second), f.Rate[0], f.Rate[1],
						strings.Join(f.Minimal.Faults(), "; "))
					if os.Getenv("LOCKFAULT_HUNT_KEEP") != "" {
						b.Logf("minimal.yaml:\n%s", mustRead(f.MinimalYAML))
					}
				}
			})
		}
	}
}

// huntLine is one hunt of BenchmarkHuntMutations, as LOCKFAULT_HUNT_OUT
// keeps it.
type huntLine struct {
	Lock         string               `json:"lock"`
	SetAside     bool                 `json:"set_aside"`
	Search       string               `json:"search"`
	Seed         int64                `json:"seed"`
	Parallel     int                  `json:"parallel"`
	Found        string               `json:"found,omitempty"`
	FoundBy      *hunt.Schedule       `json:"found_by,omitempty"` // the schedule (its parent and mutations, if derived)
	UntilFound   int                  `json:"until_found"`
	FoundAfterS  float64              `json:"found_after_s"`
	Tried        int                  `json:"tried"`
	Inconclusive int                  `json:"inconclusive"`
	TookS        float64              `json:"took_s"`
	Coverage     []hunt.CoveragePoint `json:"coverage"`
}

func appendHuntLine(tb testing.TB, lock string, res *hunt.Result) {
	path := os.Getenv("LOCKFAULT_HUNT_OUT")
	if path == "" {
		return
	}
	l := huntLine{Lock: lock, SetAside: hunt.IsSetAside(lock), Search: res.Search, Seed: res.Seed, Parallel: res.Parallel,
		UntilFound: res.UntilFound, FoundAfterS: res.FoundAfter.Seconds(), Tried: len(res.Tried), Inconclusive: res.Inconclusive,
		TookS: res.Took.Seconds(), Coverage: res.Coverage}
	if len(res.Findings) > 0 {
		l.Found, l.FoundBy = res.Findings[0].Fingerprint.ID(), res.Findings[0].Original
	}
	j, _ := json.Marshal(l)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(j, '\n')); err != nil {
		tb.Fatal(err)
	}
}

func mustRead(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Sprint(err)
	}
	return string(b)
}

// mutationLocks are the properties' broken locks, each once, but those
// whose one slip is a known limit of every single-master lock without
// fencing (broken-correct: clock jumps and failover) or of Redlock (redlock:
// the masters' clocks).
func mutationLocks() []string {
	var out []string
	seen := map[string]bool{"broken-correct": true, "redlock": true}
	for _, p := range suite.All() {
		if !seen[p.Broken] {
			seen[p.Broken] = true
			out = append(out, p.Broken)
		}
	}
	return out
}

// The set-aside mutation locks are the draw of their recorded seed from
// the pool they were drawn from, every lock of that pool is still a
// mutation lock of the suite, and the hunt's own mutation locks are none.
func TestHuntSetAsideIsTheRecordedDraw(t *testing.T) {
	if got := hunt.DrawSetAside(hunt.SetAsidePool, hunt.SetAsideSeed); !slices.Equal(got, hunt.SetAside) {
		t.Errorf("DrawSetAside(pool, %d) = %v; hunt.SetAside says %v", hunt.SetAsideSeed, got, hunt.SetAside)
	}
	suiteLocks := mutationLocks()
	for _, l := range hunt.SetAsidePool {
		if !slices.Contains(suiteLocks, l) {
			t.Errorf("%s of the set-aside pool is no longer a mutation lock of the suite", l)
		}
	}
	for _, l := range hunt.HuntOnly {
		if slices.Contains(suiteLocks, l) {
			t.Errorf("%s is a hunt-only mutation lock, yet a property names it", l)
		}
		if _, ok := lockimpl.Lookup(l); !ok {
			t.Errorf("hunt-only mutation lock %s is not registered", l)
		}
	}
}

// The hunt's own mutation locks are slips the property suite does not
// catch: every property that applies to them holds or is unknown against
// them (none is violated), two cycles each, but those of the known limits
// the hunt gives every mutation lock (failover, node-clock: the correct
// lock breaks them too). Heavy (every property, about 2 minutes here):
// go test ./suite -run TestSuiteMissesHuntOnlyMutations -count=1
func TestSuiteMissesHuntOnlyMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every property against each hunt-only mutation lock")
	}
	for _, lock := range hunt.HuntOnly {
		info, _ := lockimpl.Lookup(lock)
		for _, p := range suite.All() {
			limits := hunt.LimitsOf([]string{p.Name})
			if ok, _ := p.Applies(info); !ok || slices.Contains(limits, "failover") || slices.Contains(limits, "node-clock") {
				continue
			}
			t.Run(lock+"/"+p.Name, func(t *testing.T) {
				t.Parallel()
				o := runProperty(t, p.Name, lock, 2)
				unjudged := o.Meta.Error != "" || slices.Contains(o.Result.Observed, checker.ClassUnknown) || slices.Contains(o.Result.Observed, checker.ClassNotExercised)
				switch {
				case unjudged:
					t.Logf("%s against %s proved nothing (observed %v): not a catch", p.Name, lock, o.Result.Observed)
				case !held(o):
					t.Errorf("%s catches %s (observed %v): it is not a hunt-only slip", p.Name, lock, o.Result.Observed)
				}
			})
		}
	}
}
