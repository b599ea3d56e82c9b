// Package lockfaulttest tests a lock from your own module with `go test`:
// every property of lockfault's suite (mutual exclusion without faults, a
// crashed holder, a stale holder, extend, clocks, failover, fencing, ...)
// runs against your lock on real Redis/etcd nodes, under the faults that
// break that property, each as a subtest with a stable name.
//
//	var myLock = lockfaulttest.LockDef{
//		Info: lockfaulttest.Info{Name: "mylock", Needs: lockfaulttest.NeedsSingle,
//			Caps: []string{lockfaulttest.CapExtend}},
//		New: newMyLock, // func(lockfaulttest.Config) (lockfaulttest.Lock, error)
//	}
//
//	func TestMyLock(t *testing.T) { lockfaulttest.Run(t, myLock, lockfaulttest.Options{}) }
//
// One lock per test function: the worker processes run the calling test.
//
// Each simulated client is a separate process: lockfault starts your test
// binary again with only the calling test selected (and LOCKFAULT_ROLE=
// worker), and there Run serves lockfault's worker protocol with your lock
// instead of running the suite; your lock's code runs unchanged in each
// client. No TestMain is needed.
//
// `go test -run 'TestMyLock/exclusion/no-faults'` and `-skip` select
// properties, `-short` halves the fault cycles, a property whose capability
// your lock does not claim (Info.Caps) is skipped with the reason, and a
// violation fails its subtest with the findings in plain sentences and the
// path of the run's report (kept, the newest five runs of each property;
// reports of properties that held are removed; Options.KeepReports keeps
// every one). The reports carry no pictures, so
// your test binary links no plotting library: `simulate report <folder>`
// draws a run's timeline.png afterwards, or a test that imports
// github.com/lockfault/lockfault/plots for its side effect draws them all.
//
// Ctrl-C (or SIGTERM) stops the runs under way: they remove their nodes,
// worker processes and temporary folders, and their subtests fail as
// interrupted, before the binary exits; a second Ctrl-C ends it at once.
//
// The nodes run as local processes (Debian's redis-server, redis-sentinel,
// etcd) or Docker containers: Options.Backend, or the LOCKFAULT_BACKEND
// environment variable ("process", "docker", "auto"; default auto). The
// Docker backend is linked only into a test that imports
// github.com/lockfault/lockfault/cluster/docker for its side effect; without
// it auto means local processes, and the test binary links no container
// library.
//
// # The lock contract
//
// A Lock is built once per simulated client by LockDef.New, with the
// client's Config (endpoints, options, wall clock, failpoint and renewal
// hooks). Across a failover the harness may build a new Lock (new
// endpoints) while grants of the old one are still held: a Lease returned
// by one Lock must be releasable and extendable by a later Lock of the same
// client, and Close must not release anything.
//
//   - Acquire returns an error wrapping ErrNotAcquired only when it
//     certainly left no grant behind; any other error means "unknown".
//   - Release and Extend return ErrNotHeld when the caller's grant is gone.
//   - Lease.Validity/ValidUntil is what your lock claims the grant is good
//     for, measured on Go's monotonic clock (time.Now, time.Since). A zero
//     or negative Validity means the grant has already expired, never "no
//     end": a lock that renews its grants on its own (a watchdog) sets
//     Lease.Renewing and calls Config.OnRenew after each renewal.
//   - Config.Now is the client's wall clock, which the clock-client fault
//     steps: read wall time through it if your lock uses Unix timestamps.
//     Your test binary is not built by lockfault, so a step moves nothing
//     else: a property that steps the client's clock of a lock that never
//     read Config.Now is not exercised (NotReadingConfigNow), never held.
//     Built with the clock overlay (go test -overlay build/_clock/overlay.json
//     -tags lockfault_clock, docs/FAULTS.md), time.Now moves too.
//   - Config.Hit(name) marks a step inside your lock that a property may
//     attack (declare it in Info.Failpoints). Without it, the properties
//     that attack a step inside a lock fire on the Redis command your lock
//     sends at that step instead.
package lockfaulttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/internal/interrupt"
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
	Info           = lockimpl.Info
	// Card is the report card Suite returns; Row one property's line.
	Card = card.Card
	Row  = card.Row
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
	NeedsSingle  = lockimpl.NeedsSingle  // one Redis master (Endpoints.Primary), replicated with failover where a property needs it
	NeedsMasters = lockimpl.NeedsMasters // independent Redis masters (Endpoints.Masters), Redlock-style
	NeedsEtcd    = lockimpl.NeedsEtcd    // an etcd cluster (Endpoints.Etcd)
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

// Outcomes of a property (Row.Outcome).
const (
	Held         = card.Held
	Violated     = card.Violated
	Unknown      = card.Unknown // the property never reached the lock (not exercised), or could not be judged
	NotClaimed   = card.NotClaimed
	HarnessError = card.HarnessError
)

