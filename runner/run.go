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
	"sync"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/reports"
	"github.com/lockfault/lockfault/resource"
	"github.com/lockfault/lockfault/scenarios"
)

// Options for a run.
type Options struct {
	Backend    string // "docker", "process" or "auto" (docker when an engine answers)
	ReportsDir string // default "reports"
	Lock       string // override the scenario's lock (picks the variant with that lock if there is one)
	Variant    string // run this variant of the scenario
	Cycles     int    // override the number of cycles
	Seed       int64  // random nemesis seed override (0: the scenario's, or time)
	// RunID names the run (default: a new NewRunID); the caller may print
	// it, and the report folder (ReportDir), before the run starts.
	RunID string
	// WorkerCommand starts a worker (default: this executable, which must
	// call worker.Main when worker.IsWorker()). An external worker declares
	// its lock in ready (docs/PROTOCOL.md); its lock need not be registered
	// here.
	WorkerCommand []string
	// WorkerInfo is what the external worker declared (Describe). When nil
	// and WorkerCommand is set, PrepareScenario and Run ask the worker.
	WorkerInfo *lockimpl.Info
	// WorkerTimeout bounds how long a worker may take to answer init
	// (default DefaultWorkerTimeout).
	WorkerTimeout time.Duration
	Log           io.Writer // progress lines (default: discard)
}

// Outcome is what a run produced.
type Outcome struct {
	Dir     string
	Meta    reports.Meta
	Result  *checker.Result
	Summary string
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
	case o.Result != nil && o.Result.Verdict == checker.ClassUnknown:
		// The history cannot be judged: never a pass, never a plain miss.
		return ExitHarness
	case o.Meta.Matched:
		return ExitMatch
	}
	return ExitNoMatch
}

type run struct {
	opt       Options
	sc        *scenarios.Scenario
	id        string
	dir       string
	log       io.Writer
	hist      *history.Writer
	res       *resource.Server
	clus      *cluster.Cluster
	workerLog *os.File
	info      RunInfo
	lockInfo  lockimpl.Info // the lock as the worker declared it (or its registration)

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
	waiters   map[string][]waiter
	protoErr  []string
	cycle     int

	gate *gate
	opID int64
	ctx  context.Context // the run's context, cancelled on interrupt
	// awaiting is the event channel of the await step being run.
	awaiting <-chan struct{}
}

// Prepare loads a scenario and applies the overrides, validating lock and
// fault names; nothing is started.
func Prepare(nameOrPath string, opt Options) (*scenarios.Scenario, error) {
	sc, err := scenarios.Load(nameOrPath)
	if err != nil {
		return nil, err
	}
	return PrepareScenario(sc, opt)
}

