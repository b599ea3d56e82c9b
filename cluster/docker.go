package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// DockerImage is the node image built offline by cluster/image/build.sh
// (see EnsureImage). LOCKFAULT_IMAGE overrides it, for the script too.
const DockerImage = "lockfault-node:7.0.15"

// Ports nodes listen on inside their containers.
const (
	DockerRedisPort    = 6379
	DockerSentinelPort = 26379
	DockerEtcdPort     = 2379
	DockerEtcdPeerPort = 2380
)

// Image paths, labels and timeouts.
const (
	dockerShimPath   = "/lockfault/libclockshim.so"
	labelImageShim   = "lockfault.clockshim" // image label: "1" when the shim is in it
	labelNode        = "lockfault.node"
	labelRole        = "lockfault.role" // roleServer or roleSandbox
	roleServer       = "server"
	roleSandbox      = "sandbox"
	dockerStopWait   = 10 * time.Second
	dockerStartWait  = 15 * time.Second
	dockerCloseLimit = 60 * time.Second
	// networkRemoveRetry bounds retrying a network removal.
	networkRemoveRetry = 5 * time.Second
	// dockerCreateLimit bounds creating and starting one container.
	dockerCreateLimit = 60 * time.Second
)

// Docker runs every node in its own container, all on one bridge network
// made for the run; each node's network namespace (its address) is held by a
// second, sandbox container so that it outlives Kill (see Start).
// Containers and network carry the labels LabelApp=1 and LabelRun=<runID>;
// each node's data directory is a host temp dir bind-mounted at the same path
// inside its container. Nodes reach each other by address or by node name
// (a DNS alias on the run network) and reach the harness at ProxyHost.
//
// Ryuk (testcontainers' reaper) is disabled, as its image can't be pulled:
// Close removes everything, and CleanDocker removes what a killed harness
// left behind.
type Docker struct {
	runID   string
	prefix  string // container and network name prefix: lockfault-<run>-<rand>
	image   string
	cli     client.APIClient
	netID   string
	netName string
	gateway string
	dir     string // host temp dir holding every node's data dir

	mu     sync.Mutex
	nodes  []*dockerNode
	closed bool
}

// NewDocker connects to the Docker engine, makes sure the node image exists
// (building it with EnsureImage if not) and creates the run's network.
func NewDocker(ctx context.Context, runID string) (*Docker, error) {
	if runID == "" {
		return nil, errors.New("docker: empty run id")
	}
	if err := disableRyuk(); err != nil {
		return nil, err
	}
	quietTestcontainers()
	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	if !provider.Config().RyukDisabled {
		provider.Close()
		return nil, errors.New("docker: testcontainers' reaper (Ryuk) is enabled but its image can't be pulled; set TESTCONTAINERS_RYUK_DISABLED=true")
	}
	if err := EnsureImage(ctx); err != nil {
		provider.Close()
		return nil, err
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	d := &Docker{
		runID:  runID,
		prefix: "lockfault-" + dockerName(runID) + "-" + hex.EncodeToString(suffix),
		image:  dockerImage(),
		cli:    provider.Client(),
	}
	ok := false
	defer func() {
		if !ok {
			d.Close(context.Background())
		}
	}()
	if d.dir, err = newRunDir(dockerName(runID)); err != nil {
		return nil, err
	}
	d.netName = d.prefix
	res, err := d.cli.NetworkCreate(ctx, d.netName, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: d.labels(),
	})
	if err != nil {
		hint := ""
		if strings.Contains(err.Error(), "address pool") {
			hint = " (docker's address pools are used up: leftover networks? try `simulate clean`)"
		}
		return nil, fmt.Errorf("docker: create network: %w%s", err, hint)
	}
	d.netID = res.ID
	ins, err := d.cli.NetworkInspect(ctx, d.netID, client.NetworkInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker: inspect network: %w", err)
	}
	for _, c := range ins.Network.IPAM.Config {
		if c.Gateway.IsValid() && c.Gateway.Is4() {
			d.gateway = c.Gateway.String()
			break
		}
	}
	if d.gateway == "" {
		return nil, fmt.Errorf("docker: network %s has no IPv4 gateway", d.netName)
	}
	// The harness's proxies listen on the gateway: make sure it can.
	ln, err := net.Listen("tcp", net.JoinHostPort(d.gateway, "0"))
	if err != nil {
		return nil, fmt.Errorf("docker: cannot listen on the network gateway %s: %w", d.gateway, err)
	}
	ln.Close()
	ok = true
	return d, nil
}

