// Package lockfaulttest tests a lock from your own module with `go test`:
// every property of lockfault's suite (mutual exclusion without faults, a
// crashed holder, a stale holder, extend, clocks, failover, fencing, ...)
// runs against your lock on real Redis/etcd nodes, under the faults that
// break that property, and each is a subtest with a stable name.
//
// Implement Lock (and Extender if your lock can extend), then:
//
//	func TestMain(m *testing.M) {
//		lockfaulttest.Main(m, lockfaulttest.LockDef{
//			Info: lockfaulttest.Info{Name: "mylock", Needs: lockfaulttest.NeedsSingle,
//				Caps: []string{lockfaulttest.CapExtend}},
//			New: newMyLock,
//		})
//	}
//
//	func TestMyLock(t *testing.T) { lockfaulttest.Run(t, "mylock", lockfaulttest.Options{}) }
//
// Main makes the test binary serve as lockfault's worker process (the
// harness starts it again with LOCKFAULT_ROLE=worker), so your lock's code
// runs unchanged in each simulated client. Run runs one subtest per
// property: `go test -run 'TestMyLock/exclusion/no-faults'` and `-skip`
// select them, `-short` halves the fault cycles, a property whose
// capability your lock does not claim (Info.Caps) is skipped with the
// reason, and a violation fails its subtest with the findings in plain
// sentences and the path of the run's report (kept; reports of properties
// that held are removed unless Options.KeepReports).
//
// The nodes run as local processes (Debian's redis-server, redis-sentinel,
// etcd) or Docker containers: Options.Backend, or the LOCKFAULT_BACKEND
// environment variable ("process", "docker", "auto"; default auto).
package lockfaulttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
	"github.com/lockfault/lockfault/worker"
)

// The types a lock implements and is configured with, so a user imports
// one package.
type (
	Lock           = lockimpl.Lock
	Extender       = lockimpl.Extender
	Lease          = lockimpl.Lease
	AcquireOptions = lockimpl.AcquireOptions
	Config         = lockimpl.Config
	Endpoints      = lockimpl.Endpoints
	Clock          = lockimpl.Clock
	Info           = lockimpl.Info
	Factory        = lockimpl.Factory
	// Card is the report card Suite returns; Row one property's line.
	Card    = card.Card
	Row     = card.Row
	Outcome = card.Outcome
)

// Errors a lock returns: ErrNotAcquired when another client holds the lock
// (and this attempt left nothing behind), ErrNotHeld when a release or
// extend finds the caller's grant gone. Any other error means "unknown".
var (
	ErrNotAcquired = lockimpl.ErrNotAcquired
	ErrNotHeld     = lockimpl.ErrNotHeld
)

// What a lock needs (Info.Needs): the topology its properties run on.
const (
	NeedsSingle  = "single"  // one Redis master (Endpoints.Primary), replicated with failover where a property needs it
	NeedsMasters = "masters" // independent Redis masters (Endpoints.Masters), Redlock-style
	NeedsEtcd    = "etcd"    // an etcd cluster (Endpoints.Etcd)
)

// Capabilities a lock may claim (Info.Caps); the properties that test a
// capability the lock does not claim are skipped, not failed.
const (
	CapExtend     = lockimpl.CapExtend
	CapFencing    = lockimpl.CapFencing
	CapReentrant  = lockimpl.CapReentrant
	CapWatchdog   = lockimpl.CapWatchdog
	CapReplicaAck = lockimpl.CapReplicaAck
)

// Outcomes of a property.
const (
	Held         = card.Held
	Violated     = card.Violated
	NotClaimed   = card.NotClaimed
	HarnessError = card.HarnessError
)

// LockDef is one of your locks: its description and its constructor. The
// worker calls New once per simulated client with the endpoints of the
// nodes and the client's wall clock (Config.Now), which the clock-client
// fault steps. Measure validity as your lock does in production: on Go's
// monotonic clock (time.Now, time.Since) it is immune to the steps, as it
// should be; if your lock reads wall time (Unix timestamps), read it
// through Config.Now so the steps reach it (property clock/client-steps).
//
// Info.Needs says which nodes the lock uses; Info.Caps what it promises
// beyond mutual exclusion. Info.Failpoints names steps of your own code
// that the suite may attack: declare one and call Config.Hit(name) at that
// step, and the properties that need it run (run `simulate suite -list`
// for which property needs which; for example "after-setnx", between an
// acquire's first write and the rest of it, and "release-after-get",
// inside a release after the key was checked and before it is deleted).
// A property whose failpoint is never hit during its run is not held.
type LockDef struct {
	Info Info
	New  Factory
}

var served atomic.Bool

