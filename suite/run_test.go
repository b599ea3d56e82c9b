package suite_test

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	_ "github.com/lockfault/lockfault/cluster/docker" // LOCKFAULT_BACKEND=docker
	"github.com/lockfault/lockfault/internal/interrupt"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
	"github.com/lockfault/lockfault/worker"
)

// TestMain lets this test binary double as the worker process, so the
// broken locks registered by the tests (mutation_test.go) run in the
// workers exactly as a built-in lock would.
//
// The property runs are mostly waits (leases expiring, pauses, failovers)
// and each has its nodes, proxies and workers of its own, so this package
// runs defaultParallel of them at once unless -parallel says otherwise
// (go test's own default, GOMAXPROCS, is 2 on a 2-core machine, which
// leaves both cores idle most of the time). The rates campaign ran 12
// runs at once on this machine with every cell as promised (docs/RATES.md).
// At 4 at once, TestMutations kept 3.8 runs going on average for its
// 6 min 47 s and used 41 % of the two cores (user+sys over wall): it waits
// on its slots, not on the CPU, so 6 run at once.
func TestMain(m *testing.M) {
	if worker.IsWorker() {
		worker.Main()
		return
	}
	flag.Parse()
	// The first Ctrl-C or SIGTERM cancels the hunts under way (huntLock),
	// which remove their nodes, workers and folders; a second one kills.
	interrupted, _ = interrupt.Context()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	os.Exit(m.Run())
}

// interrupted is cancelled by the first Ctrl-C or SIGTERM (TestMain).
var interrupted = context.Background()

// defaultParallel: property runs at once in this package's tests.
const defaultParallel = 6

// backend for the property runs: process unless LOCKFAULT_BACKEND says
// otherwise (docker, auto).
func backend() cluster.BackendKind {
	if b := os.Getenv("LOCKFAULT_BACKEND"); b != "" {
		return cluster.BackendKind(b)
	}
	return cluster.BackendProcess
}

// held is the suite's rule: the run matched the property's expectation and
// nothing of the schedule went unexercised.
func held(o *runner.Outcome) bool {
	if o == nil || o.Meta.Error != "" || !o.Meta.Matched {
		return false
	}
	for _, c := range o.Result.Observed {
		if c == checker.ClassNotExercised || c == checker.ClassUnknown {
			return false
		}
	}
	return true
}

// runProperty runs one property against one lock and returns the outcome.
// cycles 0 keeps the property's own count. A harness error fails the test.
func runProperty(t *testing.T, prop, lock string, cycles int) *runner.Outcome {
	t.Helper()
	p, ok := suite.Lookup(prop)
	if !ok {
		t.Fatalf("no property %s", prop)
	}
	subj, err := runner.BuiltIn(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Prepare(context.Background(), subj, runner.Overrides{Cycles: cycles})
	if err != nil {
		t.Fatal(err)
	}
	o, err := runner.Run(context.Background(), plan, runner.Options{Backend: backend(), ReportsDir: keepDir(t)})
	if err != nil {
		t.Fatalf("%s against %s: harness error: %v", prop, lock, err)
	}
	t.Logf("%s against %s: observed %v (matched %v) in %v: %d grants, %d critical sections", prop, lock,
		o.Result.Observed, o.Meta.Matched, o.Meta.Duration.Round(1e6), o.Result.Stats.Grants, o.Result.Stats.CriticalSecs)
	return o
}

// findings is every finding's sentence, for a failure message.
func findings(o *runner.Outcome) string {
	var b strings.Builder
	for i, f := range o.Result.Findings {
		if i == 5 {
			b.WriteString("  ...\n")
			break
		}
		b.WriteString("  " + f.Class + ": " + f.Detail + "\n")
	}
	return b.String()
}

// keepDir is where a test run's report goes: LOCKFAULT_KEEP=DIR keeps
// them there for a look afterwards, else a temp dir removed with the test.
func keepDir(t *testing.T) string {
	if d := os.Getenv("LOCKFAULT_KEEP"); d != "" {
		return d
	}
	return t.TempDir()
}
