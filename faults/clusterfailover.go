package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "cluster-failover", Targets: TargetsNode, Params: []string{"how", "within"}, Topologies: []lockfault.TopologyKind{lockfault.Cluster},
		Description: "the Redis Cluster's own failover of the target master: kill -9 it (how=kill, the default) or stop it (how=pause, SIGSTOP) until the other masters mark it failed after cluster-node-timeout and one of its replicas promotes itself; the step ends once the replica serves the master's slots (within=<duration>, default 30s). Heal restarts (kill) or continues (pause: the old master serves as a master until it hears of its demotion) the old master, which rejoins as a replica, and waits for the cluster to be ok"}, clusterFailover{})
}

// clusterFailover takes a cluster master away and waits for the cluster to
// promote one of its replicas: no harness command promotes anything.
// A master cut off instead is cluster-minority-partition.
type clusterFailover struct{}

// clusterWithin: how long a cluster failover may take (default 30 s).
var clusterWithin = durationSpec{name: "within", def: 30 * time.Second, min: time.Millisecond, max: MaxDuration, example: "10s"}

func clusterHow(p Params) (string, error) {
	switch h := p["how"]; h {
	case "", "kill":
		return "kill", nil
	case "pause":
		return h, nil
	default:
		return "", paramErr("how", "%q is not allowed (allowed: kill, pause)", h)
	}
}

func (clusterFailover) Validate(p Params) error {
	if _, err := clusterHow(p); err != nil {
		return err
	}
	_, err := clusterWithin.duration(p)
	return err
}

func (clusterFailover) injectTime(p Params) time.Duration {
	d, _ := clusterWithin.duration(p)
	return d
}

func (clusterFailover) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	how, err := clusterHow(p)
	if err != nil {
		return nil, err
	}
	within, err := clusterWithin.duration(p)
	if err != nil {
		return nil, err
	}
	m, err := oneClusterNode(env, target, cluster.RoleMaster)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	reps, err := c.ClusterReplicasOf(ctx, m)
	if err != nil {
		return nil, err
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("%s has no replica: the cluster cannot fail it over", m.Name)
	}
	start := time.Now()
	var heal Heal
	switch how {
	case "kill":
		if err := m.Node.Kill(ctx); err != nil {
			return nil, err
		}
		heal = func(ctx context.Context) error {
			if !m.Node.Running() {
				if err := c.Restart(ctx, m); err != nil {
					return err
				}
			}
			return nil
		}
	case "pause":
		if err := m.Node.Signal(ctx, syscall.SIGSTOP); err != nil {
			return nil, err
		}
		heal = func(ctx context.Context) error { return m.Node.Signal(ctx, syscall.SIGCONT) }
	}
	healed := func(ctx context.Context) error {
		if err := heal(ctx); err != nil {
			return err
		}
		if err := c.WaitClusterOK(ctx, 30*time.Second); err != nil {
			return err
		}
		return c.RefreshClusterRoles(ctx)
	}
	promoted, err := waitPromoted(ctx, c, reps, within)
	if err != nil {
		healed(ctx)
		return nil, fmt.Errorf("cluster-failover of %s: %w", m.Name, err)
	}
	env.Logf("cluster promoted %s in place of %s (%s) after %v", promoted.Name, m.Name, how, time.Since(start).Round(time.Millisecond))
	return healed, nil
}

// waitPromoted waits until one of the candidates serves slots as a master
// in the cluster's view, then refreshes every member's role.
func waitPromoted(ctx context.Context, c *cluster.Cluster, candidates []*cluster.Member, within time.Duration) (*cluster.Member, error) {
	deadline := time.Now().Add(within)
	for {
		view, err := c.ClusterView(ctx)
		if err == nil {
			for _, n := range view {
				if n.Member != nil && slices.Contains(candidates, n.Member) && n.Has("master") && len(n.Slots) > 0 {
					return n.Member, c.RefreshClusterRoles(ctx)
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no replica promoted within %v (last view: %v; %s)", within, err, clusterDiag(ctx, c, candidates))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// oneClusterNode resolves a target that must name one cluster node of a
// role (by name, or a role target that picks one).
func oneClusterNode(env Env, target, role string) (*cluster.Member, error) {
	c := env.Cluster()
	if c.Topology.Kind != lockfault.Cluster {
		return nil, fmt.Errorf("needs a cluster topology, not %s", c.Topology.Kind)
	}
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	if len(ms) != 1 {
		return nil, fmt.Errorf("needs exactly one node, %q names %d", target, len(ms))
	}
	if ms[0].Role != role {
		return nil, fmt.Errorf("%s is a %s now, not a %s", ms[0].Name, ms[0].Role, role)
	}
	return ms[0], nil
}

// effect: a replica of the target serves slots as a master in the
// cluster's view once the step returns (the target's replicas are read
// before it is taken away).
func (clusterFailover) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	m, err := oneClusterNode(env, target, cluster.RoleMaster)
	if err != nil {
		return nil
	}
	reps, err := env.Cluster().ClusterReplicasOf(ctx, m)
	if err != nil {
		return nil
	}
	return func(ctx context.Context) Effect { return promotedEffect(ctx, env.Cluster(), m.Name, reps) }
}

// promotedEffect reads the cluster's view: seen when one of candidates
// serves slots as a master.
func promotedEffect(ctx context.Context, c *cluster.Cluster, of string, candidates []*cluster.Member) Effect {
	view, err := c.ClusterView(ctx)
	if err != nil {
		return Effect{Unchecked: true, What: fmt.Sprintf("CLUSTER NODES: %v", err)}
	}
	for _, n := range view {
		if n.Member != nil && slices.Contains(candidates, n.Member) && n.Has("master") && len(n.Slots) > 0 {
			return Effect{Seen: true, What: fmt.Sprintf("%s serves slots %v as a master in place of %s", n.Member.Name, n.Slots, of)}
		}
	}
	return Effect{What: fmt.Sprintf("no replica of %s serves slots as a master", of)}
}

// clusterDiag sums up, for an error, how each running node sees the
// cluster (its state, and the flags it gives every other node) and what
// each candidate says of its replication.
func clusterDiag(ctx context.Context, c *cluster.Cluster, candidates []*cluster.Member) string {
	var parts []string
	for _, m := range c.DataNodes() {
		if !m.Node.Running() {
			continue
		}
		v, err := c.Do(ctx, m, "CLUSTER", "NODES")
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", m.Name, err))
			continue
		}
		var flags []string
		for _, line := range strings.Split(strings.TrimSpace(fmt.Sprint(v)), "\n") {
			if f := strings.Fields(line); len(f) >= 8 {
				flags = append(flags, f[1]+"="+f[2]+"/"+f[7])
			}
		}
		info, _ := c.Do(ctx, m, "CLUSTER", "INFO")
		state := ""
		for _, l := range strings.Fields(fmt.Sprint(info)) {
			if strings.HasPrefix(l, "cluster_state:") || strings.HasPrefix(l, "cluster_current_epoch:") {
				state += l + " "
			}
		}
		parts = append(parts, fmt.Sprintf("%s: %s[%s]", m.Name, state, strings.Join(flags, " ")))
	}
	for _, r := range candidates {
		if v, err := c.Do(ctx, r, "INFO", "replication"); err == nil {
			for _, l := range strings.Fields(fmt.Sprint(v)) {
				if strings.HasPrefix(l, "master_link_down_since_seconds:") || strings.HasPrefix(l, "role:") {
					parts = append(parts, r.Name+" "+l)
				}
			}
		}
	}
	return strings.Join(parts, "; ")
}
