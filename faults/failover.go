package faults

import (
	"context"
	"fmt"
	"time"
)

func init() {
	Register(Info{Name: "promote", Targets: "node",
		Description: "failover by hand: REPLICAOF NO ONE on the target replica and re-point every client to it; heal makes the other nodes its replicas"}, promote{})
	Register(Info{Name: "sentinel-failover", Targets: "none", Params: []string{"within"},
		Description: "wait until the Sentinels agree on a new primary (after the old one died or was cut off), then re-point every client to it, as a Sentinel-aware client would"}, sentinelFailover{})
}

type promote struct{}

func (promote) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	if len(ms) != 1 {
		return nil, fmt.Errorf("promote needs exactly one node, %q names %d", target, len(ms))
	}
	c := env.Cluster()
	if err := c.Promote(ctx, ms[0]); err != nil {
		return nil, err
	}
	if err := env.Repoint(ctx); err != nil {
		return nil, err
	}
	env.Logf("promoted %s; clients re-pointed", ms[0].Name)
	return c.Rejoin, nil
}

type sentinelFailover struct{}

func (sentinelFailover) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	within, err := failoverWithin.duration(p)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	old := c.Primary()
	deadline := time.Now().Add(within)
	for {
		if m := c.SentinelPrimary(ctx); m != nil && m != old {
			c.SetPrimary(m)
			if err := env.Repoint(ctx); err != nil {
				return nil, err
			}
			env.Logf("sentinels promoted %s; clients re-pointed", m.Name)
			return c.Rejoin, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no Sentinel failover within %v", within)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// failoverWithin: how long to wait for the Sentinels (default 30 s).
var failoverWithin = durationSpec{name: "within", def: 30 * time.Second, min: time.Millisecond, max: MaxDuration, example: "20s"}

func (sentinelFailover) Validate(p Params) error {
	_, err := failoverWithin.duration(p)
	return err
}

func (sentinelFailover) injectTime(p Params) time.Duration {
	d, _ := failoverWithin.duration(p)
	return d
}