// Main registers your locks and runs the tests, or, when the harness
// started this binary as a worker, serves the worker protocol instead.
// Call it from TestMain; it does not return.
func Main(m *testing.M, locks ...LockDef) {
	if err := Register(locks...); err != nil {
		fmt.Fprintln(os.Stderr, "lockfaulttest.Main:", err)
		os.Exit(2)
	}
	if worker.IsWorker() {
		worker.Main()
		return
	}
	served.Store(true)
	os.Exit(m.Run())
}

// Register adds locks to lockfault's registry; Main calls it. It checks
// each description: a name, Needs one of single, masters, etcd, known
// capabilities, and a constructor.
func Register(locks ...LockDef) error {
	for _, l := range locks {
		i := l.Info
		switch {
		case i.Name == "" || strings.ContainsAny(i.Name, " /\t"):
			return fmt.Errorf("lock %q: Info.Name must be a non-empty word without spaces or slashes", i.Name)
		case i.Needs != NeedsSingle && i.Needs != NeedsMasters && i.Needs != NeedsEtcd:
			return fmt.Errorf("lock %s: Info.Needs %q is not allowed (allowed: %s, %s, %s)", i.Name, i.Needs, NeedsSingle, NeedsMasters, NeedsEtcd)
		case l.New == nil:
			return fmt.Errorf("lock %s: New is nil", i.Name)
		}
		for _, c := range i.Caps {
			if !known(lockimpl.AllCaps, c) {
				return fmt.Errorf("lock %s: Info.Caps: %q is not allowed (allowed: %s)", i.Name, c, strings.Join(lockimpl.AllCaps, ", "))
			}
		}
		if _, dup := lockimpl.Lookup(i.Name); dup {
			return fmt.Errorf("lock %s: the name is taken (built-in locks: %s)", i.Name, strings.Join(lockimpl.Names(), ", "))
		}
		lockimpl.Register(i, l.New)
	}
	return nil
}

// Options of Run and Suite. The zero value runs every property with its
// own number of cycles on the backend named by LOCKFAULT_BACKEND (auto).
type Options struct {
	// Backend: "process", "docker" or "auto"; default $LOCKFAULT_BACKEND,
	// else auto (docker when an engine answers).
	Backend string
	// Cycles overrides every property's number of fault cycles; 0 keeps
	// them (halved with -short in Run, or Short in Suite).
	Cycles int
	// Short halves the cycles (Suite; Run follows testing.Short()).
	Short bool
	// ReportsDir is where run reports go; default $LOCKFAULT_REPORTS, else
	// lockfault-reports in the system's temp folder.
	ReportsDir string
	// KeepReports keeps the reports of properties that held (Run).
	KeepReports bool
	// Timeout bounds each property's run (default 15 minutes).
	Timeout time.Duration
	// Only and Skip select properties by name or prefix (go test's -run
	// and -skip select Run's subtests too).
	Only, Skip []string
	// Parallel properties at a time (Suite; default 2).
	Parallel int
	// KnownViolations lists properties the lock is known to break, with
	// the reason (for example "failover/async-replica": a single-master
	// lock loses its key when an asynchronous replica is promoted). Run
	// skips such a property when it is violated, saying why and what was
	// observed, instead of failing it; if it holds, it passes.
	KnownViolations map[string]string
}

func (o Options) withDefaults() Options {
	if o.Backend == "" {
		o.Backend = os.Getenv("LOCKFAULT_BACKEND")
	}
	if o.Backend == "" {
		o.Backend = "auto"
	}
	if o.ReportsDir == "" {
		o.ReportsDir = os.Getenv("LOCKFAULT_REPORTS")
	}
	if o.ReportsDir == "" {
		o.ReportsDir = filepath.Join(os.TempDir(), "lockfault-reports")
	}
	if o.Timeout <= 0 {
		o.Timeout = runner.SuiteTimeout
	}
	return o
}

func (o Options) check() error {
	switch o.Backend {
	case "process", "docker", "auto":
	default:
		return fmt.Errorf("backend %q is not allowed (allowed: process, docker, auto; from Options.Backend or LOCKFAULT_BACKEND)", o.Backend)
	}
	if o.Cycles < 0 || o.Cycles > 1000 {
		return fmt.Errorf("Options.Cycles %d: want 0 (the property's own) to 1000", o.Cycles)
	}
	return nil
}

