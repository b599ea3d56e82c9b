package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
)

// Replication: starting a replicated topology, promoting, restarting and
// re-joining nodes, and waiting for replicas to sync.

// PersistenceArgs are the redis-server flags for a persistence mode.
func PersistenceArgs(mode string) ([]string, error) {
	switch mode {
	case "", "none":
		return nil, nil
	case "aof-always":
		return []string{"--appendonly", "yes", "--appendfsync", "always"}, nil
	case "aof-everysec":
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}, nil
	}
	return nil, fmt.Errorf("unknown persistence %q (allowed: none, aof-always, aof-everysec)", mode)
}

func (c *Cluster) startRedis(ctx context.Context, name, role string, extra []string) (*Member, error) {
	args, err := PersistenceArgs(c.Topology.Persistence)
	if err != nil {
		return nil, err
	}
	if pw := c.Topology.Password; pw != "" {
		args = append(args, "--requirepass", pw, "--masterauth", pw)
	}
	spec := NodeSpec{Name: name, Kind: KindRedis, Args: append(args, extra...), ClockShim: c.Topology.ClockShim, Password: c.Topology.Password}
	if c.Topology.Kind == lockfault.Cluster {
		spec.ClusterBus, spec.Config = true, clusterNodeConfig
	}
	n, err := c.Backend.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	m := &Member{Node: n, Name: name, Role: role}
	c.add(m)
	return m, nil
}

func (c *Cluster) startReplicated(ctx context.Context) error {
	total := 1 + c.Topology.Replicas
	// The nodes first, then a peer proxy in front of each with its real
	// upstream: changing a proxy's upstream later restarts its listener,
	// and a node starting meanwhile could take the port.
	err := c.parallel(ctx, total, func(i int) error {
		role := RolePrimary
		if i > 0 {
			role = RoleReplica
		}
		_, err := c.startRedis(ctx, fmt.Sprintf("n%d", i+1), role, nil)
		return err
	})
	if err != nil {
		return err
	}
	peers := make([]string, total)
	for i := 0; i < total; i++ {
		m := c.Member(fmt.Sprintf("n%d", i+1))
		p, err := c.Net.Proxy(PeerProxy(m.Name), peerAddr(m.Node))
		if err != nil {
			return err
		}
		peers[i] = p.Listen
	}
	ph, pp, _ := net.SplitHostPort(peers[0])
	for i := 0; i < total; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := c.Member(fmt.Sprintf("n%d", i+1))
		if err := c.announceReplica(ctx, m); err != nil {
			return err
		}
		if i > 0 {
			if _, err := c.Do(ctx, m, "REPLICAOF", ph, pp); err != nil {
				return fmt.Errorf("replicaof on %s: %w", m.Name, err)
			}
		}
	}
	if err := c.WaitReplicasSynced(ctx, 10*time.Second); err != nil {
		return err
	}
	if c.Topology.Sentinels == 0 {
		return nil
	}
	conf := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s %[4]d\nsentinel down-after-milliseconds %[1]s 1000\nsentinel failover-timeout %[1]s 2000\nsentinel parallel-syncs %[1]s 1\n",
		SentinelMaster, ph, pp, c.Topology.Sentinels/2+1)
	if pw := c.Topology.Password; pw != "" {
		conf += fmt.Sprintf("sentinel auth-pass %s %s\n", SentinelMaster, pw)
	}
	err = c.parallel(ctx, c.Topology.Sentinels, func(i int) error {
		name := fmt.Sprintf("s%d", i+1)
		n, err := c.Backend.Start(ctx, NodeSpec{Name: name, Kind: KindSentinel, Config: conf})
		if err != nil {
			return err
		}
		c.add(&Member{Node: n, Name: name, Role: RoleSentinel})
		return nil
	})
	if err != nil {
		return err
	}
	return c.WaitSentinelsReady(ctx, 20*time.Second)
}

// Promote turns a replica into the primary by hand (REPLICAOF NO ONE). The
// old primary, if any, becomes a plain member until Rejoin.
func (c *Cluster) Promote(ctx context.Context, m *Member) error {
	if _, err := c.Do(ctx, m, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("promote %s: %w", m.Name, err)
	}
	c.mu.Lock()
	for _, x := range c.members {
		if x.Role == RolePrimary {
			x.Role = RoleReplica
		}
	}
	m.Role = RolePrimary
	c.mu.Unlock()
	return nil
}

// Restart starts a killed node again and re-points the proxies in front of it.
func (c *Cluster) Restart(ctx context.Context, m *Member) error {
	if err := m.Node.Start(ctx); err != nil {
		return err
	}
	if err := c.Repoint(m); err != nil {
		return err
	}
	if c.Topology.Kind == lockfault.Cluster {
		// The cluster itself makes a returning node a replica of
		// whichever node now serves its slots.
		return nil
	}
	// CONFIG SET does not outlive the process: without this the node,
	// once a replica again, would announce its own address, which the
	// Sentinels would add as one more replica, reached around its peer
	// proxy (a partition of the node would not cut them from it).
	if c.Topology.Kind == lockfault.Replicated {
		if err := c.announceReplica(ctx, m); err != nil {
			return err
		}
	}
	if m.Role == RoleReplica {
		// It came back as an empty master: make it follow the primary again.
		return c.Rejoin(ctx)
	}
	return nil
}

// announceReplica makes a replicated node announce its peer proxy as its address
// when it replicates (replica-announce-ip/port): the master lists it there,
// and the Sentinels, which learn replicas from the master's INFO, reach it
// only through that proxy, as the partition faults assume.
func (c *Cluster) announceReplica(ctx context.Context, m *Member) error {
	pp, ok := c.Net.Get(PeerProxy(m.Name))
	if !ok {
		return fmt.Errorf("no peer proxy for %s", m.Name)
	}
	host, port, _ := net.SplitHostPort(pp.Listen)
	if _, err := c.Do(ctx, m, "CONFIG", "SET", "replica-announce-ip", host, "replica-announce-port", port); err != nil {
		return fmt.Errorf("configure %s: %w", m.Name, err)
	}
	return nil
}

// Rejoin makes every redis node other than the primary a replica of it
// through the primary's peer proxy (after a failover by hand).
func (c *Cluster) Rejoin(ctx context.Context) error {
	p := c.Primary()
	if p == nil {
		return fmt.Errorf("no primary")
	}
	pp, ok := c.Net.Get(PeerProxy(p.Name))
	if !ok {
		return fmt.Errorf("no peer proxy for %s", p.Name)
	}
	host, port, _ := net.SplitHostPort(pp.Listen)
	for _, m := range c.WithRole(RoleReplica) {
		if !m.Node.Running() {
			continue
		}
		if _, err := c.Do(ctx, m, "REPLICAOF", host, port); err != nil {
			return fmt.Errorf("rejoin %s: %w", m.Name, err)
		}
	}
	return nil
}

// WaitReplicasSynced waits until every running replica reports its link up.
func (c *Cluster) WaitReplicasSynced(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, m := range c.WithRole(RoleReplica) {
		if !m.Node.Running() {
			continue
		}
		for {
			v, err := c.Do(ctx, m, "INFO", "replication")
			s, _ := v.(string)
			if err == nil && strings.Contains(s, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replica %s not in sync after %v: %v %s", m.Name, timeout, err, s)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}