// PrepareScenario applies the overrides to a loaded scenario (a built-in, a
// file, or a property of the suite) and validates lock and fault names;
// nothing is started.
func PrepareScenario(sc *scenarios.Scenario, opt Options) (*scenarios.Scenario, error) {
	var err error
	if opt.Cycles < 0 || opt.Cycles > scenarios.MaxCycles {
		return nil, fmt.Errorf("-cycles %d: want 1 to %d", opt.Cycles, scenarios.MaxCycles)
	}
	variant := opt.Variant
	if variant == "" && opt.Lock != "" {
		for _, v := range sc.VariantNames()[1:] {
			if vs, _ := sc.WithVariant(v); vs != nil && vs.Lock.Name == opt.Lock {
				variant = v
				break
			}
		}
	}
	if sc, err = sc.WithVariant(variant); err != nil {
		return nil, err
	}
	if opt.Lock != "" {
		sc.Lock.Name = opt.Lock
	}
	if opt.Cycles > 0 {
		sc.Nemesis.Cycles = opt.Cycles
	}
	// The overrides may break a bound (the run's total length): check again.
	if d := sc.ScheduledTime(); opt.Cycles > 0 && d > scenarios.MaxRunTime {
		return nil, fmt.Errorf("-cycles %d: %s's schedule would take up to %v (allowed: at most %v in all)", opt.Cycles, sc.Name, d.Round(time.Second), scenarios.MaxRunTime)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	var info lockimpl.Info
	if len(opt.WorkerCommand) > 0 {
		// An external worker: its lock is what it declares.
		if info, err = opt.describe(context.Background()); err != nil {
			return nil, err
		}
		if sc.Lock.Name != info.Name {
			// The scenario's options belong to the scenario's own lock.
			sc.Lock.Name, sc.Lock.Options = info.Name, nil
		}
		if err := needsFit(info.Needs, sc.Topology.Kind); err != nil {
			return nil, sc.ErrAt("topology.kind", "the worker's lock %s needs %s: %v", info.Name, info.Needs, err)
		}
	} else {
		var ok bool
		if info, ok = lockimpl.Lookup(sc.Lock.Name); !ok {
			return nil, sc.ErrAt("lock.name", "unknown lock %q (known: %v)", sc.Lock.Name, lockimpl.Names())
		}
		if err := needsFit(info.Needs, sc.Topology.Kind); err != nil {
			return nil, sc.ErrAt("lock.name", "%v", err)
		}
	}
	for i, st := range sc.Nemesis.Steps {
		if st.Fault != "" {
			if _, _, err := faults.Get(st.Fault); err != nil {
				return nil, sc.ErrAt(fmt.Sprintf("nemesis.steps.%d.fault", i), "%v", err)
			}
			if err := faults.Check(st.Fault, st.Params); err != nil {
				return nil, sc.ErrAt(fmt.Sprintf("nemesis.steps.%d.params", i), "%v", err)
			}
			if err := checkTarget(sc, st.Fault, st.Target); err != nil {
				return nil, sc.ErrAt(fmt.Sprintf("nemesis.steps.%d.target", i), "%v", err)
			}
		}
		if st.By != "" {
			if err := checkTarget(sc, "pause-client", st.By); err != nil || st.By == "holder" || st.By == "others" || st.By == "all" {
				return nil, sc.ErrAt(fmt.Sprintf("nemesis.steps.%d.by", i), "%q is not a client (allowed: c1..c%d)", st.By, sc.Workload.Clients)
			}
		}
	}
	if r := sc.Nemesis.Random; r != nil {
		// Every fault with every target it may draw: a random schedule
		// fails here, at its line, not after the cluster has started.
		targets := r.Targets
		if len(targets) == 0 {
			targets = []string{""}
		}
		for i, f := range r.Faults {
			if err := faults.Check(f, nil); err != nil {
				return nil, sc.ErrAt(fmt.Sprintf("nemesis.random.faults.%d", i), "%v", err)
			}
			for j, tg := range targets {
				if err := checkTarget(sc, f, tg); err != nil {
					if len(r.Targets) == 0 {
						return nil, sc.ErrAt(fmt.Sprintf("nemesis.random.faults.%d", i), "%v", err)
					}
					return nil, sc.ErrAt(fmt.Sprintf("nemesis.random.targets.%d", j), "%v", err)
				}
			}
		}
	}
	return sc, nil
}

// describe returns the external worker's declared lock: opt.WorkerInfo, or
// asked from the worker.
func (o Options) describe(ctx context.Context) (lockimpl.Info, error) {
	if o.WorkerInfo != nil {
		return *o.WorkerInfo, nil
	}
	return Describe(ctx, o.WorkerCommand, o.Lock)
}

// lockInfo is the run's lock as the worker knows it.
func (o Options) lockInfo(ctx context.Context, name string) (lockimpl.Info, error) {
	if len(o.WorkerCommand) > 0 {
		return o.describe(ctx)
	}
	info, ok := lockimpl.Lookup(name)
	if !ok {
		return info, fmt.Errorf("unknown lock %q (known: %v)", name, lockimpl.Names())
	}
	return info, nil
}

func needsFit(needs, topo string) error {
	switch {
	case needs == "etcd" && topo != cluster.Etcd:
		return fmt.Errorf("this lock needs an etcd topology, not %s", topo)
	case needs != "etcd" && topo == cluster.Etcd:
		return fmt.Errorf("this lock needs Redis, not an etcd topology")
	}
	return nil
}

// ReportDir is the report folder of a run: <reports>/<scenario>/<run-id>.
func ReportDir(opt Options, sc *scenarios.Scenario, runID string) string {
	dir := opt.ReportsDir
	if dir == "" {
		dir = "reports"
	}
	return filepath.Join(dir, sc.Name, runID)
}

// NewRunID returns a sortable unique run id.
func NewRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Run executes a prepared scenario. The report is written even when the run
// fails or is interrupted, from whatever history was recorded.
func Run(ctx context.Context, sc *scenarios.Scenario, opt Options) (out *Outcome, err error) {
	if opt.ReportsDir == "" {
		opt.ReportsDir = "reports"
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	info, err := opt.lockInfo(ctx, sc.Lock.Name)
	if err != nil {
		return nil, err
	}
	if info.Name != sc.Lock.Name {
		return nil, fmt.Errorf("the worker's lock is %s, the scenario's %s: prepare the scenario with the same options", info.Name, sc.Lock.Name)
	}
	if opt.RunID == "" {
		opt.RunID = NewRunID()
	}
	r := &run{opt: opt, sc: sc, id: opt.RunID, log: opt.Log, procs: map[string]*proc{}, clones: map[string]string{}, lastLease: map[*proc][2]string{}, leaseKey: map[string]string{}, waiters: map[string][]waiter{}, gate: newGate(), lockInfo: info}
	r.dir = ReportDir(opt, sc, r.id)
	if rn := sc.Nemesis.Random; rn != nil {
		// The seed is fixed now, so the scenario written below is the
		// schedule as run.
		seed := rn.Seed
		if opt.Seed != 0 {
			seed = opt.Seed
		}
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		c := *rn
		c.Seed = seed
		scCopy := *sc // the caller's scenario stays as it was
		scCopy.Nemesis.Random = &c
		sc = &scCopy
		r.sc = sc
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	started := time.Now()
	ri := RunInfo{RunID: r.id, Scenario: sc.Name, Variant: sc.Variant, Lock: sc.Lock.Name, Source: sc.File,
		Backend: opt.Backend, Cycles: sc.Nemesis.Cycles, Started: started, Pid: os.Getpid()}
	if sc.Nemesis.Random != nil {
		ri.Seed = sc.Nemesis.Random.Seed
	}
	if err := writeRunFiles(r.dir, sc, ri); err != nil {
		return nil, err
	}
	if r.hist, err = history.Create(filepath.Join(r.dir, "history.jsonl")); err != nil {
		return nil, err
	}
	if r.workerLog, err = os.Create(filepath.Join(r.dir, "workers.log")); err != nil {
		r.hist.Close()
		return nil, err
	}
	meta := reports.Meta{Scenario: sc.Name, Claim: sc.Claim, Description: sc.Description, Lock: sc.Lock.Name,
		RunID: r.id, Expect: sc.Expect, Allow: sc.Allow, Started: started, Schedule: sc.Schedule()}
	r.info = ri

	runErr := r.execute(ctx, &meta)
	// Everything below runs whatever happened above.
	r.hist.Close()
	r.workerLog.Close()
	meta.Duration = time.Since(started)
	if runErr != nil {
		meta.Error = runErr.Error()
		if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
			meta.Interrupted = true
		}
	}
	// The writer keeps nothing in memory: the check reads the file back.
	events, rerr := history.Read(filepath.Join(r.dir, "history.jsonl"))
	if rerr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("read history: %w", rerr))
		if meta.Error != "" {
			meta.Error += "; "
		}
		meta.Error += "read history: " + rerr.Error()
	}
	res := checker.Check(events, checker.Options{StuckAfter: sc.StuckAfter.D()})
	meta.Matched, meta.Why = checker.Match(res.Observed, sc.Expect, sc.Allow)
	if meta.Error != "" {
		meta.Matched = false
		meta.Why = "the harness failed: " + meta.Error
	}
	if werr := reports.Write(r.dir, meta, events, res); werr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("write report: %w", werr))
	}
	out = &Outcome{Dir: r.dir, Meta: meta, Result: res, Summary: reports.Summary(r.dir, meta, res)}
	return out, runErr
}

