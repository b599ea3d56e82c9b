package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/cgroup"
	"github.com/lockfault/lockfault/worker"
)

// readerDrain bounds how long a dead worker's last lines may take to be
// dispatched before its death is acted on.
const readerDrain = 2 * time.Second

// errDead means the worker process is gone.
var errDead = errors.New("worker process died")

// DefaultWorkerTimeout bounds how long a worker may take to answer init.
const DefaultWorkerTimeout = 20 * time.Second

// proc is one worker and the harness's end of its protocol: the handshake,
// the calls waiting for their replies, the lines the worker writes, and
// the bounds on them. Its process is the embedded process.
type proc struct {
	*process
	label string // "worker c1 (COMMAND)" for error messages
	r     *run   // nil while describing a worker outside a run
	in    io.WriteCloser

	mu      sync.Mutex
	pending map[int64]pendingOp
	granted map[string]bool // leases an acquire granted this worker
	msgs    rate            // messages in the current second
	renews  rate            // renew messages in the current second
	clock   clockState      // clock commands awaiting their answers (clockcheck.go)
	// hs gets the answer to init: ready, an error message, or a protocol
	// fault (first one wins).
	hs      chan handshake
	started atomic.Bool // a ready was received: lines are dispatched from here on
	inMu    sync.Mutex
}

type handshake struct {
	m   worker.Message
	err error
}

// workerArgv is the command that starts a worker: the user's, or this
// executable (which must call worker.Main when worker.IsWorker()).
func workerArgv(command []string) ([]string, error) {
	if len(command) > 0 {
		return command, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{self}, nil
}

// workerLabel names a worker in messages: client name and command.
func workerLabel(name string, command []string) string {
	if len(command) == 0 {
		return fmt.Sprintf("worker %s (built-in)", name)
	}
	return fmt.Sprintf("worker %s (%s)", name, JoinCommand(command))
}

// spawn starts a worker process in its own process group and its reader.
func spawn(command []string, name string, stderr io.Writer, r *run) (*proc, error) {
	argv, err := workerArgv(command)
	if err != nil {
		return nil, err
	}
	p := &proc{process: newProcess(name), label: workerLabel(name, command), r: r, pending: map[int64]pendingOp{}, granted: map[string]bool{},
		hs: make(chan handshake, 1)}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), worker.EnvRole+"=worker")
	// Its own process group, as the nodes have: a worker stopped by
	// pause-client or a stop failpoint must stay stopped until the harness
	// continues it. Left in the harness's group, it would get the kernel's
	// SIGHUP+SIGCONT for an orphaned group with a stopped member (the shell
	// that started the harness exiting, e.g. `nohup simulate claims &`),
	// and terminal job control (Ctrl-C, Ctrl-Z, fg) would reach it directly.
	// The group is also what kill ends, children of a script included.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	// Descendants that leave the process group stay in the cgroup.
	p.cg = startInCgroup(cmd, name, r)
	if stderr == nil {
		stderr = io.Discard
	}
	cmd.Stderr = io.MultiWriter(stderr, p.tail)
	// A child the worker left behind may hold stderr open: Wait must still
	// report the worker's own exit promptly.
	cmd.WaitDelay = 500 * time.Millisecond
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipe rather than StdoutPipe: Wait must not close the read end
	// before the reader has every line the worker wrote before it died.
	pr, pw, err := os.Pipe()
	if err != nil {
		in.Close()
		return nil, err
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		in.Close()
		pr.Close()
		pw.Close()
		p.cg.Kill()
		return nil, fmt.Errorf("%s: cannot start: %w", p.label, err)
	}
	pw.Close()
	p.cmd, p.in = cmd, in
	watchWorker(p, pr)
	return p, nil
}

