package workercheck

import (
	"os/exec"
	"slices"
	"testing"
)

// exampleWorkers are the example workers of the published Python and PHP
// libraries (examples/), each with what worker-check finds in it that is
// the library's own doing (documented in the worker's README); everything
// else must pass.
var exampleWorkers = []struct {
	name     string
	argv     []string
	findings []string
}{
	{"redis-py", []string{"/usr/bin/python3", "../examples/python-redis/worker.py"}, nil},
	{"redis-py-asyncio", []string{"/usr/bin/python3", "../examples/python-redis/worker_asyncio.py"}, nil},
	{"tooz", []string{"/usr/bin/python3", "../examples/python-tooz/worker.py"}, nil},
	// malkusch/lock's one timeout is both the TTL and how long an acquire
	// keeps trying: an acquire of a held key (wait_ms 0 or 300) spins for
	// the TTL (30 s here), past the check's bound.
	{"malkusch", []string{"/usr/bin/php", "../examples/php-malkusch/worker.php"}, []string{"ops/acquire", "ops/acquire-wait"}},
	{"symfony", []string{"/usr/bin/php", "../examples/php-symfony/worker.php"}, nil},
	{"symfony-combined", []string{"/usr/bin/php", "../examples/php-symfony/worker_combined.php"}, nil},
	{"laravel", []string{"/usr/bin/php", "../examples/php-laravel/worker.php"}, nil},
}

// TestExampleWorkers holds every example worker to every rule of the
// protocol: each passes every check but its library's documented
// findings, and each of those findings still shows (a fix in the library
// or the worker updates the list). One at a time: each run checks that
// nothing it started outlives it.
func TestExampleWorkers(t *testing.T) {
	for _, w := range exampleWorkers {
		t.Run(w.name, func(t *testing.T) {
			if err := exec.Command(w.argv[0], "--version").Run(); err != nil {
				t.Fatalf("%s is missing (make deps installs it): %v", w.argv[0], err)
			}
			rep := run(t, w.argv, Options{})
			var failed []string
			for _, r := range rep.Results {
				if r.Status == StatusOK || r.Status == StatusSkip {
					continue
				}
				failed = append(failed, r.ID)
				if !slices.Contains(w.findings, r.ID) {
					t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
				}
			}
			for _, f := range w.findings {
				if !slices.Contains(failed, f) {
					t.Errorf("%s passed: the documented finding is gone, update the list and the worker's README", f)
				}
			}
			if t.Failed() {
				t.Log("\n" + rep.Text())
			}
		})
	}
}