// Run runs every property of the suite against the lock, each as a
// parallel subtest named after the property. A violation fails the
// subtest with the findings and the report path; a property the lock does
// not claim is skipped with the reason; a harness failure fails it as
// such (it says nothing about the lock).
func Run(t *testing.T, lock string, opts Options) {
	t.Helper()
	info, err := setup(lock)
	if err != nil {
		t.Fatal(err)
	}
	o := opts.withDefaults()
	if err := o.check(); err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	ro := runner.Options{Lock: lock, Backend: o.Backend, Cycles: o.Cycles, ReportsDir: filepath.Join(o.ReportsDir, "gotest", lock)}
	apply, notClaimed, err := runner.SelectProperties(info, o.Only, o.Skip)
	if err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	for name := range o.KnownViolations {
		if _, ok := suite.Lookup(name); !ok {
			t.Fatalf("lockfaulttest: Options.KnownViolations: %q is not a property of the suite (properties: %s)", name, strings.Join(runner.PropertyNames(), ", "))
		}
	}
	selected := map[string]bool{}
	for _, p := range apply {
		selected[p.Name] = true
	}
	for _, p := range suite.All() {
		t.Run(p.Name, func(t *testing.T) {
			if why, ok := notClaimed[p.Name]; ok {
				t.Skipf("not claimed: %s", why)
			}
			if !selected[p.Name] {
				t.Skip("not selected by Options.Only/Skip")
			}
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
			defer cancel()
			row := runner.RunProperty(ctx, p, info, ro, testing.Short() || o.Short)
			switch row.Outcome {
			case card.Held:
				t.Logf("held: %s (%v)", p.Explanation, row.Duration.Round(time.Second))
				if why, ok := o.KnownViolations[p.Name]; ok {
					t.Logf("listed as a known violation (%s), but it held this time", why)
				}
				if !o.KeepReports && row.Report != "" {
					run := filepath.Dir(row.Report)
					os.RemoveAll(run)
					os.Remove(filepath.Dir(run)) // the scenario's folder, when it is now empty
				}
			case card.Violated:
				if why, ok := o.KnownViolations[p.Name]; ok {
					t.Skipf("known violation (%s):\n%s", why, Explain(row))
				}
				t.Error(Explain(row))
			default:
				t.Errorf("harness error (not a verdict on %s): %s\nreport: %s", lock, row.Finding, orNone(row.Report))
			}
		})
	}
}

// Suite runs the suite against the lock and writes its report card (the
// same folder `simulate suite` writes, under Options.ReportsDir/suite/):
// the error-returning form of Run, for a test that asserts on the card.
func Suite(ctx context.Context, lock string, opts Options) (*Card, error) {
	info, err := setup(lock)
	if err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	c, _, err := runner.RunSuite(ctx, runner.SuiteOptions{
		Options: runner.Options{Lock: lock, Backend: o.Backend, Cycles: o.Cycles, ReportsDir: o.ReportsDir},
		Info:    info, Parallel: o.Parallel, Only: o.Only, Skip: o.Skip, Short: o.Short, Timeout: o.Timeout,
	}, nil)
	return c, err
}

// Explain says what a violated (or failed) property means, in sentences:
// the promise, what was observed, the findings and the report.
func Explain(r Row) string {
	var b strings.Builder
	switch r.Outcome {
	case card.Violated:
		fmt.Fprintf(&b, "property %s is violated: the lock broke this promise.\n", r.Property)
	case card.Held:
		fmt.Fprintf(&b, "property %s held.\n", r.Property)
		return b.String()
	default:
		fmt.Fprintf(&b, "property %s: %s.\n", r.Property, r.Outcome.Text())
	}
	if r.Explanation != "" {
		fmt.Fprintf(&b, "  promise:  %s\n", r.Explanation)
	}
	if len(r.Observed) > 0 {
		obs := strings.Join(r.Observed, ", ")
		if r.Cycles > 0 {
			obs += fmt.Sprintf(" in %d of %d fault cycles", r.BadCycles, r.Cycles)
		}
		if len(r.Expect) > 0 {
			obs += " (the property expects: " + strings.Join(r.Expect, ", ") + ")"
		}
		fmt.Fprintf(&b, "  observed: %s\n", obs)
	}
	if len(r.Findings) > 0 {
		b.WriteString("  what happened:\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "    - %s\n", f)
		}
	} else if r.Finding != "" {
		fmt.Fprintf(&b, "  what happened: %s\n", r.Finding)
	}
	fmt.Fprintf(&b, "  report:   %s (timeline.png and history.jsonl beside it)", orNone(r.Report))
	return b.String()
}

func setup(lock string) (Info, error) {
	if !served.Load() {
		return Info{}, fmt.Errorf("lockfaulttest: call lockfaulttest.Main(m, ...) from TestMain: the test binary must also serve as the worker")
	}
	info, ok := lockimpl.Lookup(lock)
	if !ok {
		return Info{}, fmt.Errorf("lockfaulttest: lock %q is not registered (pass it to lockfaulttest.Main; registered: %s)", lock, strings.Join(lockimpl.Names(), ", "))
	}
	return info, nil
}

func known(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