// startInCgroup makes cmd start in a cgroup of its own and returns it;
// nil (noted on the run) when there is none to make.
func startInCgroup(cmd *exec.Cmd, name string, r *run) *cgroup.Group {
	runID := "describe-" + NewRunID()
	if r != nil {
		runID = r.id
	}
	cg, err := cgroup.New(runID, name)
	if err != nil {
		if r != nil {
			r.noCgroup(err)
		}
		return nil
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cg.FD()
	return cg
}

// watchWorker reads the started worker p's lines from pr, and closes
// p.dead once it has exited and its lines are read.
func watchWorker(p *proc, pr *os.File) {
	cmd := p.cmd
	go func() {
		defer close(p.readerDone)
		defer pr.Close()
		defer func() {
			if x := recover(); x != nil {
				p.fault(0, nil, fmt.Errorf("reader panicked: %v", x))
				p.killGroup()
			}
		}()
		p.read(pr)
	}()
	go func() {
		cmd.Wait()
		if cmd.ProcessState != nil {
			p.exit = cmd.ProcessState.String()
		}
		// Every line the worker wrote before it died is dispatched before
		// its death is seen: a crash failpoint's "fired" (sent before the
		// crash) must be in the history before the "crashed" note that
		// follows from dead, or the planned crash reads as the lock's
		// process dying on its own (crash/mid-acquire against the correct
		// lock reported died under a load average of 10). The bound covers
		// a descendant that keeps the pipe open.
		select {
		case <-p.readerDone:
		case <-time.After(readerDrain):
		}
		close(p.dead)
	}()
}

func (o Options) workerTimeout() time.Duration {
	if o.WorkerTimeout > 0 {
		return o.WorkerTimeout
	}
	return DefaultWorkerTimeout
}

// handshake sends init and waits, at most timeout, for a valid ready. On
// any failure the worker's process group is killed and the error names the
// worker and, for a bad line, its stdout line number and text.
func (p *proc) handshake(ctx context.Context, init worker.Command, timeout time.Duration) (worker.Message, error) {
	fail := func(err error) (worker.Message, error) {
		p.kill()
		return worker.Message{}, err
	}
	if err := p.Send(init); err != nil {
		// The worker may already be gone: say why if it said so.
		select {
		case <-p.dead:
		case <-time.After(time.Second):
		}
		return fail(p.exitError())
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	noReady := func() error {
		return fmt.Errorf("%s: no ready within %v after init (a worker must answer init with one ready line on stdout)%s", p.label, timeout.Round(time.Millisecond), p.stderrNote())
	}
	var hs handshake
	select {
	case hs = <-p.hs:
	case <-p.dead:
		return fail(p.exitError())
	case <-t.C:
		return fail(noReady())
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(noReady()) // the caller's deadline is the time limit
		}
		return fail(fmt.Errorf("%s: %w while waiting for ready", p.label, ctx.Err()))
	}
	if hs.err != nil {
		return fail(hs.err)
	}
	if hs.m.Type == "error" {
		return fail(fmt.Errorf("%s: init refused: %s%s", p.label, hs.m.Error, codeNote(hs.m.Code)))
	}
	if err := worker.ValidateReady(hs.m); err != nil {
		return fail(fmt.Errorf("%s: %v", p.label, err))
	}
	return hs.m, nil
}

func codeNote(code string) string {
	if code == "" {
		return ""
	}
	return " (code " + code + ")"
}

// exitError explains a worker that died before ready: a protocol fault it
// wrote first, else its exit status and the end of its stderr.
func (p *proc) exitError() error {
	<-p.dead
	p.killGroup() // children holding stdout open would keep the reader waiting
	select {
	case <-p.readerDone:
	case <-time.After(2 * time.Second):
	}
	select {
	case hs := <-p.hs:
		if hs.err != nil {
			return hs.err
		}
		if hs.m.Type == "error" {
			return fmt.Errorf("%s: init refused: %s%s", p.label, hs.m.Error, codeNote(hs.m.Code))
		}
	default:
	}
	return fmt.Errorf("%s: exited before ready (%v)%s", p.label, p.cmd.ProcessState, p.stderrNote())
}

// fault is a line of the worker's stdout that breaks the protocol. Before
// ready it fails the start-up; after, it is a protocol error of the run.
func (p *proc) fault(line int, text []byte, err error) {
	msg := fmt.Sprintf("%s: stdout:%d: %v", p.label, line, err)
	if text != nil {
		msg += fmt.Sprintf(": %.200q", text)
	}
	if !p.started.Load() {
		select {
		case p.hs <- handshake{err: errors.New(msg)}:
		default:
		}
		return
	}
	if p.r != nil {
		p.r.protocolError(msg)
	}
}

// Send writes one command line.
func (p *proc) Send(c worker.Command) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	select {
	case <-p.dead:
		return p.gone()
	default:
	}
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if c.Cmd == "clock" {
		p.clockSending(c)
	}
	if _, err = p.in.Write(append(b, '\n')); err != nil {
		// A write to a worker that just died fails before its exit is
		// seen: give the exit a moment to be, so a heal knows it is gone.
		select {
		case <-p.dead:
			return p.gone()
		case <-time.After(time.Second):
		}
	}
	return err
}