func (d *Docker) Name() string { return "docker" }

// ProxyHost is the gateway IP of the run's network: an address of the
// harness's host that the containers reach directly.
func (d *Docker) ProxyHost() string { return d.gateway }

// Network returns the name of the run's docker network.
func (d *Docker) Network() string { return d.netName }

func (d *Docker) labels() map[string]string {
	return map[string]string{LabelApp: "1", LabelRun: d.runID, LabelOwner: strconv.Itoa(os.Getpid())}
}

// Start creates a node: first its network sandbox, a container that holds
// the node's network namespace and address for the whole run (a redis-server
// listening on a unix socket only, a few MB), then the server's own
// container, which joins that namespace. Killing the server thus behaves as
// on a real host whose process crashed: its address stays up and refuses
// connections at once, rather than vanishing (connects hanging until ARP gives
// up), and it keeps its address across restarts.
func (d *Docker) Start(ctx context.Context, spec NodeSpec) (Node, error) {
	if d.isClosed() {
		return nil, errors.New("docker backend is closed")
	}
	dir := filepath.Join(d.dir, spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if spec.Config != "" {
		if err := os.WriteFile(filepath.Join(dir, "node.conf"), []byte(spec.Config), 0o644); err != nil {
			return nil, err
		}
	}
	n := &dockerNode{d: d, spec: spec, dir: dir}
	switch spec.Kind {
	case KindSentinel:
		n.port = DockerSentinelPort
	case KindEtcd:
		n.port, n.peerPort = DockerEtcdPort, DockerEtcdPeerPort
	default:
		n.port = DockerRedisPort
	}
	env := map[string]string{}
	if spec.ClockShim {
		if err := d.checkShim(ctx); err != nil {
			return nil, err
		}
		env["LD_PRELOAD"] = dockerShimPath
		env["LOCKFAULT_CLOCK_FILE"] = filepath.Join(dir, "clock-offset")
	}
	name := d.prefix + "-" + dockerName(spec.Name)

	// The sandbox: on the run network, reachable by the node's name too.
	sbLabels := d.labels()
	sbLabels[labelNode] = spec.Name
	sbLabels[labelRole] = roleSandbox
	sb, err := d.create(ctx, testcontainers.ContainerRequest{
		Image:          d.image,
		Name:           name + "-net",
		Entrypoint:     []string{"redis-server"},
		Cmd:            []string{"--port", "0", "--unixsocket", "/tmp/sandbox.sock", "--save", "", "--appendonly", "no", "--loglevel", "warning"},
		Labels:         sbLabels,
		Networks:       []string{d.netName},
		NetworkAliases: map[string][]string{d.netName: {spec.Name}},
		ConfigModifier: func(c *container.Config) { c.Hostname = dockerName(spec.Name) },
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode(d.netName)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("docker: create sandbox of %s: %w", spec.Name, err)
	}
	n.sandbox = sb.GetContainerID()
	ip, err := n.sandboxIP(ctx)
	if err != nil {
		return nil, err
	}
	n.setAddr(ip)

	// The server, listening on the sandbox's address like the process
	// backend's nodes listen on 127.0.0.1.
	bin, args := Command(spec, dir, ip, n.port, n.peerPort)
	labels := d.labels()
	labels[labelNode] = spec.Name
	labels[labelRole] = roleServer
	ctr, err := d.create(ctx, testcontainers.ContainerRequest{
		Image:      d.image,
		Name:       name,
		Entrypoint: []string{bin},
		Cmd:        args,
		Env:        env,
		Labels:     labels,
		ConfigModifier: func(c *container.Config) {
			c.WorkingDir = dir
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode("container:" + n.sandbox)
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: dir, Target: dir})
			hc.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyDisabled}
		},
	})
	if ctr != nil {
		n.ctr = ctr
		n.id = ctr.GetContainerID()
	}
	if err != nil {
		return nil, fmt.Errorf("docker: create node %s: %w", spec.Name, err)
	}
	d.mu.Lock()
	d.nodes = append(d.nodes, n)
	d.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.ready(ctx); err != nil {
		// Like the process backend: a node that failed to come up is not left running.
		n.d.cli.ContainerKill(context.WithoutCancel(ctx), n.id, client.ContainerKillOptions{Signal: "KILL"})
		return nil, err
	}
	return n, nil
}