// LockDef is your lock: its description and its constructor, called once
// per simulated client.
//
// Info.Needs says which nodes the lock uses; Info.Caps what it promises
// beyond mutual exclusion; Info.Failpoints names steps of your own code
// that the suite may attack (call Config.Hit(name) there); Info.Options
// the option names your lock understands.
type LockDef struct {
	Info Info
	New  func(Config) (Lock, error)
}

// check refuses a bad description: a name, Needs one of single, masters,
// etcd, known capabilities, a constructor.
func (d LockDef) check() error {
	i := d.Info
	switch {
	case i.Name == "" || strings.ContainsAny(i.Name, " /\t\n") || len(i.Name) > 100:
		return fmt.Errorf("lock %q: Info.Name must be a non-empty word of at most 100 bytes without spaces or slashes", i.Name)
	case !slices.Contains(lockfault.AllNeeds, i.Needs):
		return fmt.Errorf("lock %s: Info.Needs %q is not allowed (allowed: single, masters, etcd, cluster)", i.Name, i.Needs)
	case d.New == nil:
		return fmt.Errorf("lock %s: New is nil", i.Name)
	}
	if _, taken := lockimpl.Lookup(i.Name); taken {
		return fmt.Errorf("lock %s: the name is taken by a built-in lock (built-in locks: %s)", i.Name, strings.Join(lockimpl.Names(), ", "))
	}
	for _, c := range i.Caps {
		if !slices.Contains(lockimpl.AllCaps, c) {
			return fmt.Errorf("lock %s: Info.Caps: %q is not allowed (allowed: %s)", i.Name, c, strings.Join(lockimpl.AllCaps, ", "))
		}
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
	// KeepReports keeps the reports of properties that held, and every
	// earlier run's (Run keeps the newest five of each property otherwise).
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
	// Extra are saved scenario files or folders (a hunt's minimal.yaml:
	// `simulate hunt` leaves them) run beside the properties, each a
	// subtest extra/<scenario name> that passes when the run is safe: a
	// finding kept as a regression test.
	Extra []string
}

// resolve checks the options and turns them into the suite's.
func (o Options) resolve(lock string, short bool) (suite.Options, error) {
	if o.Backend == "" {
		o.Backend = os.Getenv("LOCKFAULT_BACKEND")
	}
	b, err := cluster.ParseBackend(o.Backend)
	if err != nil {
		return suite.Options{}, fmt.Errorf("backend (Options.Backend or LOCKFAULT_BACKEND): %v", err)
	}
	if b == cluster.BackendDocker && !cluster.DockerLinked() {
		return suite.Options{}, fmt.Errorf("backend (Options.Backend or LOCKFAULT_BACKEND): docker is not linked into this test binary (allowed: process, auto; or import _ \"github.com/lockfault/lockfault/cluster/docker\" in your test)")
	}
	if o.ReportsDir == "" {
		o.ReportsDir = os.Getenv("LOCKFAULT_REPORTS")
	}
	if o.ReportsDir == "" {
		o.ReportsDir = filepath.Join(os.TempDir(), "lockfault-reports")
	}
	for name := range o.KnownViolations {
		if _, ok := suite.Lookup(name); !ok {
			return suite.Options{}, fmt.Errorf("Options.KnownViolations: %q is not a property of the suite (properties: %s)", name, strings.Join(suite.Names(), ", "))
		}
	}
	extra, err := suite.LoadExtra(o.Extra)
	if err != nil {
		return suite.Options{}, fmt.Errorf("Options.Extra: %v", err)
	}
	so := suite.Options{Run: runner.Options{Backend: b, ReportsDir: o.ReportsDir}, Cycles: o.Cycles, Parallel: o.Parallel,
		Only: o.Only, Skip: o.Skip, Short: o.Short || short, Timeout: o.Timeout, Extra: extra}
	if err := so.Check(); err != nil {
		return suite.Options{}, fmt.Errorf("Options: %v", err)
	}
	return so.WithDefaults(), nil
}

// Run runs every property of the suite against the lock, each as a
// parallel subtest named after the property. A violation fails the
// subtest with the findings and the report path; a property the lock does
// not claim is skipped with the reason; a harness failure fails it as
// such (it says nothing about the lock). In the worker processes lockfault
// starts from this test binary, Run serves the lock instead (see the
// package documentation).
func Run(t *testing.T, def LockDef, opts Options) {
	t.Helper()
	subj := serve(t, def)
	so, err := opts.resolve(def.Info.Name, testing.Short())
	if err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	so.Run.ReportsDir = filepath.Join(so.Run.ReportsDir, "gotest", def.Info.Name)
	apply, notClaimed, err := suite.Select(subj.Info, so.Only, so.Skip)
	if err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	sig, stop := interrupt.Context()
	t.Cleanup(stop) // after the parallel subtests
	for _, p := range suite.All() {
		t.Run(p.Name, func(t *testing.T) {
			if why, ok := notClaimed[p.Name]; ok {
				t.Skipf("not claimed: %s", why)
			}
			if !slices.ContainsFunc(apply, func(q suite.Property) bool { return q.Name == p.Name }) {
				t.Skip("not selected by Options.Only/Skip")
			}
			t.Parallel()
			ctx, cancel := context.WithTimeout(sig, so.Timeout)
			defer cancel()
			report(t, interrupted(t, sig, clockNotReached(suite.RunProperty(ctx, p, subj, so))), opts)
		})
	}
	for _, e := range so.Extra {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(sig, so.Timeout)
			defer cancel()
			report(t, interrupted(t, sig, suite.RunExtra(ctx, e, subj, so)), opts)
		})
	}
}

