// Package runner runs one scenario end to end: it starts the cluster, the
// resource and the worker processes, drives the workload and the nemesis,
// records the history, checks it and writes the report. Whatever happens
// (success, failure, Ctrl-C, panic), everything it started is torn down.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/register"
	"github.com/lockfault/lockfault/report"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
)

// Options for a run: where and how, never what (the plan says what).
type Options struct {
	Backend    cluster.BackendKind // docker, process or auto (docker when an engine answers)
	ReportsDir string              // default "reports"
	// RunID names the run (default: a new NewRunID); the caller may print
	// it, and the report folder (ReportDir), before the run starts.
	RunID string
	// WorkerTimeout bounds how long a worker may take to answer init
	// (default DefaultWorkerTimeout).
	WorkerTimeout time.Duration
	Log           io.Writer // progress lines (default: discard)
	// SeeCommands puts a RESP tap in front of every client's path to every
	// node even when no step waits for a command, so that the commands
	// the lock sends are seen (Outcome.Commands): the hunt draws its
	// triggers from them.
	SeeCommands bool
}

// Outcome is what a run produced.
type Outcome struct {
	Dir     string
	Meta    report.Meta
	Result  *checker.Result
	Summary string
	// Commands are the distinct shapes of the commands the lock sent (with
	// Options.SeeCommands, or a scenario that waits for a command; nil
	// otherwise): what a hunt draws its command-level triggers from.
	Commands []resp.Shape
}

// Exit codes of `simulate run`.
const (
	ExitMatch   = 0 // the verdict matched the expectation
	ExitNoMatch = 1 // it did not
	ExitHarness = 2 // the harness itself failed (or was interrupted)
)

// Code maps an outcome and error to an exit code.
func Code(o *Outcome, err error) int {
	switch {
	case err != nil || o == nil || o.Meta.Interrupted || o.Meta.Error != "":
		return ExitHarness
	case Unjudged(o):
		// The history cannot be judged: never a pass, never a plain miss.
		return ExitHarness
	case o.Meta.Matched:
		return ExitMatch
	}
	return ExitNoMatch
}

// Unjudged reports whether a run's history could not be judged: its
// verdict is unknown, or unknown is all that stands between what it
// observed and what its scenario expects (unknown beside classes the
// scenario allows: a cycle that proved nothing in a run whose other cycles
// were unavailable, a stretch without a grant that the harness's own
// stalls made too long).
func Unjudged(o *Outcome) bool {
	if o == nil || o.Result == nil {
		return false
	}
	r := o.Result
	if r.Verdict == checker.ClassUnknown {
		return true
	}
	if o.Meta.Matched || !slices.Contains(r.Observed, checker.ClassUnknown) {
		return false
	}
	rest := slices.DeleteFunc(slices.Clone(r.Observed), func(c string) bool { return c == checker.ClassUnknown })
	ok, _ := checker.Match(rest, o.Meta.Expect, o.Meta.Allow)
	return ok
}

// run is one run of a scenario, made of parts: the recorder (the history
// and the notes, recorder.go), the clients (the workers and the workload,
// clients.go), the nemesis (the faults, nemesis.go) and the quiescer (the
// end of holds, quiesce.go). What they share is here: the scenario, the
// cluster, the resource, the taps, and under mu the processes by name and
// what the clients hold.
type run struct {
	*recorder
	cl  *clients
	nem *nemesis
	qu  *quiescer

	opt      Options
	sc       *scenarios.Scenario
	id       string
	dir      string
	res      *register.Server
	clus     *cluster.Cluster
	info     RunInfo
	subject  Subject           // the lock under test and the worker that runs it
	lockOpts map[string]string // its options as it runs (Plan.Options)

	mu     sync.Mutex
	procs  map[string]*proc
	holder string
	// clones: the history name of each clone (c1-clone) -> the identity
	// its worker was started under (c1); see Clone.
	clones map[string]string
	// wctx is the workload's context: client loops, clones' included, end
	// with it.
	wctx context.Context
	// lastLease is each worker's latest grant (key, lease), for release_old.
	lastLease map[*proc][2]string
	leaseKey  map[string]string // the key of every lease the workload named
	events    events            // what the nemesis's await steps wait for
	taps      *taps             // the RESP taps and their triggers (nil: none)

	gate *gate
	opID int64
	ctx  context.Context // the run's context, cancelled on interrupt
	// opCtx is the operations' context: the run's, also ended (endOps)
	// when the operations still in flight after the workload stopped have
	// had drainBound to finish.
	opCtx  context.Context
	endOps context.CancelCauseFunc
}