// execute is the part of a run that starts things; its deferred cleanup
// tears them down on every path, panics included.
func (r *run) execute(ctx context.Context, meta *reports.Meta) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx = ctx
	var cleanups []func()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	backend, err := r.newBackend(ctx)
	if err != nil {
		return err
	}
	meta.Backend = backend.Name()
	r.note("setup", "backend "+backend.Name())
	r.info.Backend = backend.Name()
	if err := writeRunInfo(r.dir, r.info); err != nil {
		backend.Close(context.Background())
		return err
	}
	if len(r.opt.WorkerCommand) > 0 {
		r.note("setup", "external worker "+JoinCommand(r.opt.WorkerCommand)+" (lock "+r.lockInfo.Name+", needs "+r.lockInfo.Needs+")")
	}
	nw, err := cluster.NetFor(backend, r.id)
	if err != nil {
		backend.Close(context.Background())
		return err
	}
	topo := cluster.Topology{Kind: r.sc.Topology.Kind, Replicas: r.sc.Topology.Replicas, Sentinels: r.sc.Topology.Sentinels,
		Masters: r.sc.Topology.Masters, Persistence: r.sc.Topology.Persistence, ClockShim: r.needsShim(),
		Password: r.sc.Topology.Password}
	fmt.Fprintf(r.log, "starting %s topology on %s\n", topo.Kind, backend.Name())
	r.clus, err = cluster.Start(ctx, backend, nw, topo)
	if err != nil {
		nw.Close()
		backend.Close(context.Background())
		return fmt.Errorf("start cluster: %w", err)
	}
	cleanups = append(cleanups, func() {
		c, cc := context.WithTimeout(context.Background(), 60*time.Second)
		defer cc()
		if err := r.clus.Close(c); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup: %v\n", err)
		}
	})
	r.note("setup", "cluster up")

	r.res = &resource.Server{Fencing: r.sc.Workload.Fencing, Record: r.recordAccess}
	if err := r.res.Listen("127.0.0.1:0"); err != nil {
		return err
	}
	cleanups = append(cleanups, r.res.Close)

	cleanups = append(cleanups, r.killWorkers)
	for i := 1; i <= r.sc.Workload.Clients; i++ {
		name := fmt.Sprintf("c%d", i)
		p, err := r.startProc(ctx, name)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.procs[name] = p
		r.mu.Unlock()
	}
	r.note("setup", fmt.Sprintf("%d workers ready", r.sc.Workload.Clients))

	wctx, stopWorkload := context.WithCancel(ctx)
	r.mu.Lock()
	r.wctx = wctx
	r.mu.Unlock()
	var wg sync.WaitGroup
	for i := 1; i <= r.sc.Workload.Clients; i++ {
		name := fmt.Sprintf("c%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.recoverInto(cancel)
			// workload.start_apart: cN's first round (N-1) × start_apart after c1's.
			if sleep(wctx, time.Duration(i-1)*r.sc.Workload.StartApart.D()) != nil {
				return
			}
			r.clientLoop(wctx, name)
		}()
	}
	nemErr := r.nemesis(ctx, meta)
	stopWorkload()
	r.gate.open()
	r.drain(&wg)
	if nemErr != nil {
		return nemErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	perrs := r.protoErr
	r.mu.Unlock()
	if len(perrs) > 0 {
		return fmt.Errorf("worker protocol errors: %v", perrs)
	}
	return nil
}

