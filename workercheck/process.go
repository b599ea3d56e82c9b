package workercheck

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/procwatch"
	"github.com/lockfault/lockfault/worker"
)

// stderrTail is how much of the end of a worker's stderr a failure shows.
const stderrTail = 1024

// rline is one line the worker wrote: its number on stdout, its text, the
// decoded message or why it is not one, and when it was read
// (CLOCK_MONOTONIC ns).
type rline struct {
	n    int
	text []byte
	msg  worker.Message
	err  error
	at   int64
}

func (l rline) line() *Line { return &Line{Stream: "stdout", N: l.n, Text: shown(l.text)} }

// proc is a worker process in its own process group, its pipes and the
// reader of its stdout.
type proc struct {
	cmd   *exec.Cmd
	pid   int // of the process started; its process group id too
	in    *os.File
	out   *os.File
	lines chan rline // closed at the end of stdout
	quit  chan struct{}
	dead  chan struct{} // closed once the process is reaped
	tail  *procwatch.Tail

	closeOnce sync.Once
}

// errStart is a worker that cannot be started at all (Run's error).
var errStart = errors.New("cannot start the worker")

// spawn starts argv with LOCKFAULT_ROLE=worker in a process group of its
// own; it dies with the harness (Pdeathsig) and is killed with its group.
func spawn(argv []string, stderr io.Writer) (*proc, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("%w: empty command", errStart)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &proc{in: inW, out: outR, lines: make(chan rline, 64), quit: make(chan struct{}), dead: make(chan struct{}), tail: procwatch.NewTail(stderrTail)}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), worker.EnvRole+"=worker")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdin, cmd.Stdout = inR, outW
	if stderr == nil {
		stderr = io.Discard
	}
	cmd.Stderr = io.MultiWriter(stderr, p.tail)
	// A child the worker left behind may hold stderr open: Wait must
	// still report the worker's own exit promptly.
	cmd.WaitDelay = 500 * time.Millisecond
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%w: %v", errStart, err)
	}
	p.cmd, p.pid = cmd, cmd.Process.Pid
	go p.read()
	go func() { cmd.Wait(); close(p.dead) }()
	return p, nil
}

// read decodes stdout lines with the harness's own decoder until the end
// of the stream or MaxLines.
func (p *proc) read() {
	defer close(p.lines)
	lr := worker.NewLineReader(p.out)
	for n := 1; n <= MaxLines+1; n++ {
		b, err := lr.Next()
		l := rline{n: lr.Line, at: history.Now()}
		switch {
		case errors.Is(err, worker.ErrLineTooLong):
			l.err = fmt.Errorf("a line longer than %d bytes", worker.MaxLine)
		case err != nil:
			return
		case n > MaxLines:
			l.text, l.err = b, fmt.Errorf("more than %d lines from one worker", MaxLines)
		default:
			l.text = b
			l.msg, l.err = worker.DecodeMessage(b)
		}
		select {
		case p.lines <- l:
		case <-p.quit:
			return
		}
		if n > MaxLines {
			return
		}
	}
}

// write sends one line (a newline is added), bounded by WriteTimeout.
func (p *proc) write(b []byte) error {
	p.in.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err := p.in.Write(append(b[:len(b):len(b)], '\n'))
	return err
}

// exited reports whether the process has been reaped.
func (p *proc) exited() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

// status describes how the process ended, or that it still runs.
func (p *proc) status() string {
	if !p.exited() {
		return "still running"
	}
	return p.cmd.ProcessState.String()
}

// waitExit waits at most d for the process to end.
func (p *proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.dead:
		return true
	case <-t.C:
		return false
	}
}

// signal sends sig to the worker's whole process group.
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return fmt.Errorf("the worker (pid %d) has exited (%s)", p.pid, p.status())
	}
	return syscall.Kill(-p.pid, sig)
}

// kill ends the worker's process group (children it started included),
// reaps the worker and closes the pipes. The group id is the worker's pid,
// which the kernel does not hand out again while the group has a member.
func (p *proc) kill() {
	p.closeOnce.Do(func() {
		syscall.Kill(-p.pid, syscall.SIGKILL)
		p.waitExit(KillTimeout)
		close(p.quit)
		p.in.Close()
		p.out.Close()
	})
}

// stderr returns the end of the worker's stderr.
func (p *proc) stderr() string { return strings.TrimSpace(p.tail.String()) }
