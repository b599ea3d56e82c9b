package faults

import (
	"context"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/worker"
)

func init() {
	Register(Info{Name: "clock-jump", Targets: "node", Params: []string{"by"},
		Description: "step the node's realtime clock by=<signed duration> (e.g. +11s, -5s); the monotonic clock is left alone. Heal steps it back"}, clockJump{})
	Register(Info{Name: "clock-drift", Targets: "node", Params: []string{"rate"},
		Description: "make the node's realtime clock drift rate=<duration per second> (e.g. 200ms: 20% fast); heal stops the drift and steps back"}, clockDrift{})
	Register(Info{Name: "clock-client", Targets: "client", Params: []string{"by", "every"},
		Description: "step the client's wall clock (the one its lock reads as wall time, with no monotonic reading) by=<signed duration>; every=<duration> steps it again by the same amount at that interval until healed (an operation longer than every spans a step); heal steps it back. A lock that measures validity on the monotonic clock is not moved. Go workers lockfault builds move time.Now itself (the clock overlay); each step is answered with the wall time the lock reads, and a fault no step of which was seen to take effect is not exercised"}, clockClient{})
}

type clockJump struct{}

func (clockJump) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	by, err := clockJumpBy.duration(p)
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
	rate, err := clockDriftRate.duration(p)
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

// maxClientOffset bounds the offset repeated steps reach: the worker
// protocol's bound on offset_ms. Stepping stops there. (One step is bounded
// by MaxDuration.)
const maxClientOffset = worker.MaxOffsetMs * time.Millisecond

func (clockClient) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	cls, err := env.Clients(target)
	if err != nil {
		return nil, err
	}
	by, every, err := clockClientParams(p)
	if err != nil {
		return nil, err
	}
	// The first step reaches every live client, or the fault fails.
	if cls, err = applyClients(cls, func(c Client) error { return c.Send(clockCommand(by)) },
		func(c Client) error { return c.Send(clockCommand(0)) }); err != nil {
		return nil, err
	}
	// set moves the clock of every client the step reached to offset; a
	// client that died since is skipped (its heal has nothing to undo
	// either).
	set := func(offset time.Duration) error {
		return healClients(cls, func(c Client) error { return c.Send(clockCommand(offset)) })
	}
	if every == 0 {
		return func(context.Context) error { return set(0) }, nil
	}
	// Step again every `every` until healed: the offset grows by `by` each
	// time, so every operation longer than `every` spans a step.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		offset := by
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if (offset + by).Abs() > maxClientOffset {
				return
			}
			offset += by
			if set(offset) != nil {
				return
			}
		}
	}()
	return func(context.Context) error {
		close(stop)
		<-stopped
		return set(0)
	}, nil
}

// clockCommand is the worker command that sets a client's clock offset.
func clockCommand(offset time.Duration) worker.Command {
	return worker.Command{Cmd: "clock", OffsetMs: offset.Milliseconds()}
}

// clockClientParams reads by (required) and every (optional: repeat the
// step at this interval while the fault lasts).
func clockClientParams(p Params) (by, every time.Duration, err error) {
	if by, err = clockClientBy.duration(p); err != nil {
		return 0, 0, err
	}
	if _, ok := p["every"]; !ok {
		return by, 0, nil
	}
	if every, err = clockClientEvery.duration(p); err != nil {
		return 0, 0, err
	}
	return by, every, nil
}

// The clock params. A step (by) is signed and not 0; a drift rate is the
// time the clock gains per second (loses, if negative: at most 999ms, or
// it would stand still or run back).
var (
	clockJumpBy      = durationSpec{name: "by", required: true, min: -MaxDuration, max: MaxDuration, nonZero: true, example: "+11s or -5s"}
	clockDriftRate   = durationSpec{name: "rate", required: true, min: -999 * time.Millisecond, max: MaxDuration, nonZero: true, example: "200ms (per second)"}
	clockClientBy    = durationSpec{name: "by", required: true, min: -clientOffset, max: clientOffset, nonZero: true, example: "-2s"}
	clockClientEvery = durationSpec{name: "every", min: 10 * time.Millisecond, max: MaxDuration, example: "50ms; absent: one step"}
)

func (clockJump) Validate(p Params) error {
	_, err := clockJumpBy.duration(p)
	return err
}

func (clockDrift) Validate(p Params) error {
	_, err := clockDriftRate.duration(p)
	return err
}

func (clockClient) Validate(p Params) error {
	_, _, err := clockClientParams(p)
	return err
}