// call sends an operation and waits for its reply. A worker that dies, or
// stays silent past timeout, yields errDead / a timeout error.
func (p *proc) call(ctx context.Context, c worker.Command, timeout time.Duration) (worker.Message, error) {
	ch := make(chan worker.Message, 1)
	p.mu.Lock()
	p.pending[c.Op] = pendingOp{cmd: c, ch: ch}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, c.Op)
		p.mu.Unlock()
	}()
	if err := p.Send(c); err != nil {
		return worker.Message{}, errDead
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	start := time.Now()
	slow := time.NewTicker(slowCallAfter)
	defer slow.Stop()
	for {
		select {
		case m := <-ch:
			if m.Code == worker.CodeNotSupported && p.r != nil {
				p.r.notExercised(p, c.Cmd+": "+m.Error)
			}
			return m, nil
		case <-p.dead:
			return worker.Message{}, errDead
		case <-t.C:
			return worker.Message{}, fmt.Errorf("no reply within %v", timeout)
		case <-ctx.Done():
			return worker.Message{}, ctx.Err()
		case <-slow.C:
			if p.r != nil {
				p.r.cl.slowCall(p, c, time.Since(start))
			}
		}
	}
}

// read dispatches the worker's messages. Every line must be a valid
// message (worker.DecodeMessage); a bad one is a fault naming its line.
func (p *proc) read(out io.Reader) {
	lr := worker.NewLineReader(out)
	for {
		b, err := lr.Next()
		line := lr.Line
		if errors.Is(err, worker.ErrLineTooLong) {
			p.fault(line, nil, fmt.Errorf("line longer than %d bytes", worker.MaxLine))
			continue
		}
		if err != nil {
			return
		}
		m, err := worker.DecodeMessage(b)
		if err != nil {
			p.fault(line, b, err)
			continue
		}
		if !p.started.Load() {
			switch m.Type {
			case "ready", "error":
				if m.Type == "ready" {
					// From here on lines are dispatched: anything the
					// worker writes right after ready must not race the
					// handshake (which kills a worker whose ready is bad).
					p.started.Store(true)
				}
				select {
				case p.hs <- handshake{m: m}:
				default:
					p.fault(line, b, fmt.Errorf("a second answer to init"))
				}
			default:
				p.fault(line, b, fmt.Errorf("%s before ready (the first message must answer init)", m.Type))
			}
			continue
		}
		p.dispatch(line, b, m)
	}
}

// dispatch handles a message of a started worker. Anything that breaks the
// protocol or a bound ends the run (protocolError).
func (p *proc) dispatch(line int, b []byte, m worker.Message) {
	r := p.r
	if r == nil {
		return // describing: nothing is expected after ready
	}
	if err := p.bound(m); err != nil {
		p.fault(line, nil, err)
		return
	}
	switch m.Type {
	case "reply":
		p.reply(line, b, m)
	case "ready":
		p.fault(line, b, fmt.Errorf("ready after ready"))
	case "renew":
		p.mu.Lock()
		held := p.granted[m.Lease]
		p.mu.Unlock()
		if !held {
			p.fault(line, b, fmt.Errorf("renew of lease %q, which no acquire granted this worker", m.Lease))
			return
		}
		if err := checkValidity("renew of lease "+m.Lease, m.ValidityMs, m.ValidUntil); err != nil {
			p.fault(line, b, err)
			return
		}
		r.hist.Append(history.Event{Kind: history.Renew, Process: p.name, Lease: m.Lease, Key: r.cl.keyOf(m.Lease), ValidityMs: m.ValidityMs, ValidUntil: m.ValidUntil})
		r.events.signal("renew", p.name)
	case "stopping":
		r.nem.failpointStop(p, m)
	case worker.TypeInvoke:
		p.roundInvoke(line, b, m)
	case worker.TypeFired:
		r.failpointFired(p, m)
	case worker.TypeClock:
		p.clockAnswer(line, b, m)
	case "error":
		p.refusal(line, b, m)
	}
}