// newRun makes a run of its parts, with its maps made.
func newRun(rec *recorder) *run {
	r := &run{recorder: rec, procs: map[string]*proc{}, clones: map[string]string{}, lastLease: map[*proc][2]string{}, leaseKey: map[string]string{}, gate: newGate()}
	r.cl, r.nem, r.qu = &clients{r: r}, &nemesis{r: r}, &quiescer{r: r}
	return r
}

// ReportDir is the report folder of a run: <reports>/<scenario>/<run-id>.
func ReportDir(opt Options, sc *scenarios.Scenario, runID string) string {
	dir := opt.ReportsDir
	if dir == "" {
		dir = "reports"
	}
	return filepath.Join(dir, sc.Name, runID)
}

// NewRunID returns a sortable unique run id: its start time, then six
// random hex digits (IsRunID).
func NewRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// runIDForm is the form of NewRunID's ids.
var runIDForm = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// IsRunID says whether name has the form of a run id (NewRunID): a folder
// so named is a run's.
func IsRunID(name string) bool { return runIDForm.MatchString(name) }

// Run executes a plan. The report is written even when the run fails or is
// interrupted, from whatever history was recorded.
func Run(ctx context.Context, plan *Plan, opt Options) (out *Outcome, err error) {
	if opt.ReportsDir == "" {
		opt.ReportsDir = "reports"
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if opt.RunID == "" {
		opt.RunID = NewRunID()
	}
	sc := plan.Scenario
	r := newRun(&recorder{log: opt.Log})
	r.opt, r.sc, r.id, r.subject, r.lockOpts = opt, sc, opt.RunID, plan.Subject, plan.Options
	r.dir = ReportDir(opt, sc, r.id)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	started := time.Now()
	ri := RunInfo{RunID: r.id, Scenario: sc.Name, Variant: sc.Variant, Lock: r.subject.Name(), Source: sc.File,
		Backend: string(opt.Backend), Cycles: sc.Nemesis.Cycles, Started: started, Pid: os.Getpid()}
	if sc.Nemesis.Random != nil {
		ri.Seed = sc.Nemesis.Random.Seed
	}
	if err := writeRunFiles(r.dir, sc, ri); err != nil {
		return nil, err
	}
	if r.hist, err = history.Create(filepath.Join(r.dir, "history.jsonl")); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(r.dir, "workers.log"))
	if err != nil {
		r.hist.Close()
		return nil, err
	}
	r.workerLog = &capWriter{w: logFile, max: MaxWorkerLog}
	meta := report.Meta{Scenario: sc.Name, Claim: sc.Claim, Description: sc.Description, Lock: r.subject.Name(), LockLabel: lockLabel(scenarios.Lock{Name: r.subject.Name(), Options: r.lockOpts}),
		RunID: r.id, Expect: sc.Expect, Allow: sc.Allow, Started: started, Schedule: sc.Schedule()}
	r.info = ri

	runErr := r.execute(ctx, &meta)
	// Everything below runs whatever happened above.
	if dropped := r.workerLog.dropped; dropped > 0 {
		r.note("workers-log", fmt.Sprintf("workers.log reached its bound of %d bytes: %d more bytes of the workers' stderr were dropped", MaxWorkerLog, dropped))
		fmt.Fprintf(logFile, "\n[lockfault: %d more bytes of the workers' stderr were dropped: workers.log is bounded to %d bytes]\n", dropped, MaxWorkerLog)
	}
	if err := r.hist.Close(); err != nil {
		// A history that could not be written whole has no verdict.
		runErr = errors.Join(runErr, fmt.Errorf("history.jsonl could not be written whole: %w", err))
	}
	logFile.Close()
	meta.Duration = time.Since(started)
	if runErr != nil {
		meta.Error = runErr.Error()
		if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
			meta.Interrupted = true
		}
	}
	out, runErr = judge(r.dir, sc, meta, runErr)
	if r.taps != nil {
		out.Commands = r.taps.reg.Seen()
	}
	return out, runErr
}