// interrupted fails the subtest of a run stopped by a signal (sig ended)
// as such: not a verdict, and nothing of it left but its report.
func interrupted(t *testing.T, sig context.Context, row Row) Row {
	if sig.Err() != nil {
		t.Fatalf("interrupted (Ctrl-C or SIGTERM): the run stopped and removed its nodes and workers\nreport: %s", orNone(row.Report))
	}
	return row
}

// report turns a property's row into the subtest's result.
func report(t *testing.T, row Row, opts Options) {
	if !opts.KeepReports && row.Report != "" {
		pruneRuns(filepath.Dir(row.Report))
	}
	switch row.Outcome {
	case card.Held:
		t.Logf("held: %s (%v)", row.Explanation, row.Duration.Round(time.Second))
		if why, ok := opts.KnownViolations[row.Property]; ok {
			t.Logf("listed as a known violation (%s), but it held this time", why)
		}
		if !opts.KeepReports && row.Report != "" {
			run := filepath.Dir(row.Report)
			os.RemoveAll(run)
			os.Remove(filepath.Dir(run)) // the scenario's folder, when it is now empty
		}
	case card.Violated:
		if why, ok := opts.KnownViolations[row.Property]; ok {
			t.Skipf("known violation (%s):\n%s", why, Explain(row))
		}
		t.Error(Explain(row))
	case card.Unknown:
		if strings.HasPrefix(row.Finding, NotReadingConfigNow) {
			// Not held, not violated: the property never reached the lock.
			t.Skipf("%s\n%s", NotReadingConfigNow, Explain(row))
		}
		t.Errorf("harness error (not a verdict on the lock): %s\nreport: %s", row.Finding, orNone(row.Report))
	default:
		t.Errorf("harness error (not a verdict on the lock): %s\nreport: %s", row.Finding, orNone(row.Report))
	}
}

// Suite runs the suite against the lock and writes its report card (the
// same folder `simulate suite` writes, under Options.ReportsDir/suite/):
// the error-returning form of Run, for a test that asserts on the card.
// t is the calling test (its binary serves the workers).
func Suite(t testing.TB, def LockDef, opts Options) (*Card, error) {
	subj := serve(t, def)
	so, err := opts.resolve(def.Info.Name, false)
	if err != nil {
		return nil, err
	}
	ctx, stop := interrupt.Context()
	defer stop()
	c, _, err := suite.Run(ctx, subj, so, nil)
	if c != nil {
		for i := range c.Rows {
			c.Rows[i] = clockNotReached(c.Rows[i])
		}
	}
	return c, err
}

// NotReadingConfigNow begins the finding of a property whose client clock
// step never reached the lock: the test binary is not built with the clock
// overlay, so a step moves Config.Now only, and the lock never read it.
const NotReadingConfigNow = "not exercised: your lock reads time.Now; read Config.Now"

// clockNotReached words a property whose clock step had no effect on a
// lock in a test binary without the clock overlay (the worker reports its
// unmoved clock when the lock never read Config.Now): unknown, never held,
// and what to do about it.
func clockNotReached(r Row) Row {
	if r.Outcome != card.Unknown || worker.ClockInProcess || !strings.Contains(r.Finding, "had no effect on the lock") {
		return r
	}
	r.Finding = NotReadingConfigNow + " (or build the test binary with the clock overlay: docs/FAULTS.md). " + r.Finding
	if len(r.Findings) > 0 {
		r.Findings[0] = r.Finding
	}
	return r
}

// Properties lists the properties the suite would run against a lock with
// this description, and those it does not claim with the reason.
func Properties(info Info) (run []string, notClaimed map[string]string) {
	apply, nc, _ := suite.Select(info, nil, nil)
	for _, p := range apply {
		run = append(run, p.Name)
	}
	return run, nc
}

// serve returns the lock as the suite's subject: the calling test's binary,
// started again with only that test selected, is every client's worker.
// In such a worker process it serves the worker protocol with def and
// never returns.
func serve(t testing.TB, def LockDef) runner.Subject {
	t.Helper()
	if err := def.check(); err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	if worker.IsWorker() {
		lockimpl.Register(def.Info, lockimpl.Factory(def.New))
		worker.Main() // exits
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	return runner.Subject{Info: def.Info, Command: []string{self, "-test.run=" + runPattern(t.Name()), "-test.timeout=0"}}
}

// runPattern selects exactly one test (or subtest) by its name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
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
	fmt.Fprintf(&b, "  report:   %s (history.jsonl beside it; `simulate report` on its folder draws timeline.png)", orNone(r.Report))
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
