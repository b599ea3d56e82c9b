package faults

import (
	"context"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "kill", Targets: "node", Params: []string{"restart"},
		Description: "kill -9 the node; heal restarts it with the same data dir. restart=<duration> restarts by itself after that long (0s: at once)"}, kill{})
}

// kill sends SIGKILL to nodes. A plain kill -9 loses nothing the node wrote:
// the page cache survives. For lost unsynced writes use power-loss.
type kill struct{}

func (kill) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	after, err := p.durationParam("restart", -1, false, "0s or 10s")
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := m.Node.Kill(ctx); err != nil {
			return nil, err
		}
	}
	restart := restarter(env.Cluster(), ms)
	if after >= 0 {
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

func (kill) Validate(p Params) error {
	_, err := p.durationParam("restart", -1, false, "0s or 10s")
	return err
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
