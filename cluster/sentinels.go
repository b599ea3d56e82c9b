package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Sentinels: waiting for them to be ready and calm, and asking them which
// node is the primary.

// WaitSentinelsReady waits until every Sentinel knows the replicas and the
// other Sentinels, so a failover can be authorised.
func (c *Cluster) WaitSentinelsReady(ctx context.Context, timeout time.Duration) error {
	sents := c.WithRole(RoleSentinel)
	deadline := time.Now().Add(timeout)
	for _, s := range sents {
		for {
			v, err := c.Do(ctx, s, "SENTINEL", "MASTER", SentinelMaster)
			ok := false
			if err == nil {
				f := flatten(v)
				ok = f["num-slaves"] == strconv.Itoa(c.Topology.Replicas) && f["num-other-sentinels"] == strconv.Itoa(len(sents)-1) && f["flags"] == "master"
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("sentinel %s not ready after %v: %v %v", s.Name, timeout, v, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// SentinelPrimary asks the Sentinels which node is the primary. It returns
// nil unless they have finished with it (SentinelSettled).
func (c *Cluster) SentinelPrimary(ctx context.Context) *Member {
	m, _ := c.SentinelSettled(ctx)
	return m
}

// SentinelSettled returns the primary the Sentinels agree on once no
// failover of it is under way, or nil and why not. GET-MASTER-ADDR-BY-NAME
// alone is not enough: the Sentinel leading a failover names the promoted
// replica while it still reconfigures the others. Here every Sentinel must
// follow the same master (SENTINEL MASTER's ip and port, one of the nodes'
// peer proxies) in the same config epoch, with flags just "master" (not
// down, no failover in progress), and that node must answer ROLE as a
// master.
func (c *Cluster) SentinelSettled(ctx context.Context) (*Member, string) {
	var got *Member
	epoch := ""
	for _, s := range c.WithRole(RoleSentinel) {
		v, err := c.Do(ctx, s, "SENTINEL", "MASTER", SentinelMaster)
		if err != nil {
			return nil, fmt.Sprintf("%s: SENTINEL MASTER: %v", s.Name, err)
		}
		f := flatten(v)
		addr := net.JoinHostPort(f["ip"], f["port"])
		m := c.byPeerAddr(addr)
		switch {
		case f["flags"] != "master":
			return nil, fmt.Sprintf("%s follows %s with flags %s (failover-state %s)", s.Name, addr, f["flags"], f["failover-state"])
		case m == nil:
			return nil, fmt.Sprintf("%s follows %s, no node's peer proxy", s.Name, addr)
		case got != nil && (m != got || f["config-epoch"] != epoch):
			return nil, fmt.Sprintf("%s follows %s in epoch %s, another Sentinel %s in epoch %s", s.Name, m.Name, f["config-epoch"], got.Name, epoch)
		}
		got, epoch = m, f["config-epoch"]
	}
	if got == nil {
		return nil, "no Sentinels"
	}
	if !got.Node.Running() {
		return nil, got.Name + " is down"
	}
	v, err := c.Do(ctx, got, "ROLE")
	if a, ok := v.([]any); err != nil || !ok || len(a) == 0 || fmt.Sprint(a[0]) != "master" {
		return nil, fmt.Sprintf("the Sentinels follow %s (epoch %s), which answers ROLE %v %v", got.Name, epoch, v, err)
	}
	return got, ""
}

func (c *Cluster) byPeerAddr(addr string) *Member {
	for _, m := range c.Members() {
		if p, ok := c.Net.Get(PeerProxy(m.Name)); ok && p.Listen == addr {
			return m
		}
	}
	return nil
}

// SetPrimary records that m is the primary (after Sentinel promoted it).
func (c *Cluster) SetPrimary(m *Member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.members {
		if x.Role == RolePrimary {
			x.Role = RoleReplica
		}
	}
	m.Role = RolePrimary
}

func flatten(v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = fmt.Sprint(x[i+1])
		}
	case map[any]any:
		for k, v := range x {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return out
}

// SentinelReplicasSettled says why the Sentinels' view of the replicas is
// not yet whole, or "" when it is: every Sentinel knows each running
// replica at its peer proxy, up (flags just "slave"), and no replica at any
// other address (one reached around a peer proxy, which a partition of the
// node would not cut).
func (c *Cluster) SentinelReplicasSettled(ctx context.Context) string {
	for _, s := range c.WithRole(RoleSentinel) {
		v, err := c.Do(ctx, s, "SENTINEL", "REPLICAS", SentinelMaster)
		if err != nil {
			return fmt.Sprintf("%s: SENTINEL REPLICAS: %v", s.Name, err)
		}
		xs, _ := v.([]any)
		seen := map[*Member]bool{}
		for _, x := range xs {
			f := flatten(x)
			addr := net.JoinHostPort(f["ip"], f["port"])
			m := c.byPeerAddr(addr)
			if m == nil || m.Role != RoleReplica {
				return fmt.Sprintf("%s knows a replica at %s (flags %s), not a replica's peer proxy", s.Name, addr, f["flags"])
			}
			if m.Node.Running() && f["flags"] != "slave" {
				return fmt.Sprintf("%s sees replica %s with flags %s", s.Name, m.Name, f["flags"])
			}
			seen[m] = true
		}
		for _, m := range c.WithRole(RoleReplica) {
			if m.Node.Running() && !seen[m] {
				return fmt.Sprintf("%s does not know replica %s", s.Name, m.Name)
			}
		}
	}
	return ""
}
