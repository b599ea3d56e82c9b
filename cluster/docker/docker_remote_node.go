package docker

// A node of a remote run (see docker_remote.go): readiness through a
// published port, and the node shim's files and processes driven through
// the daemon.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// waitServing polls until the server at addr answers a request of its kind
// (PING for redis and Sentinel, GET /version for etcd), the process exits or
// the timeout passes. Any answer will do (-NOAUTH too): through a published
// port a connection is accepted before the server listens.
func waitServing(ctx context.Context, addr, kind string, exited <-chan struct{}, timeout time.Duration) error {
	return cluster.PollReady(ctx, exited, timeout, 20*time.Millisecond, func() error {
		if err := probe(addr, kind); err != nil {
			return fmt.Errorf("%s not serving: %w", addr, err)
		}
		return nil
	})
}

// probe sends one request to the server at addr and reads the first byte of
// its answer.
func probe(addr, kind string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	req := "PING\r\n"
	if kind == cluster.KindEtcd {
		req = "GET /version HTTP/1.0\r\n\r\n"
	}
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return nil
}

// remoteNode is a node of a remote run: its data directory is on the run's
// volume, which the harness reaches through the daemon only.
type remoteNode struct{ *dockerNode }

// nodectl runs lockfault-nodectl in the node's sandbox (running for the
// whole run, with the volume mounted), so it works on a stopped node too.
func (n remoteNode) Nodectl(ctx context.Context, args ...string) ([]byte, error) {
	cli := n.d.cli
	ex, err := cli.ExecCreate(ctx, n.sandbox, client.ExecCreateOptions{
		Cmd:          append([]string{"lockfault-nodectl"}, args...),
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("docker: exec lockfault-nodectl in the sandbox of %s: %w", n.spec.Name, err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker: exec lockfault-nodectl in the sandbox of %s: %w", n.spec.Name, err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, io.LimitReader(att.Reader, nodectlOutput)); err != nil {
		return nil, fmt.Errorf("docker: lockfault-nodectl on %s: %w", n.spec.Name, err)
	}
	for {
		st, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			return nil, fmt.Errorf("docker: lockfault-nodectl on %s: %w", n.spec.Name, err)
		}
		if !st.Running {
			if st.ExitCode != 0 {
				return nil, fmt.Errorf("lockfault-nodectl %v on %s: exit status %d: %s", args, n.spec.Name, st.ExitCode, bytes.TrimSpace(stderr.Bytes()))
			}
			return stdout.Bytes(), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// freezeKill freezes the server's container (the cgroup freezer stops the
// server and every process it forked at once: nothing fsyncs or renames
// after that), then kills it: when the server, the container's first
// process, dies, the kernel kills the rest of its pid namespace. frozen runs
// while the kill is under way.
func (n remoteNode) FreezeKill(ctx context.Context, frozen func() error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	cli := n.d.cli
	kctx, cancel := context.WithTimeout(ctx, dockerStopWait)
	defer cancel()
	if _, err := cli.ContainerPause(kctx, n.id, client.ContainerPauseOptions{}); err != nil {
		if !cerrdefs.IsConflict(err) || n.running(kctx) {
			return fmt.Errorf("docker: freeze %s: %w", n.spec.Name, err)
		}
		// Not running: its files are final already.
		return frozen()
	}
	done := make(chan error, 1)
	go func() { done <- frozen() }()
	wait := cli.ContainerWait(kctx, n.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var err error
	if _, kerr := cli.ContainerKill(kctx, n.id, client.ContainerKillOptions{Signal: "KILL"}); kerr != nil {
		err = fmt.Errorf("docker: kill %s: %w", n.spec.Name, kerr)
	} else {
		select {
		case <-wait.Result:
		case werr := <-wait.Error:
			err = fmt.Errorf("docker: node %s did not die: %w", n.spec.Name, werr)
		}
	}
	ferr := <-done
	if err != nil {
		cli.ContainerUnpause(context.WithoutCancel(ctx), n.id, client.ContainerUnpauseOptions{})
		return err
	}
	return ferr
}
