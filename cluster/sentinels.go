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

// SentinelsCalm reports whether every Sentinel sees the master it follows up
// and is not failing it over (its flags are just "master"): a primary the
// Sentinels agree on while they are calm will not change under the caller.
func (c *Cluster) SentinelsCalm(ctx context.Context) bool {
	for _, s := range c.WithRole(RoleSentinel) {
		v, err := c.Do(ctx, s, "SENTINEL", "MASTER", SentinelMaster)
		if err != nil || flatten(v)["flags"] != "master" {
			return false
		}
	}
	return true
}

// SentinelPrimary asks the Sentinels which node is the primary, by the peer
// address they report. It returns nil when they do not agree or do not know.
func (c *Cluster) SentinelPrimary(ctx context.Context) *Member {
	var got *Member
	for _, s := range c.WithRole(RoleSentinel) {
		v, err := c.Do(ctx, s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			return nil
		}
		xs, ok := v.([]any)
		if !ok || len(xs) != 2 {
			return nil
		}
		addr := net.JoinHostPort(fmt.Sprint(xs[0]), fmt.Sprint(xs[1]))
		m := c.byPeerAddr(addr)
		if m == nil || (got != nil && got != m) {
			return nil
		}
		got = m
	}
	return got
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
