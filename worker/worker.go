package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/register"
)

// IsWorker reports whether this process was started as a worker.
func IsWorker() bool { return os.Getenv(EnvRole) == "worker" }

// Main runs a worker on stdin/stdout and exits the process.
func Main() {
	w := New(os.Stdout)
	err := w.Serve(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Worker executes commands. Operations (acquire, cs, release, extend) run one
// at a time in order; control commands (failpoint, clock, endpoints) take
// effect at once, even while an operation blocks.
type Worker struct {
	outMu sync.Mutex
	out   *json.Encoder
	// announced: the leases whose grant has been written (under outMu); a
	// renewal of a lease the harness has not yet been told of waits in
	// pendingRenew and is written right after the grant (a lock may renew
	// between its Acquire's return and the grant's reply).
	announced, pendingRenew map[string]bool

	client   string
	lockName string
	options  map[string]string
	res      *register.Client
	clock    *skewClock

	mu     sync.Mutex
	lock   lockimpl.Lock
	leases map[string]*lockimpl.Lease
	// valid: the end of each lease's validity as last reported (acquire,
	// extend, renewal), on the monotonic timeline; 0 for none.
	valid  map[string]int64
	nLease int
	fps    map[string]*failpoint
	// cut, while a critical section waits out its hold, ends that wait
	// early (the `cut` command); nil otherwise.
	cut chan struct{}

	// The order rules: init once and first, op ids unique.
	inited    bool
	initErr   error
	seenOps   map[int64]bool
	supported map[string]bool // failpoint names this lock and the worker hit

	ops  chan Command
	done chan struct{}

	// Test hooks (the fuzz target): build the lock and run operations
	// without servers, sleeps or signals.
	testNewLock func(string, lockimpl.Config) (lockimpl.Lock, error)
	testDo      func(Command) Message
}

type failpoint struct {
	action string
	count  int
	ms     int64
	hits   int
}

// New returns a worker writing messages to out.
func New(out io.Writer) *Worker {
	return &Worker{
		out:       json.NewEncoder(out),
		clock:     &skewClock{},
		leases:    map[string]*lockimpl.Lease{},
		valid:     map[string]int64{},
		announced: map[string]bool{}, pendingRenew: map[string]bool{},
		fps:     map[string]*failpoint{},
		seenOps: map[int64]bool{},
		ops:     make(chan Command, 64),
		done:    make(chan struct{}),
	}
}

func (w *Worker) send(m Message) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	_ = w.out.Encode(m)
	if m.Type != "reply" || m.Status != StatusOK || m.Lease == "" || w.announced[m.Lease] {
		return
	}
	w.announced[m.Lease] = true
	if w.pendingRenew[m.Lease] {
		delete(w.pendingRenew, m.Lease)
		w.mu.Lock()
		l := w.leases[m.Lease]
		w.mu.Unlock()
		if l != nil {
			_ = w.out.Encode(w.renewMessage(m.Lease, l))
		}
	}
}

// Serve reads commands until shutdown or end of input.
func (w *Worker) Serve(in io.Reader) error {
	go w.runOps()
	lr := NewLineReader(in)
	defer func() {
		close(w.ops)
		<-w.done
		w.mu.Lock()
		if w.lock != nil {
			w.lock.Close()
		}
		w.mu.Unlock()
	}()
	for {
		b, err := lr.Next()
		line := lr.Line
		if errors.Is(err, ErrLineTooLong) {
			w.lineError(line, Command{}, 0, malformed("%v", ErrLineTooLong))
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		c, lerr := DecodeCommand(b)
		// An operation with a valid, new op id owns it from here on: if
		// the line is refused, the error ends that op.
		fresh := w.freshOp(c)
		if lerr != nil {
			w.lineError(line, c, fresh, lerr)
			continue
		}
		if isOperation(c.Cmd) && fresh == 0 {
			w.lineError(line, c, 0, malformed("field op: op id %d was used before (op ids are unique)", c.Op))
			continue
		}
		if err := w.control(c); err != nil {
			if errors.Is(err, errShutdown) {
				return nil
			}
			var le *LineError
			if !errors.As(err, &le) {
				le = &LineError{Msg: err.Error()}
			}
			w.lineError(line, c, fresh, le)
		}
	}
}

// freshOp claims an operation's op id: the id if it is in range and was
// never used, else 0.
func (w *Worker) freshOp(c Command) int64 {
	if !isOperation(c.Cmd) || c.Op < 1 || c.Op > MaxOp || !w.claimOp(c.Op) {
		return 0
	}
	if c.Cmd == "round" && (!w.claimOp(c.OpCS) || !w.claimOp(c.OpRelease)) {
		return 0
	}
	return c.Op
}

// lineError answers a command that was refused. An operation whose op id is
// valid and new (op) is ended by it (the harness records a fail); a refused
// failpoint carries its name and action.
func (w *Worker) lineError(line int, c Command, op int64, e *LineError) {
	m := Message{Type: "error", Line: line, Op: op, Code: e.Code, Error: fmt.Sprintf("stdin:%d: %s", line, e.Msg)}
	if c.Cmd == "failpoint" && e.Code == CodeNotSupported {
		m.Name, m.Action = c.Name, c.Action
	}
	w.send(m)
}

// claimOp records an op id as used; false if it was used before.
func (w *Worker) claimOp(op int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seenOps[op] {
		return false
	}
	w.seenOps[op] = true
	return true
}

var errShutdown = errors.New("shutdown")

// control applies a decoded command: the order rules (init exactly once
// and first, unique op ids), then the command.
func (w *Worker) control(c Command) error {
	w.mu.Lock()
	inited, initErr, built := w.inited, w.initErr, w.lock != nil
	w.mu.Unlock()
	switch {
	case c.Cmd == "shutdown":
		return errShutdown
	case c.Cmd == "init" && inited:
		return malformed("init: the worker was already initialised (init comes exactly once)")
	case c.Cmd != "init" && !inited:
		return malformed("%s before init (init comes exactly once and first)", c.Cmd)
	case c.Cmd != "init" && initErr != nil:
		return malformed("%s after a failed init (%v): restart the worker", c.Cmd, initErr)
	}
	switch c.Cmd {
	case "init":
		err := w.init(c)
		w.mu.Lock()
		w.inited, w.initErr = true, err
		w.mu.Unlock()
		return err
	case "acquire", "cs", "release", "extend", "round":
		if !built {
			return malformed("%s before the lock has endpoints (send endpoints first)", c.Cmd)
		}
		w.ops <- c
	case "failpoint":
		if !w.supported[c.Name] {
			return notSupported("failpoint %q: lock %s cannot hit it (allowed: %s)", c.Name, w.lockName, strings.Join(w.failpointNames(), ", "))
		}
		switch c.Action {
		case "off":
			w.mu.Lock()
			delete(w.fps, c.Name)
			w.mu.Unlock()
		case "crash", "sleep", "stop":
			n := c.Count
			if n <= 0 {
				n = 1
			}
			w.mu.Lock()
			w.fps[c.Name] = &failpoint{action: c.Action, count: n, ms: c.Ms}
			w.mu.Unlock()
		}
	case "cut":
		// End the hold of the critical section now running, if any: it
		// writes at once. A cut with no hold under way does nothing.
		w.mu.Lock()
		if w.cut != nil {
			close(w.cut)
			w.cut = nil
		}
		w.mu.Unlock()
	case "clock":
		// Set, then say what the lock's clock now reads: the harness
		// checks it against its own clock (the step's evidence).
		w.clock.set(time.Duration(c.OffsetMs) * time.Millisecond)
		w.send(Message{Type: TypeClock, OffsetMs: c.OffsetMs, WallMs: w.clock.reads().UnixMilli()})
	case "endpoints":
		if w.res == nil {
			return malformed("endpoints: init carried no resource address, so the lock cannot run critical sections")
		}
		return w.reconnect(c.Endpoints)
	}
	return nil
}

// WorkerFailpoints are the failpoints the worker itself hits, whatever the
// lock: in the critical section, and just before an acquire (a re-entry
// too) and a release.
var WorkerFailpoints = []string{"cs-after-read", "cs-before-write", "before-acquire", "before-release"}

func (w *Worker) failpointNames() []string {
	var out []string
	for n := range w.supported {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// init checks the lock and its options and answers ready with what the lock
// is. With endpoints it builds the lock client first; without, the lock is
// built by a later endpoints command (the harness learns what the lock
// needs before it has a cluster).
func (w *Worker) init(c Command) error {
	if c.Lock == "" {
		return malformed("field lock: the built-in worker needs a lock name (known: %s)", strings.Join(lockimpl.Names(), ", "))
	}
	info, ok := lockimpl.Lookup(c.Lock)
	if !ok {
		return notSupported("field lock: unknown lock %q (known: %s)", c.Lock, strings.Join(lockimpl.Names(), ", "))
	}
	for k := range c.Options {
		if !slices.Contains(info.Options, k) {
			return notSupported("field options: lock %s has no option %q (allowed: %s)", c.Lock, k, strings.Join(info.Options, ", "))
		}
	}
	w.client, w.lockName, w.options = c.Client, c.Lock, c.Options
	w.supported = map[string]bool{}
	for _, n := range append(append([]string{}, info.Failpoints...), WorkerFailpoints...) {
		w.supported[n] = true
	}
	if c.Resource != "" {
		w.res = register.Dial(c.Resource)
	}
	if hasEndpoints(c.Endpoints) {
		if c.Resource == "" {
			return malformed("field resource: init with endpoints needs the resource address")
		}
		if err := w.reconnect(c.Endpoints); err != nil {
			return err
		}
	}
	w.send(Message{Type: "ready", Pid: os.Getpid(), Lock: info.Name, Needs: info.Needs, Caps: info.Caps, Failpoints: w.failpointNames(), Options: info.Options, Version: info.Version})
	return nil
}

// hasEndpoints reports whether any server address is given.
func hasEndpoints(ep lockimpl.Endpoints) bool {
	return ep.Primary != "" || len(ep.Sentinels) > 0 || len(ep.Masters) > 0 || len(ep.Etcd) > 0 || len(ep.Cluster) > 0
}

// reconnect builds a fresh lock client against new endpoints (a failover by
// hand re-points clients this way). Leases survive: they are plain values.
func (w *Worker) reconnect(ep lockimpl.Endpoints) error {
	newLock := lockimpl.New
	if w.testNewLock != nil {
		newLock = w.testNewLock
	}
	l, err := newLock(w.lockName, lockimpl.Config{
		ClientID:  w.client,
		Endpoints: ep,
		Options:   w.options,
		Clock:     w.clock,
		Failpoint: w.hit,
		OnRenew:   w.renewed,
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	old := w.lock
	w.lock = l
	w.mu.Unlock()
	if old != nil {
		go old.Close()
	}
	return nil
}

// hit is called by lock implementations and by the critical section at
// named points.
func (w *Worker) hit(name string) {
	w.mu.Lock()
	fp := w.fps[name]
	trigger := false
	if fp != nil {
		fp.hits++
		if fp.hits == fp.count {
			trigger = true
			delete(w.fps, name)
		}
	}
	w.mu.Unlock()
	if !trigger {
		return
	}
	// Say so first: a crash leaves no other trace of which failpoint fired.
	w.send(Message{Type: TypeFired, Name: name, Action: fp.action})
	switch fp.action {
	case "crash":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "sleep":
		time.Sleep(time.Duration(fp.ms) * time.Millisecond)
	case "stop":
		// Tell the harness, then stop the whole process: the harness
		// sends SIGCONT after fp.ms, exactly like a stop-the-world pause.
		w.send(Message{Type: "stopping", Name: name, Ms: fp.ms})
		// kill(getpid) would be process-directed: the kernel may let
		// another thread take the stop while this goroutine runs on into
		// the next command (it was seen to set the release's write
		// deadline, stop, and fail with an i/o timeout on resume). Sent
		// to this very thread, the stop takes effect before tgkill
		// returns to user space, so nothing after the failpoint runs
		// until SIGCONT.
		runtime.LockOSThread()
		syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
		runtime.UnlockOSThread()
	}
}

func (w *Worker) renewed(l *lockimpl.Lease) {
	id := w.leaseID(l)
	if id == "" {
		return // inside Acquire: the grant's reply carries this validity
	}
	w.outMu.Lock()
	if !w.announced[id] {
		w.pendingRenew[id] = true // written after the grant
		w.outMu.Unlock()
		return
	}
	w.outMu.Unlock()
	w.send(w.renewMessage(id, l))
}

// renewMessage records a lease's renewed validity and says it.
func (w *Worker) renewMessage(id string, l *lockimpl.Lease) Message {
	until := w.mono(l)
	w.setValid(id, until)
	return Message{Type: "renew", Lease: id, ValidityMs: l.Validity.Milliseconds(), ValidUntil: until}
}

// setValid records the end of a lease's validity as the lock reported it.
func (w *Worker) setValid(id string, until int64) {
	if id == "" {
		return
	}
	w.mu.Lock()
	w.valid[id] = until
	w.mu.Unlock()
}

func (w *Worker) leaseID(l *lockimpl.Lease) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, x := range w.leases {
		if x == l {
			return id
		}
	}
	return ""
}

// mono converts a lease's ValidUntil to the shared monotonic timeline: one
// with Go's monotonic reading (from time.Now) on the monotonic clock, one
// without (a wall time, from Config.Now) on the client's wall clock as the
// clock-client fault has moved it.
func (w *Worker) mono(l *lockimpl.Lease) int64 {
	if l.ValidUntil.IsZero() {
		return 0
	}
	if l.ValidUntil != l.ValidUntil.Round(0) { // Round(0) strips only the monotonic reading
		return history.Now() + int64(time.Until(l.ValidUntil))
	}
	return history.Now() + int64(l.ValidUntil.Sub(w.clock.now()))
}

func (w *Worker) runOps() {
	defer close(w.done)
	for c := range w.ops {
		if w.testDo != nil {
			w.send(w.testDo(c))
			continue
		}
		if c.Cmd == "round" {
			w.round(c)
			continue
		}
		w.send(w.do(c))
	}
}

func (w *Worker) do(c Command) Message {
	w.mu.Lock()
	lk := w.lock
	w.mu.Unlock()
	ctx := context.Background()
	m := Message{Type: "reply", Op: c.Op}
	switch c.Cmd {
	case "acquire":
		if c.Key == "" || c.TTLMs <= 0 {
			return fail(m, "acquire needs key and ttl_ms > 0")
		}
		w.hit("before-acquire")
		l, err := lk.Acquire(ctx, c.Key, lockimpl.AcquireOptions{
			TTL:  time.Duration(c.TTLMs) * time.Millisecond,
			Wait: time.Duration(c.WaitMs) * time.Millisecond,
		})
		if err != nil {
			return outcome(m, err, lockimpl.ErrNotAcquired)
		}
		w.mu.Lock()
		w.nLease++
		id := c.Lease // the harness names leases so they stay unique across worker restarts
		if id == "" {
			id = fmt.Sprintf("%s-%d", w.client, w.nLease)
		}
		w.leases[id] = l
		w.mu.Unlock()
		m.Status, m.Lease, m.Token, m.Fence = StatusOK, id, l.Token, l.Fence
		m.ValidityMs, m.ValidUntil = l.Validity.Milliseconds(), w.mono(l)
		w.setValid(id, m.ValidUntil)
		return m
	case "cs":
		l := w.lookup(c.Lease)
		if l == nil {
			return fail(m, "unknown lease "+c.Lease)
		}
		return w.criticalSection(m, c, l)
	case "release":
		l := w.lookup(c.Lease)
		if l == nil {
			return fail(m, "unknown lease "+c.Lease)
		}
		w.hit("before-release")
		// The lease stays known after its release: a client may release
		// or extend an old lease again (the lock must refuse it).
		err := lk.Release(ctx, l)
		if err != nil {
			return outcome(m, err, lockimpl.ErrNotHeld)
		}
		m.Status = StatusOK
		return m
	case "extend":
		l := w.lookup(c.Lease)
		if l == nil {
			return fail(m, "unknown lease "+c.Lease)
		}
		ex, ok := lk.(lockimpl.Extender)
		if !ok {
			m.Code = CodeNotSupported
			return fail(m, "lock "+w.lockName+" cannot extend")
		}
		if err := ex.Extend(ctx, l, time.Duration(c.TTLMs)*time.Millisecond); err != nil {
			return outcome(m, err, lockimpl.ErrNotHeld)
		}
		m.Status, m.ValidityMs, m.ValidUntil = StatusOK, l.Validity.Milliseconds(), w.mono(l)
		w.setValid(c.Lease, m.ValidUntil)
		return m
	}
	return fail(m, "not an operation: "+c.Cmd)
}

// criticalSection reads the resource, holds for HoldMs, and writes back the
// value plus one, passing the lease's fencing token on both accesses.
func (w *Worker) criticalSection(m Message, c Command, l *lockimpl.Lease) Message {
	// A cut from here on ends the hold (one that arrives during the read
	// is not lost).
	cut := w.armCut()
	defer w.disarmCut(cut)
	// The register is the lease's key (the name the lock guards): one
	// register per key.
	v, err := w.res.ReadKey(l.Resource, w.client, c.Lease, l.Fence)
	if err != nil {
		if errors.Is(err, register.ErrRejected) {
			m.Status, m.Rejected, m.Error = StatusFail, true, err.Error()
			return m
		}
		return info(m, err)
	}
	m.Read = history.Int64(v)
	w.hit("cs-after-read")
	w.hold(time.Duration(c.HoldMs)*time.Millisecond, cut)
	w.hit("cs-before-write")
	if margin := c.WriteIfValidMs; margin > 0 {
		w.mu.Lock()
		until := w.valid[c.Lease]
		w.mu.Unlock()
		if left := time.Duration(until - history.Now()); until != 0 && left < time.Duration(margin)*time.Millisecond {
			// The holder no longer believes it holds the lock: no write.
			return fail(m, fmt.Sprintf("lease validity has %v left, less than write_if_valid %v: the write was given up", left.Round(time.Millisecond), time.Duration(margin)*time.Millisecond))
		}
	}
	if err := w.res.WriteKey(l.Resource, w.client, c.Lease, l.Fence, v+1); err != nil {
		if errors.Is(err, register.ErrRejected) {
			m.Status, m.Rejected, m.Error = StatusFail, true, err.Error()
			return m
		}
		return info(m, err)
	}
	m.Status, m.Wrote = StatusOK, history.Int64(v+1)
	return m
}

// armCut makes a `cut` command end the hold of the section now starting.
func (w *Worker) armCut() chan struct{} {
	cut := make(chan struct{})
	w.mu.Lock()
	w.cut = cut
	w.mu.Unlock()
	return cut
}

func (w *Worker) disarmCut(cut chan struct{}) {
	w.mu.Lock()
	if w.cut == cut {
		w.cut = nil
	}
	w.mu.Unlock()
}

// hold waits d, or until cut is closed (a `cut` command).
func (w *Worker) hold(d time.Duration, cut chan struct{}) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-cut:
	}
}

func (w *Worker) lookup(id string) *lockimpl.Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leases[id]
}

func fail(m Message, msg string) Message {
	m.Status, m.Error = StatusFail, msg
	return m
}

func info(m Message, err error) Message {
	m.Status, m.Error = StatusInfo, err.Error()
	return m
}

// outcome maps an error: the definite one is a fail, anything else info.
func outcome(m Message, err, definite error) Message {
	if errors.Is(err, definite) {
		return fail(m, err.Error())
	}
	return info(m, err)
}

// skewClock is the client's wall clock (Config.Clock): real time plus an
// offset the harness sets (clock-client). It is a wall-clock reading
// without Go's monotonic reading (Round(0)), as a clock read from another
// language or from the system would be: a lock that measures elapsed time
// or validity with it sees the step, so a lock whose validity depends on
// wall time is exposed. In a binary built with the clock overlay
// (ClockInProcess) the offset is in time.Now itself, for every caller in
// the process; without it, only Config.Now carries it.
type skewClock struct {
	offset atomic.Int64
	// used: the lock read Config.Now at least once.
	used atomic.Bool
}

// Now is Config.Now: what the lock reads.
func (c *skewClock) Now() time.Time {
	c.used.Store(true)
	return c.now()
}

// now reads the clock for the worker's own use.
func (c *skewClock) now() time.Time {
	t := time.Now().Round(0)
	if ClockInProcess {
		return t // the offset is in time.Now
	}
	return t.Add(time.Duration(c.offset.Load()))
}

// set moves the clock: the process's time.Now with the overlay, else
// Config.Now only.
func (c *skewClock) set(d time.Duration) {
	c.offset.Store(int64(d))
	setProcessClock(d)
}

// reads is the wall time the lock reads now, as the clock reply reports
// it: the moved clock when the step reaches the lock (the overlay moved
// time.Now, or the lock reads Config.Now), else the process's unmoved
// time.Now, so the harness sees that the step had no effect.
func (c *skewClock) reads() time.Time {
	if ClockInProcess || c.used.Load() {
		return c.now()
	}
	return time.Now().Round(0)
}
