package workercheck

import (
	"context"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// self is this test binary: run with LOCKFAULT_ROLE=worker it is the
// built-in worker (TestMain), broken in the way WCHECK_BREAK names.
func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// brokenArgv is the command of the built-in worker broken by brk.
func brokenArgv(t *testing.T, brk string) []string {
	return []string{"/usr/bin/env", envBreak + "=" + brk, self(t)}
}

// run checks a worker and fails the test on Run's error.
func run(t *testing.T, argv []string, opts Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), argv, opts)
	if err != nil {
		t.Fatal(err)
	}
	assertNoChildren(t)
	return rep
}

// assertNoChildren fails if a process this test started is still there.
func assertNoChildren(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			t.Errorf("process %s (%s) outlived Run", e.Name(), s[:strings.LastIndexByte(s, ')')+1])
		}
	}
}

// failed returns the ids of the checks that failed.
func failed(rep *Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status == StatusFail {
			out = append(out, r.ID)
		}
	}
	return out
}

// TestBuiltinWorkerPasses: lockfault's own worker passes every check.
func TestBuiltinWorkerPasses(t *testing.T) {
	rep := run(t, []string{self(t)}, Options{Lock: "single"})
	if len(rep.Results) != len(Checks()) {
		t.Errorf("%d results for %d checks", len(rep.Results), len(Checks()))
	}
	for _, r := range rep.Results {
		if r.Status != StatusOK {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
		}
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit code %d", rep.ExitCode())
	}
	if t.Failed() {
		t.Log("\n" + rep.Text())
	}
}

// breakParallel is how many broken workers are checked at once: their
// checks mostly wait (for lines, lower bounds, time limits), so a few at a
// time share two cores well.
const breakParallel = 4

// TestEachCheckCanFail: for every break, the built-in worker broken in
// that one way fails exactly the check of that rule, naming the rule, and
// every other check passes or is skipped; every check has a break. With
// -short only the target check runs against each broken worker.
func TestEachCheckCanFail(t *testing.T) {
	names := make([]string, 0, len(breaks))
	for n, b := range breaks {
		if b.target != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	reports := checkBroken(t, names)
	covered := map[string]bool{}
	for _, n := range names {
		b := breaks[n]
		covered[b.target] = true
		t.Run(n, func(t *testing.T) {
			r := reports[n]
			t.Logf("checked in %v", r.took.Round(time.Millisecond))
			if r.err != nil {
				t.Fatal(r.err)
			}
			assertFailsExactly(t, r.rep, b.target)
		})
	}
	for _, id := range Checks() {
		if !covered[id] {
			t.Errorf("no broken worker fails %s", id)
		}
	}
}

type outcome struct {
	rep  *Report
	err  error
	took time.Duration
}

// checkBroken runs the whole check against each named broken worker,
// breakParallel at a time; every process is gone afterwards.
func checkBroken(t *testing.T, names []string) map[string]outcome {
	var mu sync.Mutex
	out := map[string]outcome{}
	sem := make(chan struct{}, breakParallel)
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			lock := breaks[n].lock
			if lock == "" {
				lock = "single"
			}
			start := time.Now()
			opts := Options{Lock: lock}
			if testing.Short() {
				opts.Only = []string{breaks[n].target}
			}
			rep, err := Run(context.Background(), brokenArgv(t, n), opts)
			mu.Lock()
			out[n] = outcome{rep, err, time.Since(start)}
			mu.Unlock()
		}()
	}
	wg.Wait()
	assertNoChildren(t)
	return out
}

func assertFailsExactly(t *testing.T, rep *Report, target string) {
	t.Helper()
	if got := failed(rep); !slices.Equal(got, []string{target}) {
		t.Errorf("failed checks %v, want exactly [%s]\n%s", got, target, rep.Text())
		return
	}
	r, _ := rep.Result(target)
	if !strings.HasPrefix(r.Rule, "PROTOCOL.md ") || r.Reason == "" {
		t.Errorf("%s fails without naming the rule: %+v", target, r)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", rep.ExitCode())
	}
}
