package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "cluster-manual-failover", Targets: TargetsNode, Params: []string{"mode", "within"}, Topologies: []lockfault.TopologyKind{lockfault.Cluster},
		Description: "CLUSTER FAILOVER on the target replica: mode=default (the replica first catches up with its master's offset), force (no handshake with the master) or takeover (no vote of the other masters either); the step ends once the replica serves its master's slots and the old master follows it (within=<duration>, default 30s). Nothing to heal: the old master stays its replica"}, clusterManualFailover{})
}

type clusterManualFailover struct{}

func clusterMode(p Params) (string, error) {
	switch m := p["mode"]; m {
	case "", "default":
		return "default", nil
	case "force", "takeover":
		return m, nil
	default:
		return "", paramErr("mode", "%q is not allowed (allowed: default, force, takeover)", m)
	}
}

func (clusterManualFailover) Validate(p Params) error {
	if _, err := clusterMode(p); err != nil {
		return err
	}
	_, err := clusterWithin.duration(p)
	return err
}

func (clusterManualFailover) injectTime(p Params) time.Duration {
	d, _ := clusterWithin.duration(p)
	return d
}

func (clusterManualFailover) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	mode, err := clusterMode(p)
	if err != nil {
		return nil, err
	}
	within, err := clusterWithin.duration(p)
	if err != nil {
		return nil, err
	}
	r, err := oneClusterNode(env, target, cluster.RoleReplica)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	args := []any{"CLUSTER", "FAILOVER"}
	if mode != "default" {
		args = append(args, strings.ToUpper(mode))
	}
	start := time.Now()
	if _, err := c.Do(ctx, r, args...); err != nil {
		return nil, fmt.Errorf("cluster failover %s on %s: %w", mode, r.Name, err)
	}
	if _, err := waitPromoted(ctx, c, []*cluster.Member{r}, within); err != nil {
		return nil, fmt.Errorf("cluster-manual-failover of %s: %w", r.Name, err)
	}
	// The old master follows a moment later (until then it still takes
	// writes under force and takeover): the step ends once it has.
	if err := c.WaitClusterOK(ctx, within); err != nil {
		return nil, fmt.Errorf("cluster-manual-failover of %s: %w", r.Name, err)
	}
	if err := c.RefreshClusterRoles(ctx); err != nil {
		return nil, err
	}
	env.Logf("cluster failover %s: %s serves its old master's slots after %v", mode, r.Name, time.Since(start).Round(time.Millisecond))
	return nil, nil
}

// effect: the target replica serves slots as a master once the step
// returns.
func (clusterManualFailover) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	r, err := oneClusterNode(env, target, cluster.RoleReplica)
	if err != nil {
		return nil
	}
	return func(ctx context.Context) Effect {
		return promotedEffect(ctx, env.Cluster(), "its master", []*cluster.Member{r})
	}
}