func (d *Docker) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// create creates and starts a container through testcontainers. A container
// created after Close began is removed again.
// A cancelled ctx cuts a start short (Ctrl-C must not wait for the daemon,
// which may take seconds per container on a loaded host); Close then
// removes whatever was made. The request is bounded by dockerCreateLimit.
func (d *Docker) create(ctx context.Context, req testcontainers.ContainerRequest) (testcontainers.Container, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, dockerCreateLimit)
	defer cancel()
	ctr, err := testcontainers.GenericContainer(cctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req,
		Started:          true,
		Logger:           tclog.NewNoopLogger(),
	})
	if ctr != nil && ctr.GetContainerID() != "" && d.isClosed() {
		removeContainer(context.WithoutCancel(ctx), d.cli, ctr.GetContainerID())
		return nil, errors.New("docker backend is closed")
	}
	return ctr, err
}

// checkShim fails when the image was built without the clock shim.
func (d *Docker) checkShim(ctx context.Context) error {
	img, err := d.cli.ImageInspect(ctx, d.image)
	if err != nil {
		return fmt.Errorf("docker: inspect image %s: %w", d.image, err)
	}
	if img.Config == nil || img.Config.Labels[labelImageShim] != "1" {
		return fmt.Errorf("docker: image %s has no clock shim; run `make shim` then `bash cluster/image/build.sh`", d.image)
	}
	return nil
}

// Close removes every container and the network of this run, then the data
// directories. It ignores ctx's cancellation: cleanup gets its own time.
func (d *Docker) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	nodes := d.nodes
	d.nodes = nil
	d.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dockerCloseLimit)
	defer cancel()
	var errs []error
	if d.cli != nil && d.runID != "" {
		// Servers and the sandboxes whose namespaces they share, all at
		// once (force removal kills first): one round of the daemon's
		// latency rather than two, so Ctrl-C exits within 2 s.
		var servers, sandboxes []string
		for _, n := range nodes {
			servers = append(servers, n.id)
			sandboxes = append(sandboxes, n.sandbox)
		}
		// Also whatever carries this run's label (a node whose Start failed half way).
		list, err := d.cli.ContainerList(cctx, client.ContainerListOptions{
			All:     true,
			Filters: make(client.Filters).Add("label", LabelRun+"="+d.runID).Add("name", d.prefix),
		})
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range list.Items {
			if c.Labels[labelRole] == roleSandbox {
				sandboxes = append(sandboxes, c.ID)
			} else {
				servers = append(servers, c.ID)
			}
		}
		errs = append(errs, removeContainers(cctx, d.cli, append(servers, sandboxes...))...)
		if d.netID != "" {
			if err := removeNetwork(cctx, d.cli, d.netID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if d.dir != "" {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if d.cli != nil {
		d.cli.Close() // drops idle connections; the client stays usable
	}
	return errors.Join(errs...)
}

type dockerNode struct {
	d        *Docker
	spec     NodeSpec
	dir      string
	port     int
	peerPort int
	id       string // the server's container
	ctr      testcontainers.Container
	sandbox  string // the container holding the network namespace

	mu     sync.Mutex // serialises Kill, Start and Signal
	addrMu sync.Mutex // guards addr alone: Addr never waits for a Start
	addr   string
}

func (n *dockerNode) Spec() NodeSpec  { return n.spec }
func (n *dockerNode) Port() int       { return n.port }
func (n *dockerNode) DataDir() string { return n.dir }

// ContainerID is the docker id of the server's container.
func (n *dockerNode) ContainerID() string { return n.id }

// Addr is the node's IP on the run network (its sandbox's, so it stays for
// the whole run) and its port. Start re-reads it all the same.
func (n *dockerNode) Addr() string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.addr
}

func (n *dockerNode) setAddr(ip string) {
	n.addrMu.Lock()
	n.addr = net.JoinHostPort(ip, strconv.Itoa(n.port))
	n.addrMu.Unlock()
}

// sandboxIP is the address of the node's sandbox on the run network.
func (n *dockerNode) sandboxIP(ctx context.Context) (string, error) {
	ins, err := n.d.cli.ContainerInspect(ctx, n.sandbox, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("docker: inspect sandbox of %s: %w", n.spec.Name, err)
	}
	c := ins.Container
	if c.State == nil || !c.State.Running {
		return "", fmt.Errorf("docker: the sandbox of node %s is not running", n.spec.Name)
	}
	if c.NetworkSettings == nil || c.NetworkSettings.Networks[n.d.netName] == nil || !c.NetworkSettings.Networks[n.d.netName].IPAddress.IsValid() {
		return "", fmt.Errorf("docker: node %s has no address on network %s", n.spec.Name, n.d.netName)
	}
	return c.NetworkSettings.Networks[n.d.netName].IPAddress.String(), nil
}

// ready waits for the node to listen, refreshing its address. n.mu is held.
func (n *dockerNode) ready(ctx context.Context) error {
	ip, err := n.sandboxIP(ctx)
	if err != nil {
		return err
	}
	n.setAddr(ip)
	addr := n.Addr()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan struct{})
	wait := n.d.cli.ContainerWait(wctx, n.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	go func() {
		select {
		case <-wait.Result:
			close(exited)
		case <-wait.Error:
		}
	}()
	if err := waitListening(ctx, addr, exited, dockerStartWait); err != nil {
		return fmt.Errorf("docker: node %s did not come up: %v%s", n.spec.Name, err, n.logs(ctx))
	}
	return nil
}

// logs returns the tail of the container's output, for error messages.
func (n *dockerNode) logs(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rc, err := n.ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	return "\n" + tail(b, 2000)
}

// Kill SIGKILLs the container's main process (the server) and waits for
// the container to stop. The container and its data stay.
func (n *dockerNode) Kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, dockerStopWait)
	defer cancel()
	wait := n.d.cli.ContainerWait(ctx, n.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	if _, err := n.d.cli.ContainerKill(ctx, n.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		if !cerrdefs.IsConflict(err) { // not running: nothing to kill
			return fmt.Errorf("docker: kill %s: %w", n.spec.Name, err)
		}
	}
	select {
	case <-wait.Result:
		return nil
	case err := <-wait.Error:
		return fmt.Errorf("docker: node %s did not die: %w", n.spec.Name, err)
	}
}

// Start starts the node's container again, with the same data directory.
func (n *dockerNode) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running(ctx) {
		return fmt.Errorf("node %s is already running", n.spec.Name)
	}
	if err := n.ctr.Start(ctx); err != nil {
		return fmt.Errorf("docker: start %s: %w", n.spec.Name, err)
	}
	return n.ready(ctx)
}

