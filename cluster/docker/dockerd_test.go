package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/client"
)

// testDaemonPool is the second daemon's address pool, clear of the first's
// (172.17-31.x, 192.168.x).
const testDaemonPool = "10.213.0.0/16"

// Bounds of the second daemon's life.
const (
	dockerdStartWait = 90 * time.Second
	dockerdStopWait  = 60 * time.Second
)

// testDaemon is a second Docker daemon a test starts on this machine, with
// its own data root, exec root, bridge-less networking and containerd
// namespace, reached only over TCP on loopback: a "remote" daemon.
type testDaemon struct {
	Host string // DOCKER_HOST for it: tcp://127.0.0.1:PORT
	dir  string // holds its data root, exec root, pidfile, config and log
	cmd  *exec.Cmd
	done chan struct{}
}

// startTestDaemon starts a second dockerd for t and stops it, with its data
// root removed, in t.Cleanup (by the pid it recorded). It skips t with the
// reason when one cannot be started: not root, no dockerd binary, or a
// daemon that does not come up.
func startTestDaemon(t *testing.T) *testDaemon {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipping: starting a second dockerd needs root (euid %d)", os.Geteuid())
	}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		t.Skipf("skipping: no dockerd binary to start a second daemon with: %v", err)
	}
	// A short path: containerd's sockets live under the exec root, and a
	// unix socket's path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "lfd-")
	if err != nil {
		t.Fatal(err)
	}
	port, err := cluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	ns := "lockfault-test-" + hex.EncodeToString(suffix)
	td := &testDaemon{Host: fmt.Sprintf("tcp://127.0.0.1:%d", port), dir: dir, done: make(chan struct{})}
	// An empty config file: the machine's /etc/docker/daemon.json may set
	// the data root, which conflicts with the flag.
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	td.cmd = exec.Command(bin,
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--data-root", filepath.Join(dir, "root"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"-H", td.Host,
		"--bridge", "none", // no default bridge: runs make their own networks
		"--iptables=false", "--ip-masq=false", // leave the host's firewall alone
		// Networks from a pool of its own, clear of the first daemon's.
		"--default-address-pool", "base="+testDaemonPool+",size=24",
		"--containerd-namespace", ns, "--containerd-plugins-namespace", ns+"-plugins",
	)
	td.cmd.Stdout, td.cmd.Stderr = logf, logf
	// Dies with the test binary, even if that is SIGKILLed.
	td.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := td.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Skipf("skipping: dockerd could not be started: %v", err)
	}
	go func() { td.cmd.Wait(); close(td.done) }()
	t.Cleanup(func() { td.stop(t) })
	allowForwarding(t, ns)
	if err := td.waitUp(); err != nil {
		t.Skipf("skipping: the second dockerd did not come up: %v\n%s", err, td.logTail())
	}
	return td
}

// allowForwarding lets the second daemon's containers reach each other
// when the host drops bridged traffic: with br_netfilter it passes the
// FORWARD chain, whose policy the first daemon set to DROP, and with
// --iptables=false the second adds no rule of its own. It inserts one
// ACCEPT rule for testDaemonPool in DOCKER-USER (the chain Docker leaves to
// users; FORWARD if there is none), removed in t.Cleanup.
func allowForwarding(t *testing.T, tag string) {
	t.Helper()
	nf, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	if err != nil || strings.TrimSpace(string(nf)) != "1" {
		return // bridged traffic skips iptables
	}
	ipt, err := exec.LookPath("iptables")
	if err != nil {
		t.Skipf("skipping: bridged traffic passes iptables here, and there is no iptables binary to let the second daemon's through: %v", err)
	}
	policy, err := exec.Command(ipt, "-S", "FORWARD").Output()
	if err != nil {
		t.Skipf("skipping: iptables -S FORWARD: %v", err)
	}
	if !strings.Contains(string(policy), "-P FORWARD DROP") {
		return
	}
	chain := "FORWARD"
	if exec.Command(ipt, "-S", "DOCKER-USER").Run() == nil {
		chain = "DOCKER-USER"
	}
	rule := []string{chain, "-s", testDaemonPool, "-d", testDaemonPool, "-m", "comment", "--comment", tag, "-j", "ACCEPT"}
	if out, err := exec.Command(ipt, append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot let the second daemon's bridged traffic through: iptables -I %v: %v\n%s", rule, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(ipt, append([]string{"-D"}, rule...)...).CombinedOutput(); err != nil {
			t.Errorf("iptables -D %v: %v\n%s", rule, err, out)
		}
	})
}

// client connects to the daemon (not through testcontainers, whose choice
// of daemon is made once per process).
func (td *testDaemon) client(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.WithHost(td.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func (td *testDaemon) waitUp() error {
	cli, err := client.New(client.WithHost(td.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(dockerdStartWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Ping(ctx, client.PingOptions{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-td.done:
			return fmt.Errorf("dockerd exited: %v", td.cmd.ProcessState)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer at %s within %v: %v", td.Host, dockerdStartWait, err)
		}
	}
}

func (td *testDaemon) logTail() string {
	b, _ := os.ReadFile(filepath.Join(td.dir, "dockerd.log"))
	return cluster.Tail(b, 3000)
}

// stop removes whatever is left on the daemon, stops it (SIGTERM to its
// recorded pid, SIGKILL after dockerdStopWait), kills its containerd by
// the pid that recorded, unmounts what is left under its directory and
// removes the directory.
func (td *testDaemon) stop(t *testing.T) {
	pid := td.cmd.Process.Pid
	if b, err := os.ReadFile(filepath.Join(td.dir, "dockerd.pid")); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p != pid {
			t.Errorf("dockerd's pidfile says %d, but it was started as %d", p, pid)
		}
	}
	// The managed containerd's pid, recorded before dockerd removes it.
	ctrdPid := 0
	if b, err := os.ReadFile(filepath.Join(td.dir, "exec", "containerd", "containerd.pid")); err == nil {
		ctrdPid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-td.done:
	case <-time.After(dockerdStopWait):
		t.Errorf("dockerd %d did not stop on SIGTERM within %v: killing it\n%s", pid, dockerdStopWait, td.logTail())
		syscall.Kill(pid, syscall.SIGKILL)
		<-td.done
	}
	if ctrdPid > 1 && processRunsExe(ctrdPid, "containerd") {
		syscall.Kill(ctrdPid, syscall.SIGKILL)
	}
	unmountUnder(td.dir)
	if err := os.RemoveAll(td.dir); err != nil {
		t.Errorf("remove the second daemon's directory: %v", err)
	}
}

// processRunsExe reports whether pid runs a binary named name (so a
// recycled pid is left alone).
func processRunsExe(pid int, name string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && filepath.Base(exe) == name
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	raw, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range bytes.Split(raw, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}
