package workercheck

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// finding is a check an example worker fails through its library's own
// doing (documented in the worker's README), and the start of the reason
// it must fail with: a failure for any other reason is a bug of the worker.
type finding struct {
	id, reason string
}

// exampleWorker is one example worker of a published Python or PHP
// library (examples/) and what worker-check finds in its library;
// everything else must pass.
type exampleWorker struct {
	name     string
	argv     []string
	findings []finding
}

var exampleWorkers = []exampleWorker{
	{"redis-py", []string{"/usr/bin/python3", "../examples/python-redis/worker.py"}, nil},
	{"redis-py-asyncio", []string{"/usr/bin/python3", "../examples/python-redis/worker_asyncio.py"}, nil},
	{"tooz", []string{"/usr/bin/python3", "../examples/python-tooz/worker.py"}, nil},
	// malkusch/lock's mutex takes one timeout that is both the TTL and how
	// long an acquire keeps trying (Loop(timeout)): an acquire of a held
	// key, with wait_ms 0 or 300, spins for the TTL (30 s here) and gets
	// no reply within ReplyTimeout. ops/release-old-lease is then skipped
	// (its set-up acquires a held key).
	{"malkusch", []string{"/usr/bin/php", "../examples/php-malkusch/worker.php"}, []finding{
		{"ops/acquire", "no reply to op "},
		{"ops/acquire-wait", "no reply to op "},
	}},
	{"symfony", []string{"/usr/bin/php", "../examples/php-symfony/worker.php"}, nil},
	{"symfony-combined", []string{"/usr/bin/php", "../examples/php-symfony/worker_combined.php"}, nil},
	{"laravel", []string{"/usr/bin/php", "../examples/php-laravel/worker.php"}, nil},
}

// TestExampleWorkers holds every example worker to every rule of the
// protocol: each passes every check but its library's documented
// findings, and each of those findings still shows, for its documented
// reason (a fix in the library or the worker updates the list).
//
// The PHP workers accept clock through lockfault's clock shim, which the
// test builds as make does. Runtime: malkusch runs beside the others,
// which run one after another. Its run is mostly two waits of
// ReplyTimeout for replies that cannot come while the library sleeps in
// its spin loop, so it costs the 2 cores next to nothing, and the whole
// test takes about as long as the six others in a row (~30 s, not ~55 s).
// No more runs at once: the others' checks are timed, and they share the
// machine. No process outlives the test: that is checked once all runs
// are done (during them, each run's processes are the other's children too).
func TestExampleWorkers(t *testing.T) {
	if out, err := exec.Command("bash", "../faults/clockshim/build.sh").CombinedOutput(); err != nil {
		t.Fatalf("the clock shim does not build (make deps installs gcc): %v\n%s", err, out)
	}
	for _, w := range exampleWorkers {
		if err := exec.Command(w.argv[0], "--version").Run(); err != nil {
			t.Fatalf("%s is missing (make deps installs it): %v", w.argv[0], err)
		}
	}
	reports := map[string]outcome{}
	var mu sync.Mutex
	check := func(w exampleWorker) {
		start := time.Now()
		rep, err := Run(context.Background(), w.argv, Options{})
		mu.Lock()
		reports[w.name] = outcome{rep, err, time.Since(start)}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, w := range exampleWorkers {
		if w.findings != nil {
			wg.Add(1)
			go func() { defer wg.Done(); check(w) }()
		}
	}
	for _, w := range exampleWorkers {
		if w.findings == nil {
			check(w)
		}
	}
	wg.Wait()
	assertNoChildren(t)
	for _, w := range exampleWorkers {
		t.Run(w.name, func(t *testing.T) {
			o := reports[w.name]
			t.Logf("checked in %v", o.took.Round(time.Millisecond))
			if o.err != nil {
				t.Fatal(o.err)
			}
			var failed []string
			for _, r := range o.rep.Results {
				if r.Status == StatusOK || r.Status == StatusSkip {
					continue
				}
				failed = append(failed, r.ID)
				i := slices.IndexFunc(w.findings, func(f finding) bool { return f.id == r.ID })
				if i < 0 || !strings.HasPrefix(r.Reason, w.findings[i].reason) {
					t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
				}
			}
			for _, f := range w.findings {
				if !slices.Contains(failed, f.id) {
					t.Errorf("%s passed: the documented finding is gone, update the list and the worker's README", f.id)
				}
			}
			if t.Failed() {
				t.Log("\n" + o.rep.Text())
			}
		})
	}
}
