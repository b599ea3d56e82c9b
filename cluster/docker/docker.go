package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Ports nodes listen on inside their containers.
const (
	DockerRedisPort    = 6379
	DockerSentinelPort = 26379
	DockerEtcdPort     = 2379
	DockerEtcdPeerPort = 2380
	DockerClusterBus   = 16379 // a cluster node's bus
)

// Image paths, labels and timeouts.
const (
	dockerShimPath   = "/lockfault/libclockshim.so"
	labelImageShim   = "lockfault.clockshim" // image label: "1" when the shim is in it
	labelNode        = "lockfault.node"
	labelRole        = "lockfault.role" // roleServer, roleSandbox or roleToxiproxy
	roleServer       = "server"
	roleSandbox      = "sandbox"
	dockerStopWait   = 10 * time.Second
	dockerStartWait  = 15 * time.Second
	dockerCloseLimit = 60 * time.Second
	// networkRemoveRetry bounds retrying a network removal the daemon
	// refused (active endpoints); networkRemoveLimit bounds one request.
	networkRemoveRetry = 5 * time.Second
	networkRemoveLimit = 30 * time.Second
	// containerRemoveRetry bounds retrying a container's removal, a
	// containerRemovePause apart.
	containerRemoveRetry = 30 * time.Second
	containerRemovePause = 500 * time.Millisecond
	// dockerCreateLimit bounds creating and starting one container.
	dockerCreateLimit = 60 * time.Second
	// networkCreateLimit bounds creating the run's network, and then
	// waiting for it to appear after the request was given up on, each
	// looked for networkPoll apart.
	networkCreateLimit = 30 * time.Second
	networkPoll        = 500 * time.Millisecond
)

// Docker runs every node in its own container, all on one bridge network
// made for the run; each node's network namespace (its address) is held by a
// second, sandbox container so that it outlives Kill (see Start).
// Containers, network and volume carry the labels LabelApp=1 and
// LabelRun=<runID>. Nodes reach each other by address or by node name (a DNS
// alias on the run network).
//
// Beside a local daemon (a unix socket), each node's data directory is a
// host temp dir bind-mounted at the same path inside its container, and the
// nodes reach the harness's proxies at ProxyHost, the run network's gateway.
// With a remote daemon (DOCKER_HOST=tcp://..., see docker_remote.go) nothing
// is bind-mounted and nothing needs to reach the harness: data directories
// live on a volume of the run, files go in and out through the API, nodes are
// reached at published ports, and the peer proxies run in a toxiproxy
// container on the run network.
//
// Ryuk (testcontainers' reaper) is disabled, as its image can't be pulled:
// Close removes everything, and CleanDocker removes what a killed harness
// left behind.
type Docker struct {
	runID   string
	prefix  string // container, network and volume name prefix: lockfault-<run>-<rand>
	image   string
	cli     client.APIClient
	netID   string
	netName string
	gateway string
	dir     string // local: host temp dir holding every node's data dir

	remote *dockerRemote // set when the daemon is remote
	caps   dockerCaps

	mu       sync.Mutex
	nodes    []*dockerNode
	closed   bool
	inflight sync.WaitGroup // container requests still running (see create)
}

// NewDocker connects to the Docker engine, makes sure the node image exists
// there (building or loading it, see EnsureImage), and creates the run's
// network (and, with a remote daemon, its volume and toxiproxy container).
func NewDocker(ctx context.Context, runID string) (*Docker, error) {
	if runID == "" {
		return nil, errors.New("docker: empty run id")
	}
	cli, remote, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	d := &Docker{
		runID:  runID,
		prefix: "lockfault-" + cluster.SafeName(runID) + "-" + hex.EncodeToString(suffix),
		image:  dockerImage(),
		cli:    cli,
	}
	ok := false
	defer func() {
		if !ok {
			d.Close(context.Background())
		}
	}()
	if err := d.readCaps(ctx); err != nil {
		return nil, err
	}
	if !remote {
		if d.dir, err = cluster.NewRunDir(cluster.SafeName(runID)); err != nil {
			return nil, err
		}
	}
	if err := d.createNetwork(ctx); err != nil {
		return nil, err
	}
	if remote {
		d.remote = &dockerRemote{d: d}
		if err := d.remote.setup(ctx); err != nil {
			return nil, err
		}
		ok = true
		return d, nil
	}
	if d.gateway == "" {
		return nil, fmt.Errorf("docker: network %s has no IPv4 gateway", d.netName)
	}
	// The harness's proxies listen on the gateway: make sure it can.
	ln, err := net.Listen("tcp", net.JoinHostPort(d.gateway, "0"))
	if err != nil {
		return nil, fmt.Errorf("docker: cannot listen on the network gateway %s: %w (is the daemon in a VM? %s=1 makes the backend work as with a remote daemon)", d.gateway, err, envRemote)
	}
	ln.Close()
	ok = true
	return d, nil
}

