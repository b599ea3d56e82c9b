package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

type dockerNode struct {
	d        *Docker
	spec     cluster.NodeSpec
	dir      string // local: a host path, bind-mounted; remote: a path on the run's volume
	port     int
	peerPort int
	id       string // the server's container
	ctr      testcontainers.Container
	sandbox  string // the container holding the network namespace

	mu     sync.Mutex // serialises Kill, Start and Signal
	addrMu sync.Mutex // guards the addresses alone: Addr never waits for a Start
	sbIP   string     // the sandbox's IP on the run network
	addr   string
}

func (n *dockerNode) Spec() cluster.NodeSpec { return n.spec }

func (n *dockerNode) Port() int { return n.port }

// DataDir is the node's data directory: beside a local daemon a path on the
// harness's host, bind-mounted at the same path; with a remote daemon a path
// on the run's volume, inside the node's containers only.
func (n *dockerNode) DataDir() string { return n.dir }

// ContainerID is the docker id of the server's container.
func (n *dockerNode) ContainerID() string { return n.id }

// Addr is where the harness reaches the node: beside a local daemon its IP
// on the run network (its sandbox's, so it stays for the whole run) and its
// port; with a remote daemon the daemon's host and the port the sandbox
// publishes. Start re-reads it all the same.
func (n *dockerNode) Addr() string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.addr
}

// PeerAddr is where the other nodes (and the run's toxiproxy container)
// reach the node: its IP on the run network and its port.
func (n *dockerNode) PeerAddr() string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return net.JoinHostPort(n.sbIP, strconv.Itoa(n.port))
}

// BusAddr is where a cluster node's bus listens (ClusterBus nodes only):
// its IP on the run network, which the bus links (toxiproxy) reach.
func (n *dockerNode) BusAddr() string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return net.JoinHostPort(n.sbIP, strconv.Itoa(n.peerPort))
}

// SourceAddr is the address the node's outgoing connections come from:
// its address on the run network.
func (n *dockerNode) SourceAddr() string { return n.ip() }

func (n *dockerNode) ip() string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.sbIP
}

// refreshAddr reads the node's addresses from its sandbox.
func (n *dockerNode) refreshAddr(ctx context.Context) error {
	ins, err := n.d.cli.ContainerInspect(ctx, n.sandbox, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: inspect sandbox of %s: %w", n.spec.Name, err)
	}
	c := ins.Container
	if c.State == nil || !c.State.Running {
		return fmt.Errorf("docker: the sandbox of node %s is not running", n.spec.Name)
	}
	if c.NetworkSettings == nil || c.NetworkSettings.Networks[n.d.netName] == nil || !c.NetworkSettings.Networks[n.d.netName].IPAddress.IsValid() {
		return fmt.Errorf("docker: node %s has no address on network %s", n.spec.Name, n.d.netName)
	}
	ip := c.NetworkSettings.Networks[n.d.netName].IPAddress.String()
	addr := net.JoinHostPort(ip, strconv.Itoa(n.port))
	if n.d.remote != nil {
		if addr, err = n.d.remote.published(c, n.port); err != nil {
			return fmt.Errorf("docker: node %s: %w", n.spec.Name, err)
		}
	}
	n.addrMu.Lock()
	n.sbIP, n.addr = ip, addr
	n.addrMu.Unlock()
	return nil
}

// ready waits for the node to serve, refreshing its address. n.mu is held.
func (n *dockerNode) ready(ctx context.Context) error {
	if err := n.refreshAddr(ctx); err != nil {
		return err
	}
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
	var err error
	if n.d.remote != nil {
		// A published port accepts connections before the node listens
		// (the daemon's proxy does): wait for an answer.
		err = waitServing(ctx, addr, n.spec.Kind, exited, dockerStartWait)
	} else {
		err = cluster.WaitListening(ctx, addr, exited, dockerStartWait)
	}
	if err != nil {
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
	return "\n" + cluster.Tail(b, 2000)
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
