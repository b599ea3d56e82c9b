package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "promote", Targets: "node",
		Description: "failover by hand: REPLICAOF NO ONE on the target replica and re-point every client to it; heal makes the other nodes its replicas"}, promote{})
	Register(Info{Name: "sentinel-failover", Targets: "none", Params: []string{"within"},
		Description: "wait until the Sentinels have finished promoting a new primary (after the old one died or was cut off: every Sentinel follows it in one config epoch, none has a failover in progress, it answers ROLE master), then re-point every client to it, as a Sentinel-aware client would"}, sentinelFailover{})
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
		// Only a failover the Sentinels have finished: while the leader
		// still reconfigures the replicas it already names the promoted
		// one, which is no primary to record yet.
		m, why := c.SentinelSettled(ctx)
		if m != nil && m != old {
			c.SetPrimary(m)
			if err := env.Repoint(ctx); err != nil {
				return nil, err
			}
			env.Logf("sentinels promoted %s; clients re-pointed", m.Name)
			return c.Rejoin, nil
		}
		if time.Now().After(deadline) {
			// The Sentinels promoted nothing: the step attacked nothing,
			// which its effect check records (the cycle proves nothing),
			// not a failure of the harness.
			if m != nil && m == old {
				why = "they still follow " + old.Name
			}
			env.Logf("no Sentinel failover within %v: %s", within, why)
			return nil, nil
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

// effect: the promoted node answers ROLE as a master.
func (promote) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil || len(ms) != 1 {
		return nil
	}
	was := nodeRole(ctx, env.Cluster(), ms[0])
	return func(ctx context.Context) Effect {
		eff := roleEffect(ctx, env.Cluster(), ms[0], "")
		if was == "master" {
			// A master made master again: nothing was promoted.
			eff.Seen = false
			eff.What = "already a master before the step: " + eff.What
		}
		return eff
	}
}

// nodeRole is the first word of a node's ROLE ("master", "slave"), or what
// went wrong.
func nodeRole(ctx context.Context, c *cluster.Cluster, m *cluster.Member) string {
	v, err := c.Do(ctx, m, "ROLE")
	if err != nil {
		return "ROLE failed: " + err.Error()
	}
	if a, ok := v.([]any); ok && len(a) > 0 {
		return fmt.Sprint(a[0])
	}
	return fmt.Sprint(v)
}

// effect: the Sentinels' new primary answers ROLE as a master, and it is
// not the old one.
func (sentinelFailover) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	old := env.Cluster().Primary()
	return func(ctx context.Context) Effect {
		c := env.Cluster()
		m := c.Primary()
		if m == nil || m == old {
			what := "the Sentinels promoted nothing"
			if old != nil {
				what += ": " + old.Name + " is still the primary"
			}
			return Effect{What: what}
		}
		was := ""
		if old != nil {
			was = old.Name
		}
		return roleEffect(ctx, c, m, was)
	}
}

// roleEffect reads a promoted node's role (ROLE) and the roles of the
// other data nodes (seen when the promoted node is a master).
func roleEffect(ctx context.Context, c *cluster.Cluster, m *cluster.Member, was string) Effect {
	role := func(x *cluster.Member) string { return nodeRole(ctx, c, x) }
	got := role(m)
	what := fmt.Sprintf("%s is %s (ROLE)", m.Name, got)
	if was != "" {
		what += ", promoted in place of " + was
	}
	var others []string
	for _, x := range c.DataNodes() {
		if x != m && x.Node.Running() {
			others = append(others, x.Name+" "+role(x))
		}
	}
	if len(others) > 0 {
		what += "; " + strings.Join(others, ", ")
	}
	return Effect{Seen: got == "master", What: what}
}