// connect reaches the Docker daemon through testcontainers (its reaper
// off: clean-up is by label), says whether the daemon is remote, and makes
// sure the node image is there (built locally, or loaded into the remote
// daemon).
func connect(ctx context.Context) (cli client.APIClient, remote bool, err error) {
	if err := disableRyuk(); err != nil {
		return nil, false, err
	}
	quietTestcontainers()
	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return nil, false, fmt.Errorf("docker: %w", err)
	}
	if !provider.Config().RyukDisabled {
		provider.Close()
		return nil, false, errors.New("docker: testcontainers' reaper (Ryuk) is enabled but its image can't be pulled; set TESTCONTAINERS_RYUK_DISABLED=true")
	}
	cli = provider.Client()
	remote, err = remoteDaemon(cli.DaemonHost())
	if err != nil {
		provider.Close()
		return nil, false, err
	}
	if remote {
		err = ensureRemoteImage(ctx, cli)
	} else {
		err = EnsureImage(ctx)
	}
	if err != nil {
		provider.Close()
		return nil, false, err
	}
	return cli, remote, nil
}

// createNetwork creates the run's bridge network (labelled, named for the
// run) and finds its IPv4 gateway, where the harness's proxies listen.
//
// The request runs to its answer even when ctx ends (Ctrl-C): the daemon
// goes on creating a network whose request the client gave up on, and a
// run that never learnt its ID could not remove it (seen: a campaign
// interrupted while a run created its network left the network behind).
func (d *Docker) createNetwork(ctx context.Context) error {
	d.netName = d.prefix
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), networkCreateLimit)
	defer cancel()
	res, err := d.cli.NetworkCreate(cctx, d.netName, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: d.labels(),
	})
	if err == nil {
		d.netID = res.ID
		err = ctx.Err()
	} else if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// A loaded daemon may answer after the request's limit and create
		// the network anyway (seen: seven hunts starting fourteen runs at
		// once left five networks behind). The run's network is the one of
		// its name and run label: wait for it as long again, and use it.
		if id := d.awaitNetwork(ctx, networkCreateLimit); id != "" {
			d.netID, err = id, nil
		}
	}
	if err != nil {
		hint := ""
		if strings.Contains(err.Error(), "address pool") {
			hint = " (docker's address pools are used up: leftover networks? try `simulate clean`)"
		}
		return fmt.Errorf("docker: create network: %w%s", err, hint)
	}
	ins, err := d.cli.NetworkInspect(ctx, d.netID, client.NetworkInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: inspect network: %w", err)
	}
	for _, c := range ins.Network.IPAM.Config {
		if c.Gateway.IsValid() && c.Gateway.Is4() {
			d.gateway = c.Gateway.String()
			break
		}
	}
	return nil
}

// awaitNetwork looks for the run's network (its name and run label) every
// networkPoll until it appears or wait is over, and returns its ID ("" if
// it never appeared).
func (d *Docker) awaitNetwork(ctx context.Context, wait time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		if ids := d.runNetworks(ctx); len(ids) > 0 {
			return ids[0]
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(networkPoll):
		}
	}
}

// runNetworks lists the networks of the run's network name and run label:
// the one it created, or one a create it gave up on left.
func (d *Docker) runNetworks(ctx context.Context) []string {
	f := make(client.Filters).Add("label", cluster.LabelRun+"="+d.runID).Add("name", d.netName)
	list, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil
	}
	var ids []string
	for _, nw := range list.Items {
		if nw.Name == d.netName { // the name filter matches a part of the name
			ids = append(ids, nw.ID)
		}
	}
	return ids
}

func (d *Docker) Name() string { return "docker" }

// ProxyHost is where the proxies of the harness's own toxiproxy server listen.
// Beside a local daemon it is the gateway IP of the run's network: an
// address of the harness's host that the containers reach directly. With a
// remote daemon only the harness's clients use those proxies (the peer
// proxies are in the run's toxiproxy container): 127.0.0.1.
func (d *Docker) ProxyHost() string {
	if d.remote != nil {
		return "127.0.0.1"
	}
	return d.gateway
}