// Signal delivers sig to the server (the container's main process).
func (n *dockerNode) Signal(ctx context.Context, sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.d.cli.ContainerKill(ctx, n.id, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))}); err != nil {
		if cerrdefs.IsConflict(err) {
			return fmt.Errorf("node %s is not running", n.spec.Name)
		}
		return fmt.Errorf("docker: signal %v to %s: %w", sig, n.spec.Name, err)
	}
	return nil
}

// Running reports whether the container is running (a SIGSTOPped server
// still is).
func (n *dockerNode) Running() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.running(ctx)
}

func (n *dockerNode) running(ctx context.Context) bool {
	ins, err := n.d.cli.ContainerInspect(ctx, n.id, client.ContainerInspectOptions{})
	return err == nil && ins.Container.State != nil && ins.Container.State.Running
}

// CleanDocker removes every container and network labelled LabelApp=1,
// whatever run made them (for `simulate clean` after a harness was killed).
// It returns how many it removed.
func CleanDocker(ctx context.Context) (int, error) {
	return cleanDocker(ctx, LabelApp+"=1")
}

// cleanDocker removes the containers, then the networks, carrying label
// (key=value).
func cleanDocker(ctx context.Context, label string) (int, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	removed := 0
	var errs []error
	f := make(client.Filters).Add("label", label)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("docker: list containers: %w", err)
	}
	var servers, sandboxes []string
	for _, c := range list.Items {
		if ownerAlive(c.Labels[LabelOwner]) {
			continue // a run still in progress
		}
		if c.Labels[labelRole] == roleSandbox {
			sandboxes = append(sandboxes, c.ID)
		} else {
			servers = append(servers, c.ID)
		}
	}
	rmErrs := removeContainers(ctx, cli, servers, sandboxes)
	removed += len(servers) + len(sandboxes) - len(rmErrs)
	errs = append(errs, rmErrs...)
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("docker: list networks: %w", err))...)
	}
	for _, nw := range nets.Items {
		if ownerAlive(nw.Labels[LabelOwner]) {
			continue
		}
		if err := removeNetwork(ctx, cli, nw.ID); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// DockerAvailable reports whether a Docker engine answers within 2 s.
func DockerAvailable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ch := make(chan bool, 1)
	go func() {
		cli, err := dockerClient(ctx)
		if err != nil {
			ch <- false
			return
		}
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
		ch <- err == nil
	}()
	select {
	case ok := <-ch:
		return ok
	case <-ctx.Done():
		return false
	}
}