func (r *run) recoverInto(cancel func()) {
	if p := recover(); p != nil {
		r.protocolError(fmt.Sprintf("panic: %v", p))
		cancel()
	}
}

func (r *run) newBackend(ctx context.Context) (cluster.Backend, error) {
	switch r.opt.Backend {
	case "process":
		return cluster.NewProcess(r.id)
	case "docker":
		return cluster.NewDocker(ctx, r.id)
	case "", "auto":
		if cluster.DockerAvailable(ctx) {
			return cluster.NewDocker(ctx, r.id)
		}
		return cluster.NewProcess(r.id)
	}
	return nil, fmt.Errorf("--backend: %q is not allowed (allowed: docker, process, auto)", r.opt.Backend)
}

// needsShim: clock and power-loss faults need the node shim preloaded.
func (r *run) needsShim() bool {
	uses := func(f string) bool { return f == "clock-jump" || f == "clock-drift" || f == "power-loss" }
	if r.sc.Topology.Kind == cluster.Etcd {
		return false // etcd reads time through the vDSO: the shim cannot move it
	}
	for _, st := range r.sc.Nemesis.Steps {
		if uses(st.Fault) {
			return true
		}
	}
	if rn := r.sc.Nemesis.Random; rn != nil {
		for _, f := range rn.Faults {
			if uses(f) {
				return true
			}
		}
	}
	return false
}