// judge reads the run's history back from dir, checks it against the
// scenario's expectation, writes the report and returns the outcome;
// runErr, the harness's own error, gains any error of these steps.
func judge(dir string, sc *scenarios.Scenario, meta report.Meta, runErr error) (*Outcome, error) {
	// The writer keeps nothing in memory: the check reads the file back.
	events, rerr := history.Read(filepath.Join(dir, "history.jsonl"))
	if rerr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("read history: %w", rerr))
		if meta.Error != "" {
			meta.Error += "; "
		}
		meta.Error += "read history: " + rerr.Error()
	}
	req := sc.Required()
	res := checker.Check(events, checker.Options{StuckAfter: sc.StuckAfter.D(), Evidence: &req})
	if rerr != nil {
		res = checker.Unjudged("history.jsonl: " + rerr.Error())
	}
	meta.Matched, meta.Why = checker.Match(res.Observed, sc.Expect, sc.Allow)
	if meta.Error != "" {
		meta.Matched = false
		meta.Why = "the harness failed: " + meta.Error
	}
	if werr := report.Write(dir, meta, events, res); werr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("write report: %w", werr))
	}
	return &Outcome{Dir: dir, Meta: meta, Result: res, Summary: report.Summary(dir, meta, res)}, runErr
}

// execute is the part of a run that starts things; its deferred cleanup
// tears them down on every path, panics included.
func (r *run) execute(ctx context.Context, meta *report.Meta) (err error) {
	ctx, abort := context.WithCancelCause(ctx)
	cancel := func() { abort(context.Canceled) }
	defer cancel()
	r.ctx, r.abort = ctx, abort
	r.opCtx, r.endOps = context.WithCancelCause(ctx)
	defer r.endOps(nil)
	var cleanups []func()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	closeCluster, err := r.startCluster(ctx, meta)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, closeCluster)
	r.note("setup", "cluster up")
	if r.usesTaps() {
		r.taps = newTaps()
		cleanups = append(cleanups, r.taps.close, r.noteTapProblems)
	}

	r.res = &register.Server{Fencing: r.sc.Workload.Fencing, Record: r.recordAccess}
	if err := r.res.Listen("127.0.0.1:0"); err != nil {
		return err
	}
	cleanups = append(cleanups, r.res.Close)

	cleanups = append(cleanups, r.cl.killAll)
	if err := r.cl.start(ctx); err != nil {
		return err
	}
	r.note("setup", fmt.Sprintf("%d workers ready", r.sc.Workload.Clients))

	stopWorkload, wg := r.cl.startWorkload(ctx, cancel)
	stopBound := r.boundEvents(ctx)
	stopProbe := func() {}
	if r.sc.StuckAfter > 0 {
		// Liveness is judged: record the stalls of the harness's own path.
		stopProbe = r.probePaths(ctx)
		cleanups = append(cleanups, stopProbe)
	}
	nemErr := r.nem.run(ctx, meta)
	stopProbe()
	stopBound()
	stopWorkload()
	r.gate.open()
	r.qu.drain(wg, drainBound(r.sc))
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause // the first protocol violation or bound, which ended the run
	}
	if nemErr != nil {
		return nemErr
	}
	return ctx.Err()
}

