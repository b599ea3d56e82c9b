package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// What the faults read back to prove they took effect: a node's server
// process as the OS shows it, and the connections open on a proxy.

// ProcState is a server process as /proc shows it: its pid and state
// letter (R running, S sleeping, D disk wait, T stopped, Z zombie); Pid 0
// when no process is running.
type ProcState struct {
	Pid   int
	State string
}

// String: "pid 4242, state T", or "no process".
func (s ProcState) String() string {
	if s.Pid == 0 {
		return "no process"
	}
	if s.State == "" {
		return fmt.Sprintf("pid %d", s.Pid)
	}
	return fmt.Sprintf("pid %d, state %s", s.Pid, s.State)
}

// Stopped: the process is stopped by a signal.
func (s ProcState) Stopped() bool { return s.State == "T" || s.State == "t" }

// ProcStater is implemented by nodes whose server process the harness can
// see.
type ProcStater interface {
	ProcState(ctx context.Context) (ProcState, error)
}

// The process backend's nodes show their process (the Docker backend's
// assert theirs in package cluster/docker).
var _ ProcStater = (*procNode)(nil)

// NodeProc reads a node's server process; an error when the backend cannot
// show it (a remote Docker daemon's process is not in this host's /proc).
func NodeProc(ctx context.Context, n Node) (ProcState, error) {
	if s, ok := n.(ProcStater); ok {
		return s.ProcState(ctx)
	}
	return ProcState{}, fmt.Errorf("the %T backend does not show its processes", n)
}

// ReadProcState reads /proc/<pid>/stat's state letter ("" when the process
// is gone).
func ReadProcState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

func (n *procNode) ProcState(context.Context) (ProcState, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return ProcState{}, nil
	}
	select {
	case <-n.done:
		return ProcState{}, nil
	default:
	}
	pid := n.cmd.Process.Pid
	return ProcState{Pid: pid, State: ReadProcState(pid)}, nil
}

// Conns counts the connections open on the named proxy: the TCP
// connections in state ESTABLISHED whose local end is the proxy's listen
// port, in the harness's network namespace (where its toxiproxy server
// runs). An error when the proxy is on another server (a remote daemon's
// peer proxies) or /proc cannot be read.
func (n *Net) Conns(name string) (int, error) {
	px, ok := n.Get(name)
	if !ok {
		return 0, fmt.Errorf("no proxy %s", name)
	}
	if n.peer != nil && isPeerProxy(name) {
		return 0, fmt.Errorf("proxy %s is on the backend's own toxiproxy server", name)
	}
	_, port, err := net.SplitHostPort(px.Listen)
	if err != nil {
		return 0, fmt.Errorf("proxy %s listens at %q: %w", name, px.Listen, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("proxy %s listens at %q: %w", name, px.Listen, err)
	}
	total, read := 0, false
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		read = true
		total += establishedOn(string(b), uint16(p))
	}
	if !read {
		return 0, fmt.Errorf("cannot read /proc/self/net/tcp")
	}
	return total, nil
}

// establishedOn counts the lines of a /proc/net/tcp table in state
// ESTABLISHED (01) whose local port is port.
func establishedOn(table string, port uint16) int {
	want := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if strings.HasSuffix(f[1], want) && f[3] == "01" {
			n++
		}
	}
	return n
}