// reply hands a reply to the call waiting for it; a reply to an op never
// sent, or a second one, is a protocol fault, and a late one (the harness
// gave up on the op) is noted.
func (p *proc) reply(line int, b []byte, m worker.Message) {
	r := p.r
	p.mu.Lock()
	op, ok := p.pending[m.Op]
	p.mu.Unlock()
	r.mu.Lock()
	issued := m.Op > 0 && m.Op <= r.opID
	r.mu.Unlock()
	if !ok && !issued {
		p.fault(line, b, fmt.Errorf("reply to op %d, which was never sent", m.Op))
		return
	}
	if !ok {
		// The harness gave up on this op (timeout or interrupt) and
		// recorded it as info; the late answer is only noted.
		r.hist.Append(history.Event{Kind: history.Note, Op: "late-reply", Process: p.name, OpID: m.Op, Detail: m.Status})
		return
	}
	if err := checkReply(op.cmd, m); err != nil {
		p.fault(line, b, err)
		return
	}
	if op.cmd.Cmd == "acquire" && m.Status == worker.StatusOK {
		p.mu.Lock()
		p.granted[op.cmd.Lease] = true
		p.mu.Unlock()
	}
	select {
	case op.ch <- m:
	default:
		p.fault(line, b, fmt.Errorf("a second reply to op %d", m.Op))
	}
}

// refusal handles an error message: the failed reply of a pending op, a
// step the worker cannot do (not exercised), or else a refused command,
// which ends the run.
func (p *proc) refusal(line int, b []byte, m worker.Message) {
	r := p.r
	if m.Op != 0 {
		p.mu.Lock()
		op, ok := p.pending[m.Op]
		p.mu.Unlock()
		if ok {
			select {
			case op.ch <- worker.Message{Type: "reply", Op: m.Op, Status: worker.StatusFail, Error: m.Error, Code: m.Code}:
			default:
				p.fault(line, b, fmt.Errorf("an error for op %d, which already has its reply", m.Op))
			}
			return
		}
	}
	if m.Code == worker.CodeNotSupported {
		// A failpoint the worker cannot hit, a clock it does not have:
		// the step did not happen. Disarming a failpoint it cannot hit
		// is no loss.
		switch {
		case m.Name != "" && m.Action == "off":
		case m.Name != "":
			r.notExercised(p, "failpoint "+m.Name+" "+m.Action+": "+m.Error)
		default:
			r.notExercised(p, m.Error)
		}
		return
	}
	r.protocolError(fmt.Sprintf("%s refused a command: %s%s", p.label, m.Error, codeNote(m.Code)))
}

// bound counts a message against the worker's rate bounds.
func (p *proc) bound(m worker.Message) error {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.msgs.add(now, MaxMessagesPerSecond) {
		return fmt.Errorf("more than %d messages in one second (MaxMessagesPerSecond)", MaxMessagesPerSecond)
	}
	if m.Type == "renew" && p.renews.add(now, MaxRenewalsPerSecond) {
		return fmt.Errorf("more than %d renew messages in one second (MaxRenewalsPerSecond)", MaxRenewalsPerSecond)
	}
	return nil
}

// kill ends the worker and everything in its process group and its cgroup
// for good (SIGKILL works on a stopped process too).
func (p *proc) kill() {
	p.killGroup()
	<-p.dead
	if err := p.cg.Kill(); err != nil && p.r != nil {
		p.r.note("cleanup", err.Error())
	}
}

// shutdown asks politely, then kills; whatever the worker left in its
// group is killed too.
func (p *proc) shutdown() {
	p.Send(worker.Command{Cmd: "shutdown"})
	p.in.Close()
	select {
	case <-p.dead:
	case <-time.After(3 * time.Second):
	}
	// After a clean exit this only reaches children the worker left in its
	// group (the group id cannot have been reused while they live).
	p.kill()
}
