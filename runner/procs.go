package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// errDead means the worker process is gone.
var errDead = errors.New("worker process died")

// proc is one worker process and the harness's end of its protocol.
type proc struct {
	name string
	r    *run
	cmd  *exec.Cmd
	in   io.WriteCloser

	mu      sync.Mutex
	pending map[int64]chan worker.Message
	ready   chan worker.Message
	dead    chan struct{}
	inMu    sync.Mutex
}

// startProc launches a worker and sends it init.
func (r *run) startProc(ctx context.Context, name string) (*proc, error) {
	argv := r.opt.WorkerCommand
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		argv = []string{self}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), worker.EnvRole+"=worker")
	// Its own process group, as the nodes have: a worker stopped by
	// pause-client or a stop failpoint must stay stopped until the harness
	// continues it. Left in the harness's group, it would get the kernel's
	// SIGHUP+SIGCONT for an orphaned group with a stopped member (the shell
	// that started the harness exiting, e.g. `nohup simulate claims &`),
	// and terminal job control (Ctrl-C, Ctrl-Z, fg) would reach it directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Stderr = r.workerLog
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s: %w", name, err)
	}
	p := &proc{name: name, r: r, cmd: cmd, in: in, pending: map[int64]chan worker.Message{},
		ready: make(chan worker.Message, 1), dead: make(chan struct{})}
	go func() {
		defer func() {
			if x := recover(); x != nil {
				r.protocolError(fmt.Sprintf("worker %s: reader panicked: %v", name, x))
				p.cmd.Process.Kill()
			}
		}()
		p.read(out)
	}()
	go func() { cmd.Wait(); close(p.dead) }()
	ep, err := r.endpoints(name)
	if err != nil {
		p.kill()
		return nil, err
	}
	init := worker.Command{Cmd: "init", Client: name, Lock: r.sc.Lock.Name, Options: r.sc.Lock.Options, Endpoints: ep, Resource: r.res.Addr()}
	if err := p.Send(init); err != nil {
		p.kill()
		return nil, err
	}
	select {
	case m := <-p.ready:
		if m.Type == "error" {
			p.kill()
			return nil, fmt.Errorf("worker %s: %s", name, m.Error)
		}
	case <-p.dead:
		return nil, fmt.Errorf("worker %s exited during init (see workers.log)", name)
	case <-time.After(20 * time.Second):
		p.kill()
		return nil, fmt.Errorf("worker %s did not answer init within 20s", name)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
	return p, nil
}

func (p *proc) Name() string { return p.name }

// Send writes one command line.
func (p *proc) Send(c worker.Command) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	p.inMu.Lock()
	defer p.inMu.Unlock()
	_, err = p.in.Write(append(b, '\n'))
	return err
}

// Signal delivers a signal to the worker process.
func (p *proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.dead:
		return fmt.Errorf("worker %s is dead", p.name)
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	if sig == syscall.SIGSTOP {
		return p.waitStopped(2 * time.Second)
	}
	return nil
}

// waitStopped returns once every thread of the worker is stopped. SIGSTOP is
// process-directed: the kernel hands it to one thread, and until that thread
// runs and starts the group stop the others run on. On a busy machine that
// took several ms (up to about 10), during which a worker "paused" by the
// nemesis started a whole Redlock round.
func (p *proc) waitStopped(timeout time.Duration) error {
	pid := p.cmd.Process.Pid
	start := time.Now()
	for {
		if threadsStopped(pid) {
			return nil
		}
		select {
		case <-p.dead:
			return nil
		default:
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("worker %s (pid %d) not stopped %v after SIGSTOP", p.name, pid, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// threadsStopped reports whether every thread of pid is in the stopped state.
func threadsStopped(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/stat")
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// call sends an operation and waits for its reply. A worker that dies, or
// stays silent past timeout, yields errDead / a timeout error.
func (p *proc) call(ctx context.Context, c worker.Command, timeout time.Duration) (worker.Message, error) {
	ch := make(chan worker.Message, 1)
	p.mu.Lock()
	p.pending[c.Op] = ch
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
	select {
	case m := <-ch:
		return m, nil
	case <-p.dead:
		return worker.Message{}, errDead
	case <-t.C:
		return worker.Message{}, fmt.Errorf("no reply within %v", timeout)
	case <-ctx.Done():
		return worker.Message{}, ctx.Err()
	}
}

// read dispatches the worker's messages. A malformed line is recorded with
// its line number and otherwise ignored.
func (p *proc) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		var m worker.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			p.r.protocolError(fmt.Sprintf("worker %s stdout:%d: malformed message: %v: %.200q", p.name, line, err, sc.Text()))
			continue
		}
		switch m.Type {
		case "reply":
			p.mu.Lock()
			ch := p.pending[m.Op]
			p.mu.Unlock()
			p.r.mu.Lock()
			issued := m.Op > 0 && m.Op <= p.r.opID
			p.r.mu.Unlock()
			if ch == nil && !issued {
				p.r.protocolError(fmt.Sprintf("worker %s stdout:%d: reply to op %d, which was never sent", p.name, line, m.Op))
				continue
			}
			if ch == nil {
				// The harness gave up on this op (timeout or interrupt) and
				// recorded it as info; the late answer is only noted.
				p.r.hist.Append(history.Event{Kind: history.Note, Op: "late-reply", Process: p.name, OpID: m.Op, Detail: m.Status})
				continue
			}
			ch <- m
		case worker.TypeInvoke:
			p.roundInvoke(m)
		case "ready":
			p.ready <- m
		case "renew":
			p.r.hist.Append(history.Event{Kind: history.Renew, Process: p.name, Lease: m.Lease, ValidityMs: m.ValidityMs, ValidUntil: m.ValidUntil})
		case "stopping":
			p.r.failpointStop(p, m)
		case worker.TypeFired:
			p.r.failpointFired(p, m)
		case "error":
			if m.Op != 0 {
				p.mu.Lock()
				ch := p.pending[m.Op]
				p.mu.Unlock()
				if ch != nil {
					ch <- worker.Message{Type: "reply", Op: m.Op, Status: worker.StatusFail, Error: m.Error}
					continue
				}
			}
			select {
			case p.ready <- m:
			default:
				p.r.protocolError(fmt.Sprintf("worker %s: %s", p.name, m.Error))
			}
		default:
			p.r.protocolError(fmt.Sprintf("worker %s stdout:%d: unknown message type %q (allowed: ready, reply, invoke, renew, stopping, fired, error)", p.name, line, m.Type))
		}
	}
}

// failpointFired records that an armed failpoint triggered in a worker: a
// note {op: failpoint-fired, process, detail: "<name> <action>"}. The worker
// sends it before acting, so a crash failpoint is recorded too.
func (r *run) failpointFired(p *proc, m worker.Message) {
	r.hist.Append(history.Event{Kind: history.Note, Op: "failpoint-fired", Process: p.name, Detail: m.Name + " " + m.Action, Cycle: r.currentCycle()})
}

// kill ends the process for good (SIGKILL works on a stopped process too).
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.dead
}

// shutdown asks politely, then kills.
func (p *proc) shutdown() {
	p.Send(worker.Command{Cmd: "shutdown"})
	p.in.Close()
	select {
	case <-p.dead:
	case <-time.After(3 * time.Second):
		p.kill()
	}
}
