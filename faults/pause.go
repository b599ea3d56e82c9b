package faults

import (
	"context"
	"syscall"
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

type pauseNode struct{}

func (pauseNode) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
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
