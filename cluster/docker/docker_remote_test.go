package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/internal/gobuild"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
)

// simulateLimit bounds one `simulate` command of these tests.
const simulateLimit = 5 * time.Minute

// buildSimulate builds the CLI (go build -o .../simulate ./cmd/simulate)
// into t's temp dir.
func buildSimulate(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "simulate")
	cmd := exec.Command("go", gobuild.Args(root, "-o", bin, "./cmd/simulate")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/simulate: %v\n%s", err, out)
	}
	return bin
}

// simulate runs the CLI against the daemon at dockerHost, from the module
// root, and returns its output and exit status.
func simulate(t *testing.T, bin, dockerHost string, args ...string) (string, int) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), simulateLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+dockerHost, "TESTCONTAINERS_RYUK_DISABLED=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("simulate %v: %v\n%s", args, err, out.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// labelled counts the containers, networks and volumes on a daemon that
// carry label (key=value).
func labelled(t *testing.T, cli client.APIClient, label string) (containers, networks, volumes int) {
	t.Helper()
	ctx := context.Background()
	f := make(client.Filters).Add("label", label)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items), len(ns.Items), len(vs.Items)
}

// createdOn counts the containers labelled with runID the daemon created
// since start (its event log): proof that a run ran there.
func createdOn(t *testing.T, cli client.APIClient, runID string, since time.Time) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := cli.Events(ctx, client.EventsListOptions{
		Since:   strconv.FormatInt(since.Unix()-1, 10),
		Until:   strconv.FormatInt(time.Now().Unix()+1, 10),
		Filters: make(client.Filters).Add("label", cluster.LabelRun+"="+runID).Add("type", "container").Add("event", "create"),
	})
	n := 0
	for {
		select {
		case <-res.Messages:
			n++
		case err := <-res.Err:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("events: %v", err)
			}
			return n
		}
	}
}

var runLine = regexp.MustCompile(`(?m)^run (\S+)`)

// master-failover runs end to end on a second daemon reached only over TCP:
// the verdict matches, every container of the run was made there, and
// nothing of it is left on either daemon.
func TestDockerRemoteMasterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a second dockerd and runs a scenario")
	}
	td := startTestDaemon(t)
	bin := buildSimulate(t)
	start := time.Now()
	out, code := simulate(t, bin, td.Host, "run", "-backend", "docker", "-reports", t.TempDir(), "-q", "master-failover")
	t.Logf("simulate run on %s (%v):\n%s", td.Host, time.Since(start).Round(time.Second), out)
	if code != 0 {
		t.Fatalf("simulate run exited %d, want 0", code)
	}
	for _, want := range []string{"verdict:  overlap", "match:    yes", "backend docker"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no run id in the output")
	}
	runID := m[1]
	cli := td.client(t)
	// A sandbox and a server per node (2), and the toxiproxy container.
	if n := createdOn(t, cli, runID, start); n != 5 {
		t.Errorf("the second daemon created %d containers of run %s, want 5", n, runID)
	}
	if c, nw, v := labelled(t, cli, cluster.LabelApp+"=1"); c+nw+v != 0 {
		t.Errorf("left on the second daemon: %d containers, %d networks, %d volumes", c, nw, v)
	}
	if DockerAvailable(context.Background()) {
		if n, err := DockerLeftovers(context.Background(), runID); err != nil || n != 0 {
			t.Errorf("left on the local daemon: %d objects of run %s (%v)", n, runID, err)
		}
	}
}

