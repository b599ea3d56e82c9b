package hunt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// BenchmarkHuntParallel: how many schedules at once pay on this machine.
// The same hunt (single, seed 3, 6 schedules, no shrinking) with
// -parallel 1, 2, 4 and 6 (LOCKFAULT_HUNT_PARALLEL, comma separated):
// schedules per minute, and how many runs were inconclusive (a machine
// too loaded for the harness's own path shows there first).
//
//	go test ./hunt -run '^$' -bench HuntParallel -benchtime 1x -timeout 30m
func BenchmarkHuntParallel(b *testing.B) {
	backend := cluster.BackendKind(os.Getenv("LOCKFAULT_BACKEND"))
	if backend == "" {
		backend = cluster.BackendProcess
	}
	levels := []int{1, 2, 4, 6}
	if v := os.Getenv("LOCKFAULT_HUNT_PARALLEL"); v != "" {
		levels = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > MaxParallel {
				b.Fatalf("LOCKFAULT_HUNT_PARALLEL=%q: want numbers from 1 to %d", v, MaxParallel)
			}
			levels = append(levels, n)
		}
	}
	subj, err := runner.BuiltIn(context.Background(), "single")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range levels {
		b.Run(fmt.Sprintf("parallel-%d", n), func(b *testing.B) {
			for range b.N {
				res, err := Run(context.Background(), subj, Options{Seed: 3, Runs: 6, NoShrink: true, RateRuns: 1, Parallel: n,
					Dir: b.TempDir(), Run: runner.Options{Backend: backend}})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(res.Tried))/res.Took.Minutes(), "schedules/min")
				b.ReportMetric(float64(res.Inconclusive), "inconclusive")
				b.Logf("parallel %d: %d schedules in %v (%.1f/min), %d inconclusive", n, len(res.Tried), res.Took.Round(time.Second),
					float64(len(res.Tried))/res.Took.Minutes(), res.Inconclusive)
			}
		})
	}
}