// EnsureImage builds the node image with cluster/image/build.sh (found from
// the module root) when it is missing, or when the clock shim has been built
// since the image was. The script's output goes to stderr.
func EnsureImage(ctx context.Context) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	img := dockerImage()
	ins, err := cli.ImageInspect(ctx, img)
	switch {
	case err == nil:
		hasShim := ins.Config != nil && ins.Config.Labels[labelImageShim] == "1"
		if hasShim || !hostShimBuilt() {
			return nil
		}
	case !cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker: inspect image %s: %w", img, err)
	}
	script, err := buildScript()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "LOCKFAULT_IMAGE="+img)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker: build image %s with %s: %w", img, script, err)
	}
	return nil
}

// hostShimBuilt reports whether faults/clockshim/libclockshim.so exists
// under the module root.
func hostShimBuilt() bool {
	root, err := moduleRoot()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(root, "faults", "clockshim", "libclockshim.so"))
	return err == nil
}

func buildScript() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "cluster", "image", "build.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("docker: image build script: %w", err)
	}
	return p, nil
}

// moduleRoot is the nearest directory at or above the working directory
// holding go.mod.
func moduleRoot() (string, error) {
	dirs := shimDirs()
	if len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("cannot find the lockfault module root (go.mod) from the working directory")
}

func dockerImage() string {
	if s := os.Getenv("LOCKFAULT_IMAGE"); s != "" {
		return s
	}
	return DockerImage
}

var quietOnce sync.Once

// disableRyuk sets TESTCONTAINERS_RYUK_DISABLED=true unless it is set, and
// refuses any other value: the reaper's image can't be pulled here.
func disableRyuk() error {
	v, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED")
	if !ok {
		return os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if v != "true" {
		return fmt.Errorf("TESTCONTAINERS_RYUK_DISABLED=%q: the docker backend needs it to be \"true\" (Ryuk can't be pulled)", v)
	}
	return nil
}

// quietTestcontainers silences testcontainers' global logger (it prints a
// banner on first connection) unless LOCKFAULT_DOCKER_VERBOSE is set.
func quietTestcontainers() {
	quietOnce.Do(func() {
		if os.Getenv("LOCKFAULT_DOCKER_VERBOSE") == "" {
			tclog.SetDefault(tclog.NewNoopLogger())
		}
	})
}

// dockerClient connects to the engine testcontainers would use.
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	if err := disableRyuk(); err != nil {
		return nil, err
	}
	quietTestcontainers()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	return cli, nil
}

// removeContainers removes each group in turn, each group in parallel, and
// returns one error per container it failed to remove.
func removeContainers(ctx context.Context, cli client.APIClient, groups ...[]string) []error {
	var errs []error
	for _, ids := range groups {
		seen := map[string]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, id := range ids {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := removeContainer(ctx, cli, id); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return errs
}

func removeContainer(ctx context.Context, cli client.APIClient, id string) error {
	_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove container %.12s: %w", id, err)
	}
	return nil
}

func removeNetwork(ctx context.Context, cli client.APIClient, id string) error {
	// Right after its containers are removed, the daemon may still count
	// an endpoint of theirs (a start cut short by Ctrl-C): retry a while,
	// at most networkRemoveRetry (a stale endpoint can outlive the daemon's
	// own cleanup: then the error is reported).
	ctx, cancel := context.WithTimeout(ctx, networkRemoveRetry)
	defer cancel()
	for {
		_, err := cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") {
			return fmt.Errorf("docker: remove network %.12s: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: remove network %.12s: %w", id, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dockerName keeps the characters docker allows in container names.
func dockerName(s string) string {
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

// DockerLeftovers counts the containers and networks of one run that still
// exist (tests use it to prove cleanup).
func DockerLeftovers(ctx context.Context, runID string) (int, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", LabelRun+"="+runID)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, err
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return 0, err
	}
	return len(list.Items) + len(nets.Items), nil
}