// `simulate clean` with DOCKER_HOST naming the remote daemon removes what a
// killed harness left there: containers (the toxiproxy one too), network
// and volume.
func TestDockerRemoteClean(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a second dockerd")
	}
	td := startTestDaemon(t)
	bin := buildSimulate(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A harness killed once its cluster is up.
	ctx, cancel := context.WithTimeout(context.Background(), simulateLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "-backend", "docker", "-reports", t.TempDir(), "master-failover")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+td.Host, "TESTCONTAINERS_RYUK_DISABLED=true")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan string, 1)
	go func() {
		var seen strings.Builder
		buf := make([]byte, 4096)
		for {
			k, err := pr.Read(buf)
			seen.Write(buf[:k])
			if strings.Contains(seen.String(), "cycle 1/") {
				up <- seen.String()
				io.Copy(io.Discard, pr)
				return
			}
			if err != nil {
				up <- seen.String()
				return
			}
		}
	}()
	out := <-up
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	pw.Close()
	if !strings.Contains(out, "cycle 1/") {
		t.Fatalf("the run never got to its first cycle:\n%s", out)
	}
	cli := td.client(t)
	c, nw, v := labelled(t, cli, cluster.LabelApp+"=1")
	t.Logf("a killed harness left %d containers, %d networks, %d volumes on %s", c, nw, v, td.Host)
	if c != 5 || nw != 1 || v != 1 {
		t.Fatalf("left %d containers, %d networks, %d volumes; want 5 (2 nodes and toxiproxy), 1 and 1: the test proves nothing", c, nw, v)
	}
	cout, code := simulate(t, bin, td.Host, "clean")
	t.Logf("simulate clean:\n%s", cout)
	if code != 0 {
		t.Fatalf("simulate clean exited %d", code)
	}
	if !strings.Contains(cout, "removed 7 docker object(s)") {
		t.Errorf("simulate clean did not report 7 removals")
	}
	if c, nw, v := labelled(t, cli, cluster.LabelApp+"=1"); c+nw+v != 0 {
		t.Errorf("after clean: %d containers, %d networks, %d volumes left", c, nw, v)
	}
}

// envRemoteHelper makes TestDockerRemoteNodeHelper run: it is the child
// process of TestDockerRemoteNode, whose DOCKER_HOST names the second
// daemon (testcontainers picks its daemon once per process).
const envRemoteHelper = "LOCKFAULT_TEST_REMOTE_NODE"

// The node-level faults on a remote daemon: addresses, kill and restart,
// the clock (running and stopped node) and a power loss, driven through the
// daemon only; Close leaves nothing.
func TestDockerRemoteNode(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a second dockerd")
	}
	td := startTestDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), simulateLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDockerRemoteNodeHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+td.Host, envRemoteHelper+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("helper on %s:\n%s", td.Host, out)
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestDockerRemoteNodeHelper") {
		t.Fatal("the helper did not pass")
	}
	if c, nw, v := labelled(t, td.client(t), cluster.LabelApp+"=1"); c+nw+v != 0 {
		t.Errorf("left on the second daemon: %d containers, %d networks, %d volumes", c, nw, v)
	}
}

