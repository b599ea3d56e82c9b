package faults

import (
	"context"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/worker"
)

func init() {
	Register(Info{Name: "clock-jump", Targets: "node", Params: []string{"by"},
		Description: "step the node's realtime clock by=<signed duration> (e.g. +11s, -5s); the monotonic clock is left alone. Heal steps it back"}, clockJump{})
	Register(Info{Name: "clock-drift", Targets: "node", Params: []string{"rate"},
		Description: "make the node's realtime clock drift rate=<duration per second> (e.g. 200ms: 20% fast); heal stops the drift and steps back"}, clockDrift{})
	Register(Info{Name: "clock-client", Targets: "client", Params: []string{"by"},
		Description: "step the clock a client's lock uses to compute validity by=<signed duration>; heal steps it back"}, clockClient{})
}

type clockJump struct{}

func (clockJump) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	by, err := p.durationParam("by", 0, true, "+11s or -5s")
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := cluster.SetClockOffset(m.Node, by); err != nil {
			return nil, err
		}
	}
	return func(context.Context) error {
		for _, m := range ms {
			if err := cluster.SetClockOffset(m.Node, 0); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

type clockDrift struct{}

func (clockDrift) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	rate, err := p.durationParam("rate", 0, true, "200ms (per second)")
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := cluster.SetClockDrift(m.Node, rate); err != nil {
			return nil, err
		}
	}
	return func(context.Context) error {
		for _, m := range ms {
			if err := cluster.SetClockDrift(m.Node, 0); err != nil {
				return err
			}
			if err := cluster.SetClockOffset(m.Node, 0); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

type clockClient struct{}

func (clockClient) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	cls, err := env.Clients(target)
	if err != nil {
		return nil, err
	}
	by, err := p.durationParam("by", 0, true, "-2s")
	if err != nil {
		return nil, err
	}
	for _, c := range cls {
		if err := c.Send(worker.Command{Cmd: "clock", OffsetMs: by.Milliseconds()}); err != nil {
			return nil, err
		}
	}
	return func(context.Context) error {
		for _, c := range cls {
			if err := c.Send(worker.Command{Cmd: "clock", OffsetMs: 0}); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func (clockJump) Validate(p Params) error {
	_, err := p.durationParam("by", 0, true, "+11s or -5s")
	return err
}

func (clockDrift) Validate(p Params) error {
	_, err := p.durationParam("rate", 0, true, "200ms (per second)")
	return err
}

func (clockClient) Validate(p Params) error {
	_, err := p.durationParam("by", 0, true, "-2s")
	return err
}