func (r *run) killWorkers() {
	r.mu.Lock()
	ps := make([]*proc, 0, len(r.procs))
	for _, p := range r.procs {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	interrupted := r.ctx != nil && r.ctx.Err() != nil
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if interrupted {
				p.kill()
			} else {
				p.shutdown()
			}
		}()
	}
	wg.Wait()
}

func (r *run) note(op, detail string) {
	r.hist.Append(history.Event{Kind: history.Note, Op: op, Detail: detail, Cycle: r.currentCycle()})
}

func (r *run) currentCycle() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cycle
}

func (r *run) protocolError(msg string) {
	r.mu.Lock()
	r.protoErr = append(r.protoErr, msg)
	r.mu.Unlock()
	r.hist.Append(history.Event{Kind: history.Note, Op: "protocol-error", Detail: msg})
	fmt.Fprintln(r.log, msg)
}

func (r *run) recordAccess(e history.Event) {
	if e.Key == "" {
		e.Key = r.keyOf(e.Lease) // a worker that does not send the key
	}
	r.hist.Append(e)
	if !e.Rejected {
		r.signal(e.Access, e.Process)
	}
}

// waiter is a nemesis step waiting for an event (of one client, if by is
// set; only once after is closed, if after is set).
type waiter struct {
	by    string
	ch    chan struct{}
	after <-chan struct{}
}

// signal wakes everyone awaiting an event kind from this process.
func (r *run) signal(kind, process string) {
	r.mu.Lock()
	var keep []waiter
	var wake []waiter
	for _, w := range r.waiters[kind] {
		armed := true
		if w.after != nil {
			select {
			case <-w.after:
			default:
				armed = false // its predecessor's event has not come yet
			}
		}
		if armed && (w.by == "" || w.by == process) {
			wake = append(wake, w)
		} else {
			keep = append(keep, w)
		}
	}
	r.waiters[kind] = keep
	r.mu.Unlock()
	for _, w := range wake {
		close(w.ch)
	}
}

// await returns a channel closed at the next event of a kind (by one
// client, when by is set) that comes after after is closed (if not nil).
func (r *run) await(kind, by string, after <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	r.mu.Lock()
	r.waiters[kind] = append(r.waiters[kind], waiter{by, ch, after})
	r.mu.Unlock()
	return ch
}
