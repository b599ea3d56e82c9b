package docker

// The Docker backend with a remote daemon (DOCKER_HOST=tcp://...): the
// daemon's host is not the harness's, so nothing is bind-mounted from the
// harness's file system, and the containers never connect to the harness.
//
//   - Data directories live on a volume of the run, mounted at
//     remoteDataRoot in every node's sandbox and server; node.conf goes in
//     through the API (CopyToContainer), the node shim's files are driven by
//     lockfault-nodectl run with `docker exec` in the node's sandbox (see
//     remoteNode).
//   - Each sandbox publishes its node's port: the harness reaches the node at
//     the daemon's host and that port (Addr), the other nodes at its address
//     on the run network (PeerAddr).
//   - The proxies between nodes (replication links, Sentinels) are in a
//     toxiproxy server of the run's own, a container from the node image on
//     the run network; the harness drives it through its published API port
//     (see NetFor). The clients' proxies stay in the harness's own
//     toxiproxy, in front of the published ports.

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

const (
	// remoteDataRoot is where the run's volume is mounted: node n's data
	// directory is remoteDataRoot/n.
	remoteDataRoot = "/lockfault-data"
	// roleToxiproxy labels the run's toxiproxy container.
	roleToxiproxy = "toxiproxy"
	// toxiproxyPort is the toxiproxy API's port inside its container.
	toxiproxyPort = 8474
	// toxiproxyWait bounds waiting for the toxiproxy container's API.
	toxiproxyWait = 15 * time.Second
	// nodectlOutput bounds what lockfault-nodectl may print.
	nodectlOutput = 1 << 20
	// envRemote forces the remote design on a local daemon (to compare the
	// two): "1"; "0" or unset leaves it to the daemon's address.
	envRemote = "LOCKFAULT_DOCKER_REMOTE"
)

// remoteDaemon reports whether the daemon at daemonURL (as the client holds
// it: unix:///..., tcp://host:port) is to be treated as remote: any daemon
// not reached through a unix socket (or a Windows pipe), whose host's file
// system the harness cannot know it shares. LOCKFAULT_DOCKER_REMOTE=1 forces
// it.
func remoteDaemon(daemonURL string) (bool, error) {
	switch v := os.Getenv(envRemote); v {
	case "1":
		return true, nil
	case "", "0":
	default:
		return false, fmt.Errorf("%s=%q: not allowed (allowed: 1 to use the remote design with any daemon, 0 or unset to decide by DOCKER_HOST)", envRemote, v)
	}
	u, err := url.Parse(daemonURL)
	if err != nil {
		return false, fmt.Errorf("docker: daemon address %q: %w", daemonURL, err)
	}
	return u.Scheme != "unix" && u.Scheme != "npipe", nil
}

// daemonHost is where the ports a remote daemon publishes are reached:
// TESTCONTAINERS_HOST_OVERRIDE when set, else the host of the daemon's
// address (tcp://host:port), else (a local socket) 127.0.0.1.
func daemonHost(daemonURL string) (string, error) {
	if h := os.Getenv("TESTCONTAINERS_HOST_OVERRIDE"); h != "" {
		return h, nil
	}
	u, err := url.Parse(daemonURL)
	if err != nil {
		return "", fmt.Errorf("docker: daemon address %q: %w", daemonURL, err)
	}
	switch u.Scheme {
	case "tcp", "http", "https":
		if u.Hostname() == "" {
			return "", fmt.Errorf("docker: daemon address %q has no host", daemonURL)
		}
		return u.Hostname(), nil
	}
	return "127.0.0.1", nil
}

// bindAddr is the address published ports bind to on the daemon's host:
// loopback when the harness reaches the daemon over loopback, else all of
// the host's addresses (the harness is elsewhere).
func bindAddr(host string) netip.Addr {
	if host == "localhost" {
		return netip.MustParseAddr("127.0.0.1")
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
		return a
	}
	return netip.Addr{}
}

// dockerRemote is what a remote run adds to the Docker backend.
type dockerRemote struct {
	d       *Docker
	host    string     // where published ports are reached
	bind    netip.Addr // what they bind to on the daemon's host (zero: all)
	volume  string     // the run's volume, holding every node's data dir
	toxiAPI string     // host:port of the toxiproxy container's API
	toxiIP  string     // its IP on the run network: the peer proxies listen there
}

