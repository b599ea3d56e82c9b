package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/worker"
)

func init() {
	Register(Info{Name: "clock-jump", Targets: "node", Params: []string{"by"},
		Unreachable: etcdClock,
		Description: "step the node's realtime clock by=<signed duration> (e.g. +11s, -5s); the monotonic clock is left alone. Heal steps it back"}, clockJump{})
	Register(Info{Name: "clock-drift", Targets: "node", Params: []string{"rate"},
		Unreachable: etcdClock,
		Description: "make the node's realtime clock drift rate=<duration per second> (e.g. 200ms: 20% fast); heal stops the drift and steps back"}, clockDrift{})
	Register(Info{Name: "clock-client", Targets: "client", Params: []string{"by", "every"},
		Description: "step the client's wall clock (the one its lock reads as wall time, with no monotonic reading) by=<signed duration>; every=<duration> steps it again by the same amount at that interval until healed (an operation longer than every spans a step); heal steps it back. A lock that measures validity on the monotonic clock is not moved. Go workers lockfault builds move time.Now itself (the clock overlay); each step is answered with the wall time the lock reads, and a fault no step of which was seen to take effect is not exercised"}, clockClient{})
}

// etcdClock: a node clock fault cannot move an etcd node. etcd (Go) reads
// its clock through the vDSO, which the node clock shim (LD_PRELOAD, libc
// calls) does not reach, so a step would move nothing: it is refused
// before anything starts.
var etcdClock = map[lockfault.TopologyKind]string{
	lockfault.Etcd: "etcd reads its clock through the vDSO, which the node clock shim (LD_PRELOAD) does not reach",
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
	if err := clockMovable(ms); err != nil {
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
	if err := clockMovable(ms); err != nil {
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

// clockMovable refuses a node clock fault on an etcd node before anything
// is moved: etcd (Go) reads its clock through the vDSO, which the clock
// shim (LD_PRELOAD, libc calls) does not reach, so the step would move
// nothing.
func clockMovable(ms []*cluster.Member) error {
	for _, m := range ms {
		if m.Node.Spec().Kind == cluster.KindEtcd {
			return fmt.Errorf("%w: %s is an etcd node: %s", ErrNotReachable, m.Name, etcdClock[lockfault.Etcd])
		}
	}
	return nil
}

// nodeOffset is how far a node's clock (its TIME) is from the harness's,
// read at the middle of the call.
func nodeOffset(ctx context.Context, c *cluster.Cluster, m *cluster.Member) (time.Duration, error) {
	t0 := time.Now()
	v, err := c.Do(ctx, m, "TIME")
	t1 := time.Now()
	if err != nil {
		return 0, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return 0, fmt.Errorf("TIME answered %v", v)
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(a[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("TIME answered %v", v)
	}
	node := time.Unix(sec, usec*1000)
	return node.Sub(t0.Add(t1.Sub(t0) / 2)), nil
}

// effect: the node's TIME is off the harness's clock by about the step.
func (clockJump) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil {
		return nil
	}
	by, _ := clockJumpBy.duration(p)
	return func(ctx context.Context) Effect {
		var fx effects
		for _, m := range ms {
			off, err := nodeOffset(ctx, env.Cluster(), m)
			if err != nil {
				fx.add(false, "%s: TIME: %v", m.Name, err)
				continue
			}
			tol := max(250*time.Millisecond, by.Abs()/4)
			fx.add((off-by).Abs() <= tol, "%s's TIME is %v off the harness's clock (step %v)", m.Name, off.Round(time.Millisecond), by)
		}
		return fx.result()
	}
}

// effect: the node's TIME drifts from the harness's clock at about the
// rate, measured over a short window.
func (clockDrift) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil {
		return nil
	}
	rate, _ := clockDriftRate.duration(p)
	// Long enough for the drift to reach 50ms, at most 1s.
	window := min(time.Second, time.Duration(float64(time.Second)*float64(50*time.Millisecond)/float64(rate.Abs())))
	return func(ctx context.Context) Effect {
		c := env.Cluster()
		first := map[string]time.Duration{}
		var fx effects
		for _, m := range ms {
			off, err := nodeOffset(ctx, c, m)
			if err != nil {
				fx.add(false, "%s: TIME: %v", m.Name, err)
				continue
			}
			first[m.Name] = off
		}
		start := time.Now()
		if sleepCtx(ctx, window) != nil {
			return Effect{Unchecked: true, What: "not checked: the run ended"}
		}
		elapsed := time.Since(start)
		want := time.Duration(float64(rate) * elapsed.Seconds())
		for _, m := range ms {
			o1, ok := first[m.Name]
			if !ok {
				continue
			}
			o2, err := nodeOffset(ctx, c, m)
			if err != nil {
				fx.add(false, "%s: TIME: %v", m.Name, err)
				continue
			}
			d := o2 - o1
			fx.add(d != 0 && (d > 0) == (want > 0) && d.Abs() >= want.Abs()/2, "%s's TIME gained %v in %v (want about %v)", m.Name, d.Round(time.Millisecond), elapsed.Round(time.Millisecond), want.Round(time.Millisecond))
		}
		return fx.result()
	}
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