// Network returns the name of the run's docker network.
func (d *Docker) Network() string { return d.netName }

// Remote reports whether the daemon is remote (see Docker).
func (d *Docker) Remote() bool { return d.remote != nil }

func (d *Docker) labels() map[string]string {
	return map[string]string{cluster.LabelApp: "1", cluster.LabelRun: d.runID, cluster.LabelOwner: strconv.Itoa(os.Getpid()), cluster.LabelHost: harnessHost()}
}

// Start creates a node: first its network sandbox, a container that holds
// the node's network namespace and address for the whole run (a redis-server
// listening on a unix socket only, a few MB), then the server's own
// container, which joins that namespace. Killing the server thus behaves as
// on a real host whose process crashed: its address stays up and refuses
// connections at once, rather than vanishing (connects hanging until ARP gives
// up), and it keeps its address across restarts. With a remote daemon the
// sandbox also publishes the node's port and mounts the run's volume, where
// the node's data directory is.
func (d *Docker) Start(ctx context.Context, spec cluster.NodeSpec) (cluster.Node, error) {
	if d.isClosed() {
		return nil, errors.New("docker backend is closed")
	}
	n, err := d.newNode(spec)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	if spec.ClockShim {
		if err := d.checkShim(ctx); err != nil {
			return nil, err
		}
		env["LD_PRELOAD"] = dockerShimPath
		env["LOCKFAULT_CLOCK_FILE"] = path.Join(n.dir, cluster.ClockFileName)
	}
	name := d.prefix + "-" + cluster.SafeName(spec.Name)
	if err := d.startSandbox(ctx, n, name); err != nil {
		return nil, err
	}
	if err := d.startServer(ctx, n, name, env); err != nil {
		return nil, err
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
	if d.remote != nil {
		return remoteNode{n}, nil
	}
	return n, nil
}

// newNode is a node of spec with its ports (by kind) and its data
// directory (made here, with its config file, beside a local daemon).
func (d *Docker) newNode(spec cluster.NodeSpec) (*dockerNode, error) {
	n := &dockerNode{d: d, spec: spec}
	switch spec.Kind {
	case cluster.KindSentinel:
		n.port = DockerSentinelPort
	case cluster.KindEtcd:
		n.port, n.peerPort = DockerEtcdPort, DockerEtcdPeerPort
	default:
		n.port = DockerRedisPort
		if spec.ClusterBus {
			if d.remote != nil {
				return nil, errors.New("docker: a cluster node needs its bus reachable through the harness's proxies, which a remote daemon's run does not give")
			}
			n.peerPort = DockerClusterBus
		}
	}
	if d.remote != nil {
		n.dir = path.Join(remoteDataRoot, spec.Name)
	} else {
		n.dir = filepath.Join(d.dir, spec.Name)
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, err
		}
		if spec.Config != "" {
			if err := os.WriteFile(filepath.Join(n.dir, "node.conf"), []byte(spec.Config), 0o644); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// startSandbox starts n's sandbox, the container that holds its network
// namespace: on the run network, reachable by the node's name too.
func (d *Docker) startSandbox(ctx context.Context, n *dockerNode, name string) error {
	spec := n.spec
	sbLabels := d.labels()
	sbLabels[labelNode] = spec.Name
	sbLabels[labelRole] = roleSandbox
	sbReq := testcontainers.ContainerRequest{
		Image:          d.image,
		Name:           name + "-net",
		Entrypoint:     []string{"redis-server"},
		Cmd:            []string{"--port", "0", "--unixsocket", "/tmp/sandbox.sock", "--save", "", "--appendonly", "no", "--loglevel", "warning"},
		Labels:         sbLabels,
		Networks:       []string{d.netName},
		NetworkAliases: map[string][]string{d.netName: {spec.Name}},
		ConfigModifier: func(c *container.Config) { c.Hostname = cluster.SafeName(spec.Name) },
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode(d.netName)
		},
	}
	if d.remote != nil {
		d.remote.sandbox(&sbReq, n.port)
	}
	sb, err := d.create(ctx, sbReq)
	if err != nil {
		return fmt.Errorf("docker: create sandbox of %s: %w", spec.Name, err)
	}
	n.sandbox = sb.GetContainerID()
	if err := n.refreshAddr(ctx); err != nil {
		return err
	}
	if d.remote != nil {
		if err := d.remote.makeDataDir(ctx, n.sandbox, spec); err != nil {
			return err
		}
	}
	return nil
}

// startServer starts n's server in its sandbox's namespace, listening on
// the sandbox's address as the process backend's nodes listen on
// 127.0.0.1, its data directory mounted.
func (d *Docker) startServer(ctx context.Context, n *dockerNode, name string, env map[string]string) error {
	spec := n.spec
	bin, args := cluster.Command(spec, n.dir, n.ip(), n.port, n.peerPort)
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
			c.WorkingDir = n.dir
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode("container:" + n.sandbox)
			if d.remote != nil {
				hc.Mounts = append(hc.Mounts, d.remote.volumeMount())
			} else {
				hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: n.dir, Target: n.dir})
			}
			hc.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyDisabled}
		},
	})
	if ctr != nil {
		n.ctr = ctr
		n.id = ctr.GetContainerID()
	}
	if err != nil {
		return fmt.Errorf("docker: create node %s: %w", spec.Name, err)
	}
	return nil
}

