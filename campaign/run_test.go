package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLock is the executor the loop is tested with (this is bookkeeping,
// not Redis behaviour): outcomes are a function of the spec, so every
// shard split must give the same cells. get-set violates exclusion every
// time; single's crash/mid-acquire is violated in repetitions 1 to 3; the
// worker does not claim fencing and declares library version v1.2.3;
// single's exclusion/no-faults is unknown in repetition 7 (a cell that
// matches at 19 of 20); every scenario matches; seeds hold. Each run
// writes a report.md.
func fakeLock(ctx context.Context, s RunSpec) Result {
	r := Result{Outcome: Held, Observed: []string{"safe"}}
	switch {
	case s.Item.Kind == KindScenario:
		r.Outcome = Matched
	case s.Subject.Lock == "get-set" && s.Item.Name == "exclusion/no-faults":
		r.Outcome, r.Observed, r.Finding = Violated, []string{"overlap"}, "Two holders at once: c1 and c2."
	case s.Subject.Lock == "single" && s.Item.Name == "crash/mid-acquire" && s.Repetition <= 3:
		r.Outcome, r.Observed, r.Finding = Violated, []string{"stuck"}, "the lock stayed held by a dead client"
	case s.Subject.Lock == "single" && s.Item.Name == "exclusion/no-faults" && s.Repetition == 7:
		r.Outcome, r.Observed, r.Finding = Unknown, []string{"unknown"}, "the harness's own path stalled"
	case s.Subject.Worker != "" && s.Item.Name == "fencing/monotonic":
		r.Outcome, r.Observed, r.Finding = NotClaimed, nil, "redis-py does not claim fencing"
	}
	if s.Subject.Worker != "" {
		r.Subject.Lock, r.Subject.LibraryVersion = "redis-py", "v1.2.3"
	}
	r.Wall = time.Second
	r.Report = filepath.Join(s.Dir, "report.md")
	if err := os.WriteFile(r.Report, []byte("# "+s.Identity+"\n"), 0o644); err != nil {
		return Result{Outcome: HarnessError, Finding: err.Error()}
	}
	return r
}

func runDefinition(t *testing.T, reps int) *Definition {
	t.Helper()
	d, err := FromValues(Values{Name: "t", Locks: []string{"single", "get-set"}, Worker: "python3 w.py", Properties: []string{"crash/mid-acquire", "exclusion", "fencing"},
		Scenarios: []string{"single-crash"}, Hunt: []string{"3"}, Repetitions: reps}, testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	d.Version = "test-1"
	return d
}

func TestRunWritesEveryRunOfItsShard(t *testing.T) {
	d := runDefinition(t, 4)
	dir := t.TempDir()
	sh := Shard{2, 3}
	sum, err := Run(context.Background(), d, sh, ExecutorFunc(fakeLock), dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := len(sh.Select(d.Enumerate()))
	if sum.Assigned != want || sum.Done != want || sum.Skipped != 0 || sum.Interrupted {
		t.Fatalf("summary %+v, want %d runs done", sum, want)
	}
	lines, err := ReadResults(filepath.Join(dir, FileResults))
	if err != nil || len(lines) != want {
		t.Fatalf("%d lines, %v; want %d", len(lines), err, want)
	}
	for _, l := range lines {
		r := l.Result
		if r.Campaign != "t" || r.DefinitionHash != d.Hash() || r.Version != "test-1" || r.Shard != "2/3" || !sh.Has(r.Identity) {
			t.Fatalf("line %d does not identify its run: %+v", l.Line, r)
		}
		if strings.HasPrefix(r.Report, "/") || !strings.HasPrefix(r.Report, "runs/") {
			t.Fatalf("report %q: want a path relative to the results folder", r.Report)
		}
		if _, err := os.Stat(filepath.Join(dir, r.Report)); err != nil {
			t.Fatalf("report %s: %v", r.Report, err)
		}
		if r.Subject.Worker != "" && (r.Subject.Lock != "redis-py" || r.Subject.LibraryVersion != "v1.2.3") {
			t.Fatalf("the worker's declared lock and version are lost: %+v", r.Subject)
		}
	}
	m, err := ReadManifest(filepath.Join(dir, FileManifest))
	if err != nil || m.Done != want || m.Assigned != want || m.Interrupted || m.Finished.IsZero() {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	// The same shard again: nothing left to run.
	sum, err = Run(context.Background(), d, sh, ExecutorFunc(func(context.Context, RunSpec) Result {
		t.Error("a finished run ran again")
		return Result{}
	}), dir, 3)
	if err != nil || sum.Skipped != want || sum.Done != 0 {
		t.Fatalf("second pass: %+v, %v", sum, err)
	}
	// Another definition or shard in the same folder is refused.
	other := runDefinition(t, 5)
	if _, err := Run(context.Background(), other, sh, ExecutorFunc(fakeLock), dir, 1); err == nil || !strings.Contains(err.Error(), "use another results folder") {
		t.Fatalf("another definition in the folder: %v", err)
	}
	if _, err := Run(context.Background(), d, Shard{1, 3}, ExecutorFunc(fakeLock), dir, 1); err == nil || !strings.Contains(err.Error(), "holds shard 2/3") {
		t.Fatalf("another shard in the folder: %v", err)
	}
}

func TestRunRefusesBadArguments(t *testing.T) {
	d := runDefinition(t, 1)
	for _, c := range []struct {
		sh   Shard
		par  int
		want string
	}{
		{Shard{0, 3}, 1, "-shard: 0/3 (allowed: i/N with 1 ≤ i ≤ N ≤ 1000)"},
		{Shard{2, 1001}, 1, "-shard: 2/1001"},
		{All, 0, "-parallel: 0 (allowed: 1 to 16)"},
		{All, 17, "-parallel: 17 (allowed: 1 to 16)"},
	} {
		dir := t.TempDir()
		if _, err := Run(context.Background(), d, c.sh, ExecutorFunc(fakeLock), dir, c.par); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, %d: %v, want %s", c.sh, c.par, err, c.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%v, %d: bad input left %d files behind", c.sh, c.par, len(ents))
		}
	}
}

// At most parallel runs are in flight, and the loop does run that many at
// once: the first runs wait at a barrier that opens only when parallel of
// them are in (a loop that ran one at a time would never open it, and the
// test fails at its bound instead of hanging).
func TestRunBoundsParallelism(t *testing.T) {
	const parallel = 3
	d := runDefinition(t, 2)
	var in, peak atomic.Int32
	barrier := make(chan struct{})
	var once sync.Once
	exec := func(ctx context.Context, s RunSpec) Result {
		n := in.Add(1)
		defer in.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == parallel {
			once.Do(func() { close(barrier) })
		}
		select {
		case <-barrier:
		case <-time.After(time.Minute):
			return Result{Outcome: HarnessError, Finding: "the barrier never opened"}
		}
		return fakeLock(ctx, s)
	}
	sum, err := Run(context.Background(), d, All, ExecutorFunc(exec), t.TempDir(), parallel)
	if err != nil || sum.Done != d.Runs() {
		t.Fatalf("%+v, %v", sum, err)
	}
	if p := peak.Load(); p != parallel {
		t.Fatalf("peak %d runs in flight, want exactly %d", p, parallel)
	}
}

// Ctrl-C: nothing new starts, what finished is kept (even a run that
// returned after the cancellation, if it has a real outcome), what the
// cancellation cut short (a harness error after it) is not recorded; the
// same shard run again runs only what is missing, and the passes together
// hold every run once.
func TestRunInterruptedKeepsWhatFinished(t *testing.T) {
	d := runDefinition(t, 3)
	dir := t.TempDir()
	interrupt := func(at int32, cut bool) Summary {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var started atomic.Int32
		sum, err := Run(ctx, d, All, ExecutorFunc(func(c context.Context, s RunSpec) Result {
			if started.Add(1) == at {
				cancel() // Ctrl-C while this run is in flight
				<-c.Done()
				if cut {
					return Result{Outcome: HarnessError, Finding: "interrupted"}
				}
			}
			return fakeLock(c, s)
		}), dir, 1)
		if err != nil {
			t.Fatal(err)
		}
		if started.Load() != at {
			t.Fatalf("%d runs started after Ctrl-C at the %d-th", started.Load(), at)
		}
		return sum
	}
	if sum := interrupt(5, false); !sum.Interrupted || sum.Done != 5 || sum.Dropped != 0 {
		t.Fatalf("summary %+v: want 5 done (the 5th finished with a real outcome), interrupted", sum)
	}
	if sum := interrupt(2, true); !sum.Interrupted || sum.Skipped != 5 || sum.Done != 1 || sum.Dropped != 1 {
		t.Fatalf("summary %+v: want 5 skipped, 1 done, 1 dropped, interrupted", sum)
	}
	m, _ := ReadManifest(filepath.Join(dir, FileManifest))
	if m == nil || !m.Interrupted || m.Done != 6 {
		t.Fatalf("manifest %+v", m)
	}
	sum, err := Run(context.Background(), d, All, ExecutorFunc(fakeLock), dir, 2)
	if err != nil || sum.Skipped != 6 || sum.Done != d.Runs()-6 || sum.Interrupted {
		t.Fatalf("last pass %+v, %v", sum, err)
	}
	lines, _ := ReadResults(filepath.Join(dir, FileResults))
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.Identity] {
			t.Fatalf("%s recorded twice", l.Identity)
		}
		if l.Outcome == HarnessError {
			t.Fatalf("a run cut short was recorded: %+v", l.Result)
		}
		seen[l.Identity] = true
	}
	if len(seen) != d.Runs() {
		t.Fatalf("%d runs recorded, want %d", len(seen), d.Runs())
	}
}

