package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TempPrefix starts the name of every temporary directory lockfault makes,
// so `simulate clean` can find what a killed harness left behind.
const TempPrefix = "lockfault-"

// Process runs nodes as local processes on loopback ports, each in its own
// directory under one run directory.
type Process struct {
	dir   string
	mu    sync.Mutex
	nodes []*procNode
}

// NewProcess makes a process backend. Its files live in a fresh temp dir
// removed by Close.
func NewProcess(runID string) (*Process, error) {
	dir, err := newRunDir(runID)
	if err != nil {
		return nil, err
	}
	return &Process{dir: dir}, nil
}

// ownerFile, in every run directory, holds the harness's pid.
const ownerFile = "owner.pid"

// newRunDir makes a run's temp directory and records its owner.
func newRunDir(runID string) (string, error) {
	dir, err := os.MkdirTemp("", TempPrefix+runID+"-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// ownerAlive reports whether pid (text) names a live process other than
// this one. An empty or unreadable owner is not alive.
func ownerAlive(pid string) bool {
	n, err := strconv.Atoi(strings.TrimSpace(pid))
	if err != nil || n <= 0 || n == os.Getpid() {
		return false
	}
	err = syscall.Kill(n, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (p *Process) Name() string      { return "process" }
func (p *Process) ProxyHost() string { return "127.0.0.1" }

// Start launches a node on a free loopback port.
func (p *Process) Start(ctx context.Context, spec NodeSpec) (Node, error) {
	dir := filepath.Join(p.dir, spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	n := &procNode{spec: spec, dir: dir, port: port}
	if spec.Kind == KindEtcd {
		peer, err := FreePort("127.0.0.1")
		if err != nil {
			return nil, err
		}
		n.peerPort = peer
	}
	if spec.Config != "" {
		if err := os.WriteFile(filepath.Join(dir, "node.conf"), []byte(spec.Config), 0o644); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	p.nodes = append(p.nodes, n)
	p.mu.Unlock()
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// Close kills every node and removes the run directory.
func (p *Process) Close(ctx context.Context) error {
	p.mu.Lock()
	nodes := p.nodes
	p.nodes = nil
	p.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if err := n.Kill(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(p.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

type procNode struct {
	spec     NodeSpec
	dir      string
	port     int
	peerPort int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (n *procNode) Spec() NodeSpec  { return n.spec }
func (n *procNode) Addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }
func (n *procNode) Port() int       { return n.port }
func (n *procNode) DataDir() string { return n.dir }

// Command returns the binary and arguments for a node whose files are in
// dir and which listens on host:port (and peerPort for etcd). Both backends
// use it.
func Command(spec NodeSpec, dir, host string, port, peerPort int) (string, []string) {
	switch spec.Kind {
	case KindSentinel:
		args := []string{filepath.Join(dir, "node.conf"), "--port", strconv.Itoa(port), "--dir", dir}
		if host != "" {
			args = append(args, "--bind", host)
		}
		return "redis-sentinel", append(args, spec.Args...)
	case KindEtcd:
		u := func(p int) string { return "http://" + net.JoinHostPort(host, strconv.Itoa(p)) }
		args := []string{
			"--name", spec.Name, "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", u(port), "--advertise-client-urls", u(port),
			"--listen-peer-urls", u(peerPort), "--initial-advertise-peer-urls", u(peerPort),
			"--initial-cluster", spec.Name + "=" + u(peerPort),
		}
		return "etcd", append(args, spec.Args...)
	default:
		args := []string{"--port", strconv.Itoa(port), "--dir", dir, "--save", "", "--appendonly", "no",
			"--protected-mode", "no", "--daemonize", "no", "--logfile", "", "--loglevel", "warning",
			"--repl-diskless-sync-delay", "0"}
		if host != "" {
			args = append(args, "--bind", host)
		}
		return "redis-server", append(args, spec.Args...)
	}
}

func (n *procNode) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %s is already running", n.spec.Name)
	}
	// FreePort closes its probe before the server binds: another run may
	// take the port in between. Verify the listener is ours; else move.
	for attempt := 0; ; attempt++ {
		err := n.startOnce(ctx)
		if err == nil || attempt == 3 || !errors.Is(err, errPortTaken) {
			return err
		}
		port, perr := FreePort("127.0.0.1")
		if perr != nil {
			return err
		}
		n.port = port
	}
}

// errPortTaken: the node's port was bound by another process.
var errPortTaken = errors.New("port taken by another process")

func (n *procNode) startOnce(ctx context.Context) error {
	bin, args := Command(n.spec, n.dir, "127.0.0.1", n.port, n.peerPort)
	cmd := exec.Command(bin, args...)
	cmd.Dir = n.dir
	logf, err := os.OpenFile(filepath.Join(n.dir, "node.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = os.Environ()
	if n.spec.ClockShim {
		shim, err := ClockShimPath()
		if err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+shim, "LOCKFAULT_CLOCK_FILE="+filepath.Join(n.dir, "clock-offset"))
	}
	// Die with the harness, even if it is SIGKILLed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.spec.Name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done
	err = waitListening(ctx, n.Addr(), done, 10*time.Second)
	if err == nil && n.spec.Kind != KindEtcd {
		err = checkRedisPid(ctx, n.Addr(), cmd.Process.Pid)
	}
	if err != nil {
		cmd.Process.Kill()
		<-done
		n.cmd = nil
		log, _ := os.ReadFile(filepath.Join(n.dir, "node.log"))
		if strings.Contains(string(log), "Address already in use") {
			err = fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return fmt.Errorf("node %s did not come up: %w\n%s", n.spec.Name, err, tail(log, 2000))
	}
	return nil
}

// checkRedisPid asks the server on addr for its process id and fails with
// errPortTaken if it is not want.
func checkRedisPid(ctx context.Context, addr string, want int) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 0, 8192)
	tmp := make([]byte, 4096)
	for !strings.Contains(string(buf), "process_id:") || !strings.Contains(string(buf[strings.Index(string(buf), "process_id:"):]), "\n") {
		k, err := c.Read(tmp)
		if err != nil {
			return fmt.Errorf("INFO server: %w", err)
		}
		buf = append(buf, tmp[:k]...)
	}
	s := string(buf)
	line := s[strings.Index(s, "process_id:")+len("process_id:"):]
	line = strings.TrimSpace(line[:strings.Index(line, "\n")])
	if line != strconv.Itoa(want) {
		return fmt.Errorf("%w: %s answers as pid %s, not %d", errPortTaken, addr, line, want)
	}
	return nil
}

func (n *procNode) Kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil
	}
	n.cmd.Process.Signal(syscall.SIGKILL)
	// A stopped process dies on SIGKILL too; wait for it.
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("node %s did not die", n.spec.Name)
	}
	n.cmd = nil
	return nil
}

func (n *procNode) Signal(ctx context.Context, sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("node %s is not running", n.spec.Name)
	}
	return n.cmd.Process.Signal(sig)
}

func (n *procNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// FreePort asks the kernel for an unused TCP port on host.
func FreePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening polls until addr accepts connections, the process exits or
// the timeout passes.
func waitListening(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %v: %v", addr, timeout, err)
		}
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// CleanTemp removes lockfault's temp directories whose harness is gone,
// after killing any process still running from them; runs in progress are
// spared. Used by `simulate clean`.
func CleanTemp() (int, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), TempPrefix+"*"))
	if err != nil {
		return 0, err
	}
	var errs []error
	removed := 0
	for _, d := range dirs {
		if owner, err := os.ReadFile(filepath.Join(d, ownerFile)); err == nil && ownerAlive(string(owner)) {
			continue // a run in progress
		}
		removed++
		killUnder(d)
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// killUnder SIGKILLs processes whose working directory is inside dir.
func killUnder(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		cwd, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(cwd, dir) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