func (d *Docker) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// create creates and starts a container through testcontainers. A container
// created after Close began is removed again.
// A cancelled ctx cuts a start short (Ctrl-C must not wait for the daemon,
// which may take seconds per container on a loaded host): create returns at
// once, but the request itself goes on in the background, since the daemon
// may finish making a container whose request was cancelled; Close waits
// for such requests before it lists what to remove, and a container they
// make after Close began is removed by them. The request is bounded by
// dockerCreateLimit.
func (d *Docker) create(ctx context.Context, req testcontainers.ContainerRequest) (testcontainers.Container, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		ctr testcontainers.Container
		err error
	}
	done := make(chan result, 1)
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dockerCreateLimit)
		defer cancel()
		ctr, err := testcontainers.GenericContainer(cctx, testcontainers.GenericContainerRequest{
			ContainerRequest: req,
			Started:          true,
			Logger:           tclog.NewNoopLogger(),
		})
		if ctr != nil && ctr.GetContainerID() != "" && d.isClosed() {
			removeContainer(cctx, d.cli, ctr.GetContainerID())
			ctr, err = nil, errors.New("docker backend is closed")
		}
		done <- result{ctr, err}
	}()
	select {
	case r := <-done:
		return r.ctr, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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

// Close removes every container, the network and the volume of this run,
// then the data directories. It ignores ctx's cancellation: cleanup gets its
// own time.
func (d *Docker) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	nodes := d.nodes
	d.nodes = nil
	d.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dockerCloseLimit)
	defer cancel()
	var errs []error
	// The container requests a cancelled start left running (see create).
	waited := make(chan struct{})
	go func() { d.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-cctx.Done():
		errs = append(errs, errors.New("docker: container requests still running at close"))
	}
	if d.cli != nil && d.runID != "" {
		// Servers and the sandboxes whose namespaces they share, all at
		// once (force removal kills first): one round of the daemon's
		// latency rather than two, so Ctrl-C exits within 2 s.
		var servers, sandboxes []string
		for _, n := range nodes {
			servers = append(servers, n.id)
			sandboxes = append(sandboxes, n.sandbox)
		}
		// Also whatever carries this run's label (a node whose Start failed
		// half way, the toxiproxy container).
		list, err := d.cli.ContainerList(cctx, client.ContainerListOptions{
			All:     true,
			Filters: make(client.Filters).Add("label", cluster.LabelRun+"="+d.runID).Add("name", d.prefix),
		})
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range list.Items {
			if c.Labels[labelRole] == roleServer {
				servers = append(servers, c.ID)
			} else {
				sandboxes = append(sandboxes, c.ID)
			}
		}
		errs = append(errs, removeContainers(cctx, d.cli, append(servers, sandboxes...))...)
		nets := []string{d.netID}
		if d.netID == "" && d.netName != "" {
			// A create given up on: the network may have come after.
			nets = d.runNetworks(cctx)
		}
		for _, id := range nets {
			if id == "" {
				continue
			}
			if err := removeNetwork(cctx, d.cli, id); err != nil {
				errs = append(errs, err)
			}
		}
		if d.remote != nil && d.remote.volume != "" {
			if err := removeVolume(cctx, d.cli, d.remote.volume); err != nil {
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