// A write error stops the loop: nothing new starts and Run returns it.
func TestRunStopsAtWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	d := runDefinition(t, 3)
	dir := t.TempDir()
	openWriter = func(string) (*Writer, error) { return OpenWriter("/dev/full") }
	defer func() { openWriter = OpenWriter }()
	var ran atomic.Int32
	sum, err := Run(context.Background(), d, All, ExecutorFunc(func(c context.Context, s RunSpec) Result {
		ran.Add(1)
		return fakeLock(c, s)
	}), dir, 1)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("err %v, want the write error", err)
	}
	if ran.Load() != 1 || sum.Done != 0 || !sum.Interrupted {
		t.Fatalf("%d runs ran after a write error (want 1), summary %+v", ran.Load(), sum)
	}
}

// A panicking executor or one returning an outcome its item cannot have
// gives a harness-error line, not a crash.
func TestRunSurvivesABadExecutor(t *testing.T) {
	d, _ := FromValues(Values{Locks: []string{"single"}, Properties: []string{"exclusion"}, Scenarios: []string{"single-crash"}, Repetitions: 1}, testCatalog())
	d.Version = "v"
	dir := t.TempDir()
	_, err := Run(context.Background(), d, All, ExecutorFunc(func(c context.Context, s RunSpec) Result {
		if s.Item.Kind == KindScenario {
			return Result{Outcome: Held} // a scenario cannot be "held"
		}
		panic("boom")
	}), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := ReadResults(filepath.Join(dir, FileResults))
	got := map[string]string{}
	for _, l := range lines {
		got[string(l.Item.Kind)] = fmt.Sprintf("%s: %s", l.Outcome, l.Finding)
	}
	if got["property"] != "harness-error: the executor panicked: boom" || !strings.HasPrefix(got["scenario"], `harness-error: the executor returned outcome "held" for a scenario`) {
		t.Fatalf("lines %v", got)
	}
}
