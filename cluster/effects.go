package cluster

import (
	"bytes"
	"context"
	"fmt"
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
	m, err := n.ConnsOf([]string{name})
	if err != nil {
		return 0, err
	}
	return m[name], nil
}

// ConnsOf counts the connections open on each named proxy as Conns does,
// with one sock_diag dump of the namespace's established TCP sockets (half
// a millisecond), or, where netlink is refused, one read of its socket
// tables for all of them (/proc/self/net/tcp lists every socket of the
// namespace, TIME_WAIT included: thousands on a busy machine, tens of
// milliseconds a read). A fault's check reads them right before the fault
// is applied.
func (n *Net) ConnsOf(names []string) (map[string]int, error) {
	ports, err := n.listenPorts(names)
	if err != nil {
		return nil, err
	}
	counts, read := map[uint16]int{}, false
	if err := diagEstablished(ports, counts); err == nil {
		read = true
	} else {
		clear(counts)
	}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		if read {
			break // sock_diag answered: the tables are not read
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		read = true
		establishedOn(string(b), ports, counts)
	}
	if !read {
		return nil, fmt.Errorf("cannot read /proc/self/net/tcp")
	}
	out := make(map[string]int, len(names))
	for p, ns := range ports {
		for _, name := range ns {
			out[name] = counts[p]
		}
	}
	return out, nil
}

// establishedOn adds to counts, for each port of ports, the lines of a
// /proc/net/tcp table in state ESTABLISHED (01) whose local port it is.
func establishedOn(table string, ports map[uint16][]string, counts map[uint16]int) {
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "01" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil {
			continue
		}
		if _, ok := ports[uint16(p)]; ok {
			counts[uint16(p)]++
		}
	}
}
