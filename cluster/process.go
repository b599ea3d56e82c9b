package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	dir, err := NewRunDir(runID)
	if err != nil {
		return nil, err
	}
	return &Process{dir: dir}, nil
}

// ownerFile, in every run directory, names the run and the harness's pid:
// "lockfault run=<run-id> pid=<pid>\n". `simulate clean` removes only
// directories whose name and owner file both have this form and agree.
const ownerFile = "owner.pid"

// pidFile, in a node's directory, holds the pid of its server process
// (process backend): `clean` kills only recorded pids.
const pidFile = "node.pid"

var (
	runDirRE = regexp.MustCompile(`^` + regexp.QuoteMeta(TempPrefix) + `([A-Za-z0-9_.-]+)-[0-9]+$`)
	ownerRE  = regexp.MustCompile(`^lockfault run=([A-Za-z0-9_.-]+) pid=([0-9]+)\n$`)
)

// NewRunDir makes a run's temp directory, lockfault-<run-id>-<random>, and
// records its owner.
func NewRunDir(runID string) (string, error) {
	runID = SafeName(runID)
	dir, err := os.MkdirTemp("", TempPrefix+runID+"-")
	if err != nil {
		return "", err
	}
	owner := fmt.Sprintf("lockfault run=%s pid=%d\n", runID, os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// runDirOwner returns the harness pid of a lockfault run directory, and
// false for anything that is not one: a name or owner file not of
// lockfault's form, or the two naming different runs.
func runDirOwner(dir string) (int, bool) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return 0, false
	}
	m := runDirRE.FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		return 0, false
	}
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, false
	}
	o := ownerRE.FindStringSubmatch(string(data))
	if o == nil || o[1] != m[1] {
		return 0, false
	}
	pid, err := strconv.Atoi(o[2])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// OwnerAlive reports whether pid (text) names a live process other than
// this one. An empty or unreadable owner is not alive.
func OwnerAlive(pid string) bool {
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
	n := &procNode{spec: spec, dir: dir}
	if err := n.pickPorts(); err != nil {
		return nil, err
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

// BusAddr is where a cluster node's bus listens (ClusterBus nodes only).
func (n *procNode) BusAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.peerPort)) }

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
		var args []string
		if spec.Config != "" {
			// A cluster node's own config file: the harness writes its
			// announced addresses there (CONFIG REWRITE), so that a restart
			// announces them from its first gossip on.
			args = append(args, filepath.Join(dir, "node.conf"))
		}
		args = append(args, "--port", strconv.Itoa(port), "--dir", dir, "--save", "", "--appendonly", "no",
			"--protected-mode", "no", "--daemonize", "no", "--logfile", "", "--loglevel", "warning",
			"--repl-diskless-sync-delay", "0")
		if host != "" {
			args = append(args, "--bind", host)
		}
		if spec.ClusterBus {
			args = append(args, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(peerPort),
				"--cluster-config-file", "nodes.conf")
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
		if n.pickPorts() != nil {
			return err
		}
	}
}

