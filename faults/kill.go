package faults

import (
	"context"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "kill", Targets: "node", Params: []string{"restart"},
		Description: "kill -9 the node; heal restarts it with the same data dir. restart=<duration> restarts by itself after that long (0s: at once; default never: the heal restarts it)"}, kill{})
}

// kill sends SIGKILL to nodes. A plain kill -9 loses nothing the node wrote:
// the page cache survives. For lost unsynced writes use power-loss.
type kill struct{}

func (kill) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	after, never, err := killRestart.read(p)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := m.Node.Kill(ctx); err != nil {
			return nil, err
		}
	}
	restart := restarter(env.Cluster(), ms)
	if !never {
		select {
		case <-ctx.Done():
		case <-time.After(after):
		}
		if err := restart(ctx); err != nil {
			return nil, err
		}
		env.Logf("restarted %s", target)
		return nil, nil
	}
	return restart, nil
}

// effect: the node's process is gone, and restarted under a new pid when
// the step restarts it.
func (kill) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	return restartedEffect(ctx, env, target)
}

// killRestart: absent, the killed node stays down until the heal.
var killRestart = restartSpec(0, true, "0s or 10s")

func (kill) Validate(p Params) error {
	_, _, err := killRestart.read(p)
	return err
}

func (kill) injectTime(p Params) time.Duration {
	d, never, _ := killRestart.read(p)
	if never {
		return 0
	}
	return d
}

// restarter restarts whichever of the members is down (the heal of every
// fault that takes nodes down).
func restarter(c *cluster.Cluster, ms []*cluster.Member) Heal {
	return func(ctx context.Context) error {
		for _, m := range ms {
			if !m.Node.Running() {
				if err := c.Restart(ctx, m); err != nil {
					return err
				}
			}
		}
		return nil
	}
}
