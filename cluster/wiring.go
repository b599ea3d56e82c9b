package cluster

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The proxies in front of every node: the peer proxy replicas and Sentinels
// use, one per client per data node, and admin commands to a node.

// PeerProxy names the proxy replicas and Sentinels use to reach a node.
func PeerProxy(node string) string { return peerProxyPrefix + node }

const peerProxyPrefix = "peer>"

// isPeerProxy reports whether a proxy name is one of PeerProxy's.
func isPeerProxy(name string) bool { return strings.HasPrefix(name, peerProxyPrefix) }

// peerAddr is where the other nodes reach n: its PeerAddr when it has one
// (a Docker node: its address on the run network, which a remote daemon's
// harness does not reach), else Addr.
func peerAddr(n Node) string {
	if p, ok := n.(interface{ PeerAddr() string }); ok {
		return p.PeerAddr()
	}
	return n.Addr()
}

// ClientProxy names the proxy a client uses to reach a node.
func ClientProxy(client, node string) string { return client + ">" + node }

// ClientAddrs creates (once) a proxy from client to every data node and
// returns node name -> proxy address.
func (c *Cluster) ClientAddrs(client string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range c.DataNodes() {
		p, err := c.Net.Proxy(ClientProxy(client, m.Name), m.Node.Addr())
		if err != nil {
			return nil, err
		}
		out[m.Name] = p.Listen
	}
	return out, nil
}

// ProbeAddrs creates (once) the harness's own proxy to every data node and
// returns node name -> proxy address. The proxies are named as a client
// called probeClient would have them; no workload has such a client, and
// network faults pick their proxies by the workload's client names, so no
// fault is ever put on them: a probe through them measures the path a
// client's traffic takes (toxiproxy, then the backend's port forwarding),
// not the faults.
func (c *Cluster) ProbeAddrs() (map[string]string, error) { return c.ClientAddrs(probeClient) }

// probeClient names the harness's path probe in proxy names ("probe>n1").
const probeClient = "probe"

// redisClient opens a direct admin connection to a node (not through any
// proxy: the harness's control path is never faulted), authenticated with
// the topology's password on redis nodes (Sentinels run without one).
func (c *Cluster) redisClient(m *Member) *redis.Client {
	opt := &redis.Options{Addr: m.Node.Addr(), DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1}
	if m.Role != RoleSentinel {
		opt.Password = c.Topology.Password
	}
	return redis.NewClient(opt)
}

// Do runs one admin command on a node.
func (c *Cluster) Do(ctx context.Context, m *Member, args ...any) (any, error) {
	r := c.redisClient(m)
	defer r.Close()
	return r.Do(ctx, args...).Result()
}

// Repoint sets every proxy in front of m to m's current address (its peer
// address for the peer proxy, its bus address for a cluster node's bus
// proxy).
func (c *Cluster) Repoint(m *Member) error {
	for _, name := range c.Net.Names("") {
		if strings.HasSuffix(name, ">"+m.Name) {
			upstream := m.Node.Addr()
			if isPeerProxy(name) {
				upstream = peerAddr(m.Node)
			}
			if isBusProxy(name) {
				var err error
				if upstream, err = busAddr(m.Node); err != nil {
					return err
				}
			}
			if err := c.Net.SetUpstream(name, upstream); err != nil {
				return err
			}
		}
	}
	return nil
}