// startCluster starts the run's nodes and proxies on its backend (the
// scenario's topology), and returns how to tear them down.
func (r *run) startCluster(ctx context.Context, meta *report.Meta) (closeIt func(), err error) {
	backend, err := r.opt.Backend.NewBackend(ctx, r.id)
	if err != nil {
		return nil, err
	}
	meta.Backend = backend.Name()
	topo := clusterTopology(r.sc)
	topo.ClockShim = UsesClockShim(r.sc)
	if backend.Name() == "process" {
		// A missing server is named with its Debian package before any
		// node starts.
		if err := cluster.CheckPrograms(topo.Programs()...); err != nil {
			backend.Close(context.Background())
			return nil, err
		}
	}
	r.note("setup", "backend "+backend.Name())
	r.info.Backend = backend.Name()
	if err := writeRunInfo(r.dir, r.info); err != nil {
		backend.Close(context.Background())
		return nil, err
	}
	if r.subject.External() {
		r.note("setup", fmt.Sprintf("external worker %s (lock %s, needs %s)", r.subject.Worker(), r.subject.Name(), r.subject.Info.Needs))
	}
	if err := supported(r.sc, backend); err != nil {
		backend.Close(context.Background())
		return nil, err
	}
	nw, err := cluster.NetFor(backend, r.id)
	if err != nil {
		backend.Close(context.Background())
		return nil, err
	}
	fmt.Fprintf(r.log, "starting %s topology on %s\n", topo.Kind, backend.Name())
	r.clus, err = cluster.Start(ctx, backend, nw, topo)
	if err != nil {
		nw.Close()
		backend.Close(context.Background())
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	r.clus.LockKey = lockKey(r.sc, r.subject)
	return func() {
		c, cc := context.WithTimeout(context.Background(), 60*time.Second)
		defer cc()
		if err := r.clus.Close(c); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup: %v\n", err)
		}
	}, nil
}

// supported refuses, before any node starts, a fault the backend cannot
// inject (a clock fault on nodes without the clock shim, a power loss a
// remote daemon cannot freeze), naming the step.
func supported(sc *scenarios.Scenario, b cluster.Backend) error {
	if err := cluster.CanRun(b, sc.Topology.Kind); err != nil {
		return fmt.Errorf("%s: topology.kind: %w", sc.File, err)
	}
	for _, st := range sc.Nemesis.Steps {
		if st.Fault == "" {
			continue
		}
		if err := b.Supports(st.Fault); err != nil {
			return fmt.Errorf("%s:%d: step %q: the %s backend cannot inject it: %w", sc.File, st.Line, st.String(), b.Name(), err)
		}
	}
	if rn := sc.Nemesis.Random; rn != nil {
		for _, f := range rn.Faults {
			if err := b.Supports(f); err != nil {
				return fmt.Errorf("%s:%d: random fault %s: the %s backend cannot inject it: %w", sc.File, rn.Line, f, b.Name(), err)
			}
		}
	}
	return nil
}

// ShimFaults are the faults that move a node's clock through the clock
// shim (power-loss restarts a node with its clock behind).
var ShimFaults = []string{"clock-jump", "clock-drift", "power-loss"}

// UsesClockShim reports whether a run of sc starts its nodes with the clock
// shim: a step or the random nemesis uses one of ShimFaults on a Redis
// topology (etcd reads time through the vDSO: the shim cannot move it).
func UsesClockShim(sc *scenarios.Scenario) bool {
	if sc.Topology.Kind == lockfault.Etcd {
		return false
	}
	for _, st := range sc.Nemesis.Steps {
		if slices.Contains(ShimFaults, st.Fault) {
			return true
		}
	}
	if rn := sc.Nemesis.Random; rn != nil {
		for _, f := range rn.Faults {
			if slices.Contains(ShimFaults, f) {
				return true
			}
		}
	}
	return false
}

func (r *run) recordAccess(e history.Event) {
	if e.Key == "" {
		e.Key = r.cl.keyOf(e.Lease) // a worker that does not send the key
	}
	r.hist.Append(e)
	if !e.Rejected {
		r.events.signal(e.Access, e.Process)
	}
}