// setup creates the run's volume and toxiproxy container. What it made is
// removed by the backend's Close.
func (r *dockerRemote) setup(ctx context.Context) error {
	d := r.d
	var err error
	if r.host, err = daemonHost(d.cli.DaemonHost()); err != nil {
		return err
	}
	r.bind = bindAddr(r.host)
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: d.prefix, Labels: d.labels()}); err != nil {
		return fmt.Errorf("docker: create volume: %w", err)
	}
	r.volume = d.prefix
	labels := d.labels()
	labels[labelRole] = roleToxiproxy
	req := testcontainers.ContainerRequest{
		Image:          d.image,
		Name:           d.prefix + "-toxiproxy",
		Entrypoint:     []string{"toxiproxy-server"},
		Cmd:            []string{"-host", "0.0.0.0", "-port", strconv.Itoa(toxiproxyPort)},
		Labels:         labels,
		Networks:       []string{d.netName},
		NetworkAliases: map[string][]string{d.netName: {"toxiproxy"}},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode(d.netName)
		},
	}
	r.publish(&req, toxiproxyPort)
	if _, err := d.create(ctx, req); err != nil {
		return fmt.Errorf("docker: create the toxiproxy container: %w", err)
	}
	ins, err := d.cli.ContainerInspect(ctx, req.Name, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: inspect the toxiproxy container: %w", err)
	}
	c := ins.Container
	if c.NetworkSettings == nil || c.NetworkSettings.Networks[d.netName] == nil || !c.NetworkSettings.Networks[d.netName].IPAddress.IsValid() {
		return fmt.Errorf("docker: the toxiproxy container has no address on network %s", d.netName)
	}
	r.toxiIP = c.NetworkSettings.Networks[d.netName].IPAddress.String()
	if r.toxiAPI, err = r.published(c, toxiproxyPort); err != nil {
		return fmt.Errorf("docker: the toxiproxy container: %w", err)
	}
	return waitToxiproxy(ctx, r.toxiAPI, toxiproxyWait)
}

// waitToxiproxy polls the toxiproxy API at addr until it answers /version.
func waitToxiproxy(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/version", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: the toxiproxy container's API at %s did not answer within %v: %v", addr, timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// publish makes the container publish port (tcp) on the daemon's host, at a
// port the daemon picks, bound to r.bind. (testcontainers keeps the bindings
// of exposed ports only.)
func (r *dockerRemote) publish(req *testcontainers.ContainerRequest, port int) {
	p, _ := network.PortFrom(uint16(port), network.TCP)
	req.ExposedPorts = append(req.ExposedPorts, p.String())
	hm := req.HostConfigModifier
	req.HostConfigModifier = func(hc *container.HostConfig) {
		if hm != nil {
			hm(hc)
		}
		if hc.PortBindings == nil {
			hc.PortBindings = network.PortMap{}
		}
		hc.PortBindings[p] = []network.PortBinding{{HostIP: r.bind}}
	}
}

// sandbox makes a node's sandbox request publish the node's port and mount
// the run's volume.
func (r *dockerRemote) sandbox(req *testcontainers.ContainerRequest, port int) {
	r.publish(req, port)
	hm := req.HostConfigModifier
	req.HostConfigModifier = func(hc *container.HostConfig) {
		hm(hc)
		hc.Mounts = append(hc.Mounts, r.volumeMount())
	}
}

func (r *dockerRemote) volumeMount() mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: r.volume, Target: remoteDataRoot}
}

// published is host:port where the daemon publishes port of container c.
func (r *dockerRemote) published(c container.InspectResponse, port int) (string, error) {
	p, _ := network.PortFrom(uint16(port), network.TCP)
	if c.NetworkSettings != nil {
		for _, b := range c.NetworkSettings.Ports[p] {
			if b.HostPort != "" {
				return net.JoinHostPort(r.host, b.HostPort), nil
			}
		}
	}
	return "", fmt.Errorf("port %d is not published", port)
}

// makeDataDir creates a node's data directory on the run's volume, with its
// node.conf, through the node's (running) sandbox.
func (r *dockerRemote) makeDataDir(ctx context.Context, sandbox string, spec cluster.NodeSpec) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	hdrs := []*tar.Header{{Typeflag: tar.TypeDir, Name: spec.Name + "/", Mode: 0o755, ModTime: now}}
	if spec.Config != "" {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeReg, Name: spec.Name + "/node.conf", Mode: 0o644, Size: int64(len(spec.Config)), ModTime: now})
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, spec.Config); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := r.d.cli.CopyToContainer(ctx, sandbox, client.CopyToContainerOptions{DestinationPath: remoteDataRoot, Content: &buf})
	if err != nil {
		return fmt.Errorf("docker: copy the data directory of %s in: %w", spec.Name, err)
	}
	return nil
}

// removeVolume removes a volume; one that is gone already is no error.
func removeVolume(ctx context.Context, cli client.APIClient, name string) error {
	_, err := cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove volume %s: %w", name, err)
	}
	return nil
}

// peerToxiproxy is the run's toxiproxy container: its API, reached from the
// harness, and the host its proxies listen on, reached from the nodes (see
// NetFor). ok is false beside a local daemon.
func (d *Docker) PeerToxiproxy() (api, host string, ok bool) {
	if d.remote == nil {
		return "", "", false
	}
	return d.remote.toxiAPI, d.remote.toxiIP, true
}
