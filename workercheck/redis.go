package workercheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

// redisStartAttempts bounds the retries when another process took the
// free port first.
const redisStartAttempts = 3

// redisNode is one redis-server process on a loopback port, in its own
// process group and killed with the harness (Pdeathsig), persisting
// nothing.
type redisNode struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// startRedis starts a redis-server on a free loopback port. The port is
// free when asked for but may be taken before the server binds it: the
// server must answer INFO with its own pid, or it is started again on
// another port.
func startRedis(ctx context.Context, dir string) (*redisNode, error) {
	var err error
	for range redisStartAttempts {
		var n *redisNode
		if n, err = startRedisOnce(ctx, dir); err == nil {
			return n, nil
		}
	}
	return nil, err
}

func startRedisOnce(ctx context.Context, dir string) (*redisNode, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	out := &tailBuffer{max: stderrTail}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no", "--logfile", "", "--loglevel", "warning")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	n := &redisNode{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	go func() { cmd.Wait(); close(n.done) }()
	if err := n.waitServing(ctx); err != nil {
		n.kill()
		return nil, fmt.Errorf("redis-server on %s did not start: %w; it wrote %q", n.addr, err, strings.TrimSpace(out.String()))
	}
	return n, nil
}

// waitServing waits until the node answers INFO with its own pid.
func (n *redisNode) waitServing(ctx context.Context) error {
	deadline := time.Now().Add(RedisStartTimeout)
	for {
		conn, err := net.DialTimeout("tcp", n.addr, time.Second)
		if err == nil {
			conn.Close()
			c := lockimpl.NewNodeClient(n.addr, time.Second)
			defer c.Close()
			info, err := c.Info(ctx, "server").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "process_id:"+strconv.Itoa(n.cmd.Process.Pid)+"\r\n") {
				return errors.New("another process answers on its port")
			}
			return nil
		}
		select {
		case <-n.done:
			return errors.New("it exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving after %v: %w", RedisStartTimeout, err)
		}
	}
}

// kill ends the node and waits for it.
func (n *redisNode) kill() error {
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-n.done:
		return nil
	case <-time.After(KillTimeout):
		return fmt.Errorf("redis-server pid %d did not die", n.cmd.Process.Pid)
	}
}