// pickPorts gives the node free loopback ports: its client port and, for
// etcd, its peer port, for a cluster node its bus port (both move when
// either was taken: etcd's log names the one it could not bind by number
// only).
func (n *procNode) pickPorts() error {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return err
	}
	peer := 0
	if n.spec.Kind == KindEtcd || n.spec.ClusterBus {
		if peer, err = FreePort("127.0.0.1"); err != nil {
			return err
		}
	}
	n.port, n.peerPort = port, peer
	return nil
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
	os.WriteFile(filepath.Join(n.dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	err = WaitListening(ctx, n.Addr(), done, 10*time.Second)
	switch {
	case err != nil:
	case n.spec.Kind == KindEtcd:
		err = waitOwnListener(ctx, cmd.Process.Pid, n.port, done, 10*time.Second)
	default:
		err = checkRedisPid(ctx, n.Addr(), n.spec.Password, cmd.Process.Pid)
	}
	if err != nil {
		cmd.Process.Kill()
		<-done
		n.cmd = nil
		log, _ := os.ReadFile(filepath.Join(n.dir, "node.log"))
		if portTakenLog(log) {
			err = fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return fmt.Errorf("node %s did not come up: %w\n%s", n.spec.Name, err, Tail(log, 2000))
	}
	return nil
}

// waitOwnListener waits until process pid itself listens on port: what
// answered waitListening may be another process's listener (etcd has no
// INFO to ask its pid; it exits when its bind fails, and its log says why).
func waitOwnListener(ctx context.Context, pid, port int, exited <-chan struct{}, timeout time.Duration) error {
	return PollReady(ctx, exited, timeout, 10*time.Millisecond, func() error {
		ok, err := ownsListener(pid, port)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: port %d answers, but not from pid %d", errPortTaken, port, pid)
		}
		return nil
	})
}

// portTakenLog: the node's log says its bind failed because the address
// was in use (Redis: "Address already in use"; etcd, Go's "bind: address
// already in use").
func portTakenLog(log []byte) bool {
	return strings.Contains(strings.ToLower(string(log)), "address already in use")
}

// checkRedisPid asks the server on addr for its process id and fails with
// errPortTaken if it is not want.
func checkRedisPid(ctx context.Context, addr, password string, want int) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		// The port was listening a moment ago (waitListening) and now
		// refuses or resets: another process's listener came and went
		// there (CI: "connect: connection reset by peer" 0.08 s into a
		// start). Not our node: move to another port.
		return fmt.Errorf("%w: %s listened, then: %v", errPortTaken, addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	req := "INFO server\r\n"
	if password != "" {
		// Inline commands split on spaces; the password has none (the
		// scenario loader refuses white space and quotes in it).
		req = "AUTH " + password + "\r\n" + req
	}
	// A write or read that fails on a connection the port accepted is, as
	// the dial above, another process's listener going away (rates
	// campaign, 12 runs at once: "INFO server: read: connection reset by
	// peer" as redsync's n2 started): not our node, move.
	if _, err := c.Write([]byte(req)); err != nil {
		return fmt.Errorf("%w: %s accepted, then: %v", errPortTaken, addr, err)
	}
	buf := make([]byte, 0, 8192)
	tmp := make([]byte, 4096)
	for !strings.Contains(string(buf), "process_id:") || !strings.Contains(string(buf[strings.Index(string(buf), "process_id:"):]), "\n") {
		k, err := c.Read(tmp)
		if err != nil {
			return fmt.Errorf("%w: %s accepted, then INFO server: %v", errPortTaken, addr, err)
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

// WaitListening polls until addr accepts connections, the process exits or
// the timeout passes.
func WaitListening(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	return PollReady(ctx, exited, timeout, 10*time.Millisecond, func() error {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return fmt.Errorf("%s not listening: %w", addr, err)
		}
		c.Close()
		return nil
	})
}

// PollReady calls ready every interval until it returns nil, the process
// exits or the timeout passes (then it returns ready's last error).
func PollReady(ctx context.Context, exited <-chan struct{}, timeout, interval time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
	}
}

func Tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// CleanTemp removes the run directories of lockfault harnesses that are
// gone, after killing the node processes they recorded; runs in progress
// are spared, and so is anything that is not a lockfault run directory (see
// runDirOwner): an unrelated "lockfault-..." file or folder stays. Used by
// `simulate clean`.
func CleanTemp() (int, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), TempPrefix+"*"))
	if err != nil {
		return 0, err
	}
	var errs []error
	removed := 0
	for _, d := range dirs {
		pid, ok := runDirOwner(d)
		if !ok || OwnerAlive(strconv.Itoa(pid)) {
			continue // not ours, or a run in progress
		}
		killRecorded(d)
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// killRecorded SIGKILLs the node processes whose pids a run directory
// recorded (<node>/node.pid), if they still run from that directory (a
// recycled pid belongs to someone else and is left alone).
func killRecorded(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", pidFile))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 1 {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || (cwd != filepath.Dir(f) && !strings.HasPrefix(cwd, dir+string(filepath.Separator))) {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// SafeName keeps the characters Docker allows in container names (and a
// file name may hold): a run id made safe for both.
func SafeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}
