package runner

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/internal/cgroup"
	"github.com/lockfault/lockfault/internal/procwatch"
)

// process is a worker's operating-system process: its process group, its
// cgroup, the end of its stderr, its threads' states, the signals the
// nemesis sends it, and whether it is gone.
type process struct {
	name       string
	cmd        *exec.Cmd
	tail       *procwatch.Tail // the end of the worker's stderr
	cg         *cgroup.Group   // nil: the process group is all that tracks it
	dead       chan struct{}   // closed once it has exited and its lines are read
	readerDone chan struct{}
	exit       string // how it ended ("signal: segmentation fault"), set before dead closes
}

func newProcess(name string) *process {
	return &process{name: name, dead: make(chan struct{}), readerDone: make(chan struct{}), tail: procwatch.NewTail(2048)}
}

func (p *process) stderrNote() string {
	t := strings.TrimSpace(p.tail.String())
	if t == "" {
		return ""
	}
	return fmt.Sprintf("; its stderr ends: %q", t)
}

// deathNote is the history's word for a worker that died on its own: how it
// ended (an exit status or the signal that ended it, as a crash of the
// library shows) and the end of its stderr.
func (p *process) deathNote() string {
	select {
	case <-p.dead:
	default:
		return "worker process died"
	}
	if p.exit == "" {
		return "worker process died" + p.stderrNote()
	}
	return "worker process died (" + p.exit + ")" + p.stderrNote()
}

func (p *process) Name() string { return p.name }

// Proc is the worker's process as /proc shows it: state T once every
// thread is stopped; Pid 0 once it has died.
func (p *process) Proc() cluster.ProcState {
	select {
	case <-p.dead:
		return cluster.ProcState{}
	default:
	}
	pid := p.cmd.Process.Pid
	ts := procwatch.Threads(pid, false)
	if len(ts) == 0 {
		return cluster.ProcState{}
	}
	s := cluster.ProcState{Pid: pid, State: string(ts[0].State)}
	if procwatch.ThreadsStopped(pid) {
		s.State = "T"
	}
	return s
}

// gone is the error of a command or signal for a worker that has died.
func (p *process) gone() error {
	return fmt.Errorf("worker %s is dead: %w", p.name, faults.ErrClientGone)
}

// Signal delivers a signal to the worker's process group.
func (p *process) Signal(sig syscall.Signal) error {
	select {
	case <-p.dead:
		return p.gone()
	default:
	}
	// To the whole process group: a worker started through a wrapper (a
	// shell script, a language launcher) is paused or killed with
	// everything it runs.
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			// The group has no process left: the worker died (a crash
			// of the same client a moment before) and its exit is not
			// seen yet. A pause of a dead client attacks nothing.
			return fmt.Errorf("%w (%v)", p.gone(), err)
		}
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
func (p *process) waitStopped(timeout time.Duration) error {
	pid := p.cmd.Process.Pid
	start := time.Now()
	for {
		if procwatch.ThreadsStopped(pid) {
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

// killGroup sends SIGKILL to the worker's process group. The group id is
// the worker's pid, which the kernel does not hand out again while the
// group has a member.
func (p *process) killGroup() {
	if p.cmd != nil && p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}
