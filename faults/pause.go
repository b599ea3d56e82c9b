package faults

import (
	"context"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "pause-client", Targets: "client",
		Description: "SIGSTOP the client's process (a stop-the-world pause: its renewal goroutines freeze too); heal sends SIGCONT"}, pauseClient{})
	Register(Info{Name: "pause-node", Targets: "node",
		Description: "SIGSTOP the server process; heal sends SIGCONT"}, pauseNode{})
}

type pauseClient struct{}

func (pauseClient) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	cls, err := env.Clients(target)
	if err != nil {
		return nil, err
	}
	cont := func(c Client) error { return c.Signal(syscall.SIGCONT) }
	cls, err = applyClients(cls, func(c Client) error { return c.Signal(syscall.SIGSTOP) }, cont)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { return healClients(cls, cont) }, nil
}

// effect: the clients' processes are stopped (state T).
func (pauseClient) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	return func(context.Context) Effect {
		cls, err := env.Clients(target)
		if err != nil {
			return Effect{Unchecked: true, What: "not checked: " + err.Error()}
		}
		var fx effects
		for _, c := range cls {
			s := c.Proc()
			fx.add(s.Stopped(), "%s stopped: %v", c.Name(), s)
		}
		return fx.result()
	}
}

type pauseNode struct{}

// effect: the nodes' server processes are stopped (state T).
func (pauseNode) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil {
		return nil
	}
	return func(ctx context.Context) Effect {
		// SIGSTOP is delivered asynchronously: give the group stop a
		// moment (a loaded machine took several ms) before judging.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			pending := false
			for _, m := range ms {
				if s, err := cluster.NodeProc(ctx, m.Node); err == nil && s.Pid != 0 && !s.Stopped() {
					pending = true
				}
			}
			if !pending || sleepCtx(ctx, time.Millisecond) != nil {
				break
			}
		}
		return nodesEffect(ctx, ms, func(m *cluster.Member, now cluster.ProcState, fx *effects) {
			if now.Pid != 0 && now.State == "" {
				fx.cannot("%s: %v, its state is not readable from here", m.Name, now)
				return
			}
			fx.add(now.Stopped(), "%s stopped: %v", m.Name, now)
		})
	}
}

func (pauseNode) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if !m.Node.Running() {
			// A node that is down (killed, not restarted) has no
			// process to stop: its effect check says so.
			env.Logf("pause-node: %s is down: nothing to stop", m.Name)
			continue
		}
		if err := m.Node.Signal(ctx, syscall.SIGSTOP); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		var first error
		for _, m := range ms {
			if m.Node.Running() {
				if err := m.Node.Signal(ctx, syscall.SIGCONT); err != nil && first == nil {
					first = err
				}
			}
		}
		return first
	}, nil
}
