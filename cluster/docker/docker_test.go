package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
)

// newTestDocker starts a Docker backend for t, skipping when no engine answers.
func newTestDocker(t *testing.T, runID string) *Docker {
	t.Helper()
	if !DockerAvailable(context.Background()) {
		t.Skip("no Docker engine answers: skipping the docker backend tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := NewDocker(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

// runObjects counts the containers and networks labelled with runID.
func runObjects(t *testing.T, runID string) (containers, networks int) {
	t.Helper()
	ctx := context.Background()
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", cluster.LabelRun+"="+runID)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items), len(ns.Items)
}

func testRunID(t *testing.T) string {
	return fmt.Sprintf("test-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano()%1e9)
}

func TestDockerRedisNode(t *testing.T) {
	runID := testRunID(t)
	d := newTestDocker(t, runID)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	t0 := time.Now()
	n, err := d.Start(ctx, cluster.NodeSpec{Name: "n1", Kind: cluster.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis container up in %v at %s (proxy host %s)", time.Since(t0).Round(time.Millisecond), n.Addr(), d.ProxyHost())
	if n.Port() != DockerRedisPort || !strings.HasSuffix(n.Addr(), ":6379") {
		t.Fatalf("port %d addr %s, want 6379", n.Port(), n.Addr())
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(n.DataDir())), cluster.TempPrefix) {
		t.Errorf("data dir %s is not under a %s temp dir", n.DataDir(), cluster.TempPrefix)
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// The data dir is bind-mounted at the same path inside.
	if dir, err := rdb.ConfigGet(ctx, "dir").Result(); err != nil || dir["dir"] != n.DataDir() {
		t.Fatalf("redis dir %v (%v), want %s", dir, err, n.DataDir())
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rdbFile := filepath.Join(n.DataDir(), "dump.rdb")
	if _, err := os.Stat(rdbFile); err != nil {
		t.Fatalf("SAVE inside the container: %v", err)
	}
	os.Remove(rdbFile) // so that the restart below starts empty

	// A container reaches a listener the host opens on ProxyHost: make redis
	// replicate from it and watch it connect.
	ln, err := net.Listen("tcp", net.JoinHostPort(d.ProxyHost(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lnPort := ln.Addr().(*net.TCPAddr).Port
	if err := rdb.SlaveOf(ctx, d.ProxyHost(), fmt.Sprint(lnPort)).Err(); err != nil {
		t.Fatal(err)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("no connection from the container to %s:%d: %v", d.ProxyHost(), lnPort, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.HasPrefix(line, "*1") && !strings.Contains(line, "PING") {
		t.Errorf("replica's first line %q, want a PING", line)
	}
	if err := rdb.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}

	// Kill and restart: same container, same data dir, empty dataset.
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("killed node still running")
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatalf("second kill: %v", err)
	}
	// As with a crashed process on a live host, the address refuses at once.
	t0 = time.Now()
	_, err = net.DialTimeout("tcp", n.Addr(), 3*time.Second)
	// Refused (not a timeout of a blackholed address): its wall time is not
	// asserted.
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to a killed node: %v after %v, want connection refused", err, time.Since(t0))
	}
	addr := n.Addr()
	if err := n.Signal(ctx, syscall.SIGSTOP); err == nil {
		t.Error("signal to a killed node succeeded")
	}
	t0 = time.Now()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %v, addr %s", time.Since(t0).Round(time.Millisecond), n.Addr())
	if n.Addr() != addr {
		t.Errorf("address changed across a restart: %s -> %s", addr, n.Addr())
	}
	if !n.Running() {
		t.Fatal("restarted node not running")
	}
	if err := n.Start(ctx); err == nil {
		t.Error("Start of a running node succeeded")
	}
	rdb = redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, ReadTimeout: 500 * time.Millisecond})
	defer rdb.Close()
	if v, err := rdb.Exists(ctx, "k").Result(); err != nil || v != 0 {
		t.Fatalf("after restart exists=%d err=%v, want 0 and nil", v, err)
	}

	// SIGSTOP freezes the server, SIGCONT resumes it.
	if err := n.Signal(ctx, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err = rdb.Ping(ctx).Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING to a stopped node: %v, want a timeout", err)
	}
	if !n.Running() {
		t.Error("stopped node reported not running")
	}
	if err := n.Signal(ctx, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after SIGCONT: %v", err)
	}

	// A stopped server dies on SIGKILL too.
	if err := n.Signal(ctx, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("killed (stopped) node still running")
	}

	dataDir := n.DataDir()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if cs, ns := runObjects(t, runID); cs != 0 || ns != 0 {
		t.Errorf("after Close: %d containers and %d networks labelled %s", cs, ns, runID)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data dir %s survived Close: %v", dataDir, err)
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("run dir %s survived Close: %v", d.dir, err)
	}
}

func TestDockerSentinelAndEtcd(t *testing.T) {
	runID := testRunID(t)
	d := newTestDocker(t, runID)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	m, err := d.Start(ctx, cluster.NodeSpec{Name: "m1", Kind: cluster.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(m.Addr())
	t0 := time.Now()
	s, err := d.Start(ctx, cluster.NodeSpec{Name: "s1", Kind: cluster.KindSentinel,
		Config: fmt.Sprintf("sentinel monitor mymaster %s %s 1\n", host, port)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sentinel up in %v at %s", time.Since(t0).Round(time.Millisecond), s.Addr())
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer sc.Close()
	if err := sc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	master, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
	if err != nil || len(master) != 2 || master[0] != host {
		t.Fatalf("sentinel master %v (%v), want %s", master, err, host)
	}
	// Sentinel rewrote its config, the host's node.conf.
	conf, err := os.ReadFile(filepath.Join(s.DataDir(), "node.conf"))
	if err != nil || !strings.Contains(string(conf), "sentinel myid") {
		t.Errorf("node.conf not rewritten by the sentinel (%v):\n%s", err, conf)
	}

	t0 = time.Now()
	e, err := d.Start(ctx, cluster.NodeSpec{Name: "e1", Kind: cluster.KindEtcd})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd up in %v at %s", time.Since(t0).Round(time.Millisecond), e.Addr())
	if e.Port() != DockerEtcdPort {
		t.Errorf("etcd port %d", e.Port())
	}
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get("http://" + e.Addr() + "/health")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), `"true"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd not healthy: %v %s", err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(e.DataDir(), "etcd", "member")); err != nil {
		t.Errorf("etcd data not in the host's data dir: %v", err)
	}

	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if cs, ns := runObjects(t, runID); cs != 0 || ns != 0 {
		t.Errorf("after Close: %d containers and %d networks labelled %s", cs, ns, runID)
	}
}

// TestDockerClean checks what CleanDocker does on what a killed harness
// leaves behind. It only cleans this test's run label, not every lockfault
// object: other runs may be using the same engine.
func TestDockerClean(t *testing.T) {
	runID := testRunID(t)
	d := newTestDocker(t, runID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Start(ctx, cluster.NodeSpec{Name: "n1", Kind: cluster.KindRedis}); err != nil {
		t.Fatal(err)
	}
	if cs, ns := runObjects(t, runID); cs != 2 || ns != 1 {
		t.Fatalf("%d containers and %d networks labelled %s, want 2 (server and sandbox) and 1", cs, ns, runID)
	}
	// The harness dies without Close; clean finds its objects by label.
	n, err := cleanDocker(ctx, cluster.LabelRun+"="+runID)
	if err != nil || n != 3 {
		t.Fatalf("cleanDocker removed %d (%v), want 3", n, err)
	}
	if cs, ns := runObjects(t, runID); cs != 0 || ns != 0 {
		t.Errorf("after clean: %d containers and %d networks labelled %s", cs, ns, runID)
	}
	// Close after clean still succeeds and removes the temp dirs.
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("run dir %s survived Close: %v", d.dir, err)
	}
}

func TestDockerCloseCancelledContext(t *testing.T) {
	runID := testRunID(t)
	d := newTestDocker(t, runID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Start(ctx, cluster.NodeSpec{Name: "n1", Kind: cluster.KindRedis}); err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := d.Close(done); err != nil {
		t.Fatal(err)
	}
	if cs, ns := runObjects(t, runID); cs != 0 || ns != 0 {
		t.Errorf("after Close: %d containers and %d networks labelled %s", cs, ns, runID)
	}
	if _, err := d.Start(ctx, cluster.NodeSpec{Name: "n2", Kind: cluster.KindRedis}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// A ClockShim node preloads the shim from the image, or fails to start
// with a clear error when the image was built without it.
func TestDockerClockShimEnv(t *testing.T) {
	runID := testRunID(t)
	d := newTestDocker(t, runID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := d.checkShim(ctx)
	n, startErr := d.Start(ctx, cluster.NodeSpec{Name: "c1", Kind: cluster.KindRedis, ClockShim: true})
	if err != nil {
		if startErr == nil || !strings.Contains(startErr.Error(), "clock shim") {
			t.Fatalf("image without shim: Start error %v, want one about the clock shim", startErr)
		}
		t.Logf("image has no clock shim, Start refused: %v", startErr)
		return
	}
	if startErr != nil {
		t.Fatal(startErr)
	}
	ins, err := d.cli.ContainerInspect(ctx, n.(*dockerNode).id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(ins.Container.Config.Env, "\n")
	for _, want := range []string{"LD_PRELOAD=" + dockerShimPath, "LOCKFAULT_CLOCK_FILE=" + filepath.Join(n.DataDir(), "clock-offset")} {
		if !strings.Contains(env, want) {
			t.Errorf("container env lacks %s:\n%s", want, env)
		}
	}
	if err := redis.NewClient(&redis.Options{Addr: n.Addr()}).Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}
