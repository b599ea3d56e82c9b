package hunt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	_ "github.com/lockfault/lockfault/cluster/docker" // LOCKFAULT_BACKEND=docker
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/worker"
)

// TestMain lets this test binary serve as the built-in locks' worker.
func TestMain(m *testing.M) {
	if worker.IsWorker() {
		worker.Main()
		return
	}
	os.Exit(m.Run())
}

// BenchmarkHuntSchedules is the hunt's figure of merit: schedules per
// minute on this machine (no shrinking), for a single-master lock, Redlock
// and redis-py through its worker. LOCKFAULT_BACKEND picks the backend
// (default process).
func BenchmarkHuntSchedules(b *testing.B) {
	backend := cluster.BackendKind(os.Getenv("LOCKFAULT_BACKEND"))
	if backend == "" {
		backend = cluster.BackendProcess
	}
	subjects := map[string]func() (runner.Subject, error){
		"single":  func() (runner.Subject, error) { return runner.BuiltIn(context.Background(), "single") },
		"redlock": func() (runner.Subject, error) { return runner.BuiltIn(context.Background(), "redlock") },
		"redis-py": func() (runner.Subject, error) {
			return runner.External(context.Background(), []string{"/usr/bin/python3", filepath.Join("..", "examples", "python-redis", "worker.py")}, "")
		},
	}
	// A built-in lock's known limits come from its promise table; redis-py
	// (no fencing) does not claim to survive a node's clock jump.
	known := map[string][]string{"redis-py": {"node-clock"}}
	for _, name := range []string{"single", "redlock", "redis-py"} {
		b.Run(name, func(b *testing.B) {
			subj, err := subjects[name]()
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				res, err := Run(context.Background(), subj, Options{Seed: 3, Runs: 6, NoShrink: true, RateRuns: 1, KnownViolations: known[name],
					Dir: b.TempDir(), Run: runner.Options{Backend: backend}})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(res.Tried))/res.Took.Minutes(), "schedules/min")
				b.ReportMetric(res.Took.Seconds()/float64(len(res.Tried)), "s/schedule")
				b.Logf("%s: %d schedules in %v, %d inconclusive, %d findings", name, len(res.Tried), res.Took.Round(time.Second), res.Inconclusive, len(res.Findings))
			}
		})
	}
}
