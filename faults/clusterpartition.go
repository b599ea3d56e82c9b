package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "cluster-minority-partition", Targets: TargetsNode, Params: []string{ParamClients, "within"}, Topologies: []lockfault.TopologyKind{lockfault.Cluster},
		Description: "cut the target master off from the rest of the cluster, with the clients of clients=<client target> (default none) on its side: the bus both ways between it and every other node, its replication link, the other clients' links to it and its clients' links to every other node. It keeps serving its side's clients until cluster-node-timeout, then refuses writes; the majority fails it over to a replica meanwhile. The step ends once the target sees every other node disconnected (within=<duration>, default 10s); heal joins the sides again"}, clusterPartition{})
}

// clusterPartition is the minority side of a split of the cluster: one
// master and some clients. It needs the bus's per-pair links (package
// cluster's bus routers): a master cut off only on its inbound side would
// still hear the others and learn of its failover at once.
type clusterPartition struct{}

var partitionWithin = durationSpec{name: "within", def: 10 * time.Second, min: time.Millisecond, max: MaxDuration, example: "5s"}

func (clusterPartition) Validate(p Params) error {
	if err := clientsParam(p); err != nil {
		return err
	}
	_, err := partitionWithin.duration(p)
	return err
}

func (clusterPartition) injectTime(p Params) time.Duration {
	d, _ := partitionWithin.duration(p)
	return d
}

// minorityLinks are the proxies the partition cuts, and the target.
func minorityLinks(env Env, target string, p Params) (*cluster.Member, []string, error) {
	m, err := oneClusterNode(env, target, cluster.RoleMaster)
	if err != nil {
		return nil, nil, err
	}
	c := env.Cluster()
	var mine []string
	if ct := p[ParamClients]; ct != "" {
		cls, err := env.Clients(ct)
		if err != nil {
			return nil, nil, err
		}
		for _, cl := range cls {
			mine = append(mine, cl.Name())
		}
	}
	all, err := env.Clients("all")
	if err != nil {
		return nil, nil, err
	}
	links := []string{cluster.PeerProxy(m.Name)}
	for _, x := range c.DataNodes() {
		if x == m {
			continue
		}
		links = append(links, cluster.BusLink(m.Name, x.Name), cluster.BusLink(x.Name, m.Name))
		for _, cl := range all {
			if slices.Contains(mine, cl.Name()) {
				links = append(links, cluster.ClientProxy(cl.Name(), x.Name))
			}
		}
	}
	for _, cl := range all {
		if !slices.Contains(mine, cl.Name()) {
			links = append(links, cluster.ClientProxy(cl.Name(), m.Name))
		}
	}
	return m, links, nil
}

func (clusterPartition) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	within, err := partitionWithin.duration(p)
	if err != nil {
		return nil, err
	}
	m, links, err := minorityLinks(env, target, p)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	var heals []Heal
	for _, name := range links {
		px, err := busOrProxy(c, name)
		if err != nil {
			return healAll(heals), err
		}
		if !strings.HasPrefix(name, "bus>") {
			// Nodes and clients dial this proxy's port: it stays bound.
			hs, err := resetLink(px, "minority-partition")
			heals = append(heals, hs...)
			if err != nil {
				return healAll(heals), err
			}
			continue
		}
		// A bus link only the bus router dials, by name: disabled, so the
		// router closes the node's connection at once and the node sees
		// the link down; a port taken meanwhile gets the link a new one.
		if err := px.Disable(); err != nil {
			return healAll(heals), err
		}
		heals = append(heals, func(context.Context) error {
			if err := px.Enable(); err != nil {
				if !strings.Contains(err.Error(), "address already in use") {
					return err
				}
				return c.Net.Renew(name)
			}
			return nil
		})
	}
	heal := healAll(heals)
	start := time.Now()
	if err := waitDisconnected(ctx, c, m, within); err != nil {
		heal(ctx)
		return nil, fmt.Errorf("cluster-minority-partition of %s: %w", m.Name, err)
	}
	env.Logf("%s cut off from the rest of the cluster: it sees every other node disconnected after %v", m.Name, time.Since(start).Round(time.Millisecond))
	return heal, nil
}

// busOrProxy gets a link's proxy, making a bus pair's that no connection
// has made yet (so a later one is cut too).
func busOrProxy(c *cluster.Cluster, name string) (*toxiclient.Proxy, error) {
	if px, ok := c.Net.Get(name); ok {
		return px, nil
	}
	from, to, ok := strings.Cut(strings.TrimPrefix(name, "bus>"), ">")
	if !strings.HasPrefix(name, "bus>") || !ok || c.Member(from) == nil || c.Member(to) == nil {
		return nil, fmt.Errorf("no proxy %s", name)
	}
	up, ok := c.Member(to).Node.(interface{ BusAddr() string })
	if !ok {
		return nil, fmt.Errorf("%s has no cluster bus", to)
	}
	return c.Net.Proxy(name, up.BusAddr())
}

// disconnectedFrom lists the nodes m's CLUSTER NODES shows connected.
func connectedTo(ctx context.Context, c *cluster.Cluster, m *cluster.Member) ([]string, string, error) {
	v, err := c.Do(ctx, m, "CLUSTER", "NODES")
	if err != nil {
		return nil, "", err
	}
	var conn []string
	self := ""
	for _, line := range strings.Split(strings.TrimSpace(fmt.Sprint(v)), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		if strings.Contains(f[2], "myself") {
			self = line
			continue
		}
		if f[7] == "connected" {
			conn = append(conn, f[1])
		}
	}
	return conn, self, nil
}

// waitDisconnected waits until m sees no other node connected.
func waitDisconnected(ctx context.Context, c *cluster.Cluster, m *cluster.Member, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		conn, _, err := connectedTo(ctx, c, m)
		if err == nil && len(conn) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still connected to %v after %v (%v)", m.Name, conn, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// effect: the target, once cut, sees no other node connected on the bus
// and still serves its slots as a master: a minority master, taking its
// side's writes until cluster-node-timeout.
func (clusterPartition) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	m, _, err := minorityLinks(env, target, p)
	if err != nil {
		return nil
	}
	return func(ctx context.Context) Effect {
		conn, self, err := connectedTo(ctx, env.Cluster(), m)
		if err != nil {
			return Effect{Unchecked: true, What: fmt.Sprintf("CLUSTER NODES on %s: %v", m.Name, err)}
		}
		f := strings.Fields(self)
		master := len(f) > 8 && strings.Contains(f[2], "master")
		return Effect{Seen: len(conn) == 0 && master,
			What: fmt.Sprintf("%s sees %d other node(s) connected and serves %v as a master: %v", m.Name, len(conn), f[min(8, len(f)):], master)}
	}
}
