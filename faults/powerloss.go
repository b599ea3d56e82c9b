package faults

import (
	"context"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "power-loss", Targets: "node", Params: []string{"restart"},
		Description: "crash the node as a power cut would: kill it and cut its AOF/RDB files back to what it had fsync'd (recorded by the node shim). restart=<duration> restarts it after that long (default 0s: at once); restart=never leaves it down until heal"}, powerLoss{})
	Register(Info{Name: "restart", Targets: "node",
		Description: "clean restart for comparison: SHUTDOWN (which fsyncs), then start again"}, cleanRestart{})
}

type powerLoss struct{}

func (powerLoss) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	never, after, err := powerLossRestart(p)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		rep, err := cluster.PowerLoss(ctx, m.Node)
		if err != nil {
			return nil, err
		}
		env.Logf("%s", rep.String())
	}
	restart := restarter(env.Cluster(), ms)
	if never {
		return restart, nil
	}
	if err := sleepCtx(ctx, after); err != nil {
		return nil, err
	}
	return nil, restart(ctx)
}

// effect: the node's process is gone, and restarted under a new pid.
func (powerLoss) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	return restartedEffect(ctx, env, target)
}

type cleanRestart struct{}

// effect: a new process serves.
func (cleanRestart) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	return restartedEffect(ctx, env, target)
}

func (cleanRestart) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	for _, m := range ms {
		// SHUTDOWN closes the connection instead of answering.
		c.Do(ctx, m, "SHUTDOWN")
		for i := 0; i < 200 && m.Node.Running(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		m.Node.Kill(ctx) // reap the exited process
		if err := c.Restart(ctx, m); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (powerLoss) Validate(p Params) error {
	_, _, err := powerLossRestart(p)
	return err
}

// powerLossRestartSpec: absent, the node restarts at once.
var powerLossRestartSpec = restartSpec(0, false, "0s, 10s or never")

func powerLossRestart(p Params) (never bool, after time.Duration, err error) {
	after, never, err = powerLossRestartSpec.read(p)
	return never, after, err
}

func (powerLoss) injectTime(p Params) time.Duration {
	never, after, _ := powerLossRestart(p)
	if never {
		return 0
	}
	return after
}