func TestDockerRemoteNodeHelper(t *testing.T) {
	if os.Getenv(envRemoteHelper) != "1" {
		t.Skip("run by TestDockerRemoteNode")
	}
	d := newTestDocker(t, testRunID(t))
	if !d.Remote() {
		t.Fatalf("the backend is not remote with DOCKER_HOST=%s", os.Getenv("DOCKER_HOST"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	withShim := d.caps.imageShim
	n, err := d.Start(ctx, cluster.NodeSpec{Name: "n1", Kind: cluster.KindRedis, ClockShim: withShim,
		Args: []string{"--appendonly", "yes", "--appendfsync", "no"}})
	if err != nil {
		t.Fatal(err)
	}
	pa := n.(interface{ PeerAddr() string }).PeerAddr()
	t.Logf("n1 at %s for the harness, %s for its peers, data in %s", n.Addr(), pa, n.DataDir())
	if pa == n.Addr() || !strings.HasSuffix(pa, ":6379") {
		t.Errorf("peer address %s, harness address %s: want the node's own address on the run network", pa, n.Addr())
	}
	if !strings.HasPrefix(n.DataDir(), remoteDataRoot+"/") {
		t.Errorf("data dir %s is not on the run's volume", n.DataDir())
	}
	if _, err := os.Stat(n.DataDir()); err == nil {
		t.Errorf("data dir %s exists on the harness's file system", n.DataDir())
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The data dir survives a kill (it is on the volume): SAVE, kill, start.
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, rdb)
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after a restart k = %q (%v), want v", v, err)
	}
	if !withShim {
		t.Log("the image has no clock shim: clock and power loss not tested")
		if err := d.Supports("clock-jump"); err == nil {
			t.Error("Supports(clock-jump) is nil on an image without the shim")
		}
		return
	}
	if err := d.Supports("power-loss"); err != nil {
		t.Fatal(err)
	}

	// The clock, moved from inside the sandbox.
	if err := cluster.SetClockOffset(n, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := cluster.ClockOffset(n); err != nil || got != time.Hour {
		t.Fatalf("ClockOffset = %v (%v), want 1h", got, err)
	}
	st, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if off := time.Until(st); off < time.Hour-5*time.Second || off > time.Hour+5*time.Second {
		t.Fatalf("the node's clock is %v ahead, want 1h", off)
	}
	// A stopped node's clock moves too, from its next start.
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.SetClockOffset(n, -time.Hour); err != nil {
		t.Fatalf("SetClockOffset on a stopped node: %v", err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, rdb)
	if st, err = rdb.Time(ctx).Result(); err != nil {
		t.Fatal(err)
	}
	if off := time.Until(st); off > -time.Hour+5*time.Second || off < -time.Hour-5*time.Second {
		t.Fatalf("after a restart the node's clock is %v off, want -1h", off)
	}

	// appendfsync no: redis never fsyncs the AOF, so a power loss cuts what
	// it wrote since it started, while a plain kill loses nothing.
	write := func(prefix string) {
		for i := range 100 {
			if err := rdb.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("killed")
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, rdb)
	if k := rdb.Exists(ctx, "killed:0", "killed:99").Val(); k != 2 {
		t.Fatalf("a plain kill lost writes (%d of 2 keys left): the power loss below would prove nothing", k)
	}
	write("cut")
	rep, err := cluster.PowerLoss(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.String())
	if rep.Lost <= 0 {
		t.Fatalf("power loss lost nothing: %v", rep)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, rdb)
	if k := rdb.Exists(ctx, "cut:0", "cut:99").Val(); k != 0 {
		t.Fatalf("%d of 2 unsynced keys survived the power loss", k)
	}
}

// waitLoaded waits (at most 10 s) until a restarted redis has loaded its
// dataset: Start returns once it answers, LOADING included.
func waitLoaded(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rdb.Exists(ctx, "x").Err() // PING is answered while loading
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "LOADING") || time.Now().After(deadline) {
			t.Fatalf("EXISTS after a restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Without a local daemon to save it from, the node image is built on the
// remote daemon, from the build context the docker CLI sends through its
// API.
func TestDockerRemoteImageBuiltThere(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a second dockerd and builds the image on it")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skipf("skipping: cluster/image/build.sh needs the docker CLI: %v", err)
	}
	td := startTestDaemon(t)
	cli := td.client(t)
	old := localDockerHost
	localDockerHost = "unix://" + filepath.Join(t.TempDir(), "no-daemon.sock")
	t.Cleanup(func() { localDockerHost = old })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	img := dockerImage()
	if _, err := cli.ImageInspect(ctx, img); err == nil {
		t.Fatalf("the new daemon has %s already: the test proves nothing", img)
	}
	t0 := time.Now()
	if err := ensureRemoteImage(ctx, cli); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s on %s in %v", img, td.Host, time.Since(t0).Round(time.Second))
	ins, err := cli.ImageInspect(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Config == nil || !imageCurrent(ins.Config.Labels) {
		t.Errorf("the image built there is not current: labels %v", ins.Config.Labels)
	}
}
