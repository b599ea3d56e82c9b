package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
)

// Redis Cluster: N masters sharing the 16384 slots, R replicas each, every
// node reachable only through proxies.
//
// Each node announces (cluster-announce-ip/-port/-bus-port) the address of
// its peer proxy (PeerProxy, the data port) and of its bus router (see
// busrouter.go). So every address the cluster hands out (MOVED, ASK,
// CLUSTER SLOTS/SHARDS/NODES) is a proxy's: a client that follows a
// redirection, a replica's replication link and the other nodes' gossip all
// go through a proxy, and a network fault on it reaches them. A client of
// the workload reaches the nodes through its own proxies ("c1>n2") by
// mapping each announced address to its proxy (ClientRemap), as go-redis's
// Dialer or redis-py's address_remap can. The bus runs one proxy per
// ordered pair of nodes (BusLink), so a node can be cut off from some
// nodes and not others, both ways.
//
// Nodes are named n1..nM for the masters and n(M*(j+1)+i) for replica j
// (0-based) of master i (with 3 masters and 1 replica each: n4 follows n1,
// n5 n2, n6 n3).

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// DefaultNodeTimeout is a cluster's cluster-node-timeout when the topology
// sets none: short, so failovers in tests take seconds, long enough that a
// loaded machine does not fail nodes on its own.
const DefaultNodeTimeout = 2 * time.Second

// Cluster sizes (the scenario format checks them with these bounds).
const (
	MinClusterMasters  = 3
	MaxClusterMasters  = 7
	MaxClusterReplicas = 2
)

const busProxyPrefix = "bus>"

func isBusProxy(name string) bool { return strings.HasPrefix(name, busProxyPrefix) }

// clusterNodeConfig is a cluster node's node.conf before the harness
// rewrites it with the announced addresses.
const clusterNodeConfig = "# lockfault cluster node: the harness rewrites this file (CONFIG REWRITE)\n"

// busAddr is where a cluster node's bus listens.
func busAddr(n Node) (string, error) {
	b, ok := n.(interface{ BusAddr() string })
	if !ok {
		return "", fmt.Errorf("node %s has no cluster bus on this backend", n.Spec().Name)
	}
	return b.BusAddr(), nil
}

// ClusterNodeName names replica j (0-based; -1 for the master itself) of
// master i (1-based) in a cluster of masters masters.
func ClusterNodeName(masters, i, j int) string { return fmt.Sprintf("n%d", masters*(j+1)+i) }

// nodeTimeout is the cluster's cluster-node-timeout.
func (t Topology) nodeTimeout() time.Duration {
	if t.NodeTimeout > 0 {
		return t.NodeTimeout
	}
	return DefaultNodeTimeout
}

// CanRun says whether backend b can run a topology of kind k: a cluster
// cannot run beside a remote Docker daemon, where its nodes' bus would
// bypass the harness's proxies. The runner asks before anything starts.
func CanRun(b Backend, k lockfault.TopologyKind) error {
	if d, ok := b.(interface{ Remote() bool }); ok && d.Remote() && k == lockfault.Cluster {
		return errors.New("a cluster cannot run beside a remote Docker daemon, where its nodes' bus would bypass the harness's proxies (allowed: a local daemon, or the process backend)")
	}
	return nil
}

func (c *Cluster) startCluster(ctx context.Context) error {
	t := c.Topology
	if err := CanRun(c.Backend, t.Kind); err != nil {
		return err
	}
	if t.Masters < MinClusterMasters || t.Masters > MaxClusterMasters {
		return fmt.Errorf("cluster masters %d (allowed: %d to %d)", t.Masters, MinClusterMasters, MaxClusterMasters)
	}
	if t.Replicas < 0 || t.Replicas > MaxClusterReplicas {
		return fmt.Errorf("cluster replicas %d per master (allowed: 0 to %d)", t.Replicas, MaxClusterReplicas)
	}
	total := t.Masters * (1 + t.Replicas)
	err := c.parallel(ctx, total, func(k int) error {
		role := RoleMaster
		if k >= t.Masters {
			role = RoleReplica
		}
		name := fmt.Sprintf("n%d", k+1)
		extra := []string{"--cluster-node-timeout", strconv.FormatInt(t.nodeTimeout().Milliseconds(), 10)}
		if _, ok := c.Backend.(*Process); ok {
			// Processes all send from 127.0.0.1 otherwise: the bus
			// routers tell the nodes apart by their source address.
			extra = append(extra, busSourceArgs(name)...)
		}
		_, err := c.startRedis(ctx, name, role, extra)
		return err
	})
	if err != nil {
		return err
	}
	// The proxies and bus routers, once the nodes (and so their ports)
	// exist; then every node announces them, in its config file too (a
	// restart announces them at once).
	anns := make([]announced, total)
	for k := 0; k < total; k++ {
		if anns[k], err = c.announce(ctx, c.Member(fmt.Sprintf("n%d", k+1))); err != nil {
			return err
		}
	}
	for i := 1; i <= t.Masters; i++ {
		lo, hi := (i-1)*ClusterSlots/t.Masters, i*ClusterSlots/t.Masters-1
		if _, err := c.Do(ctx, c.Member(fmt.Sprintf("n%d", i)), "CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
			return fmt.Errorf("addslotsrange on n%d: %w", i, err)
		}
	}
	n1 := c.Member("n1")
	for k := 1; k < total; k++ {
		if _, err := c.Do(ctx, n1, "CLUSTER", "MEET", anns[k].host, anns[k].port, anns[k].bus); err != nil {
			return fmt.Errorf("cluster meet n%d: %w", k+1, err)
		}
	}
	if err := c.waitClusterNodes(ctx, total, 10*time.Second); err != nil {
		return err
	}
	if err := c.replicateMasters(ctx); err != nil {
		return err
	}
	if err := c.WaitClusterOK(ctx, 20*time.Second); err != nil {
		return err
	}
	return c.RefreshClusterRoles(ctx)
}

// announced is the address a cluster node announces: its peer proxy
// (host, port) and its bus router's port.
type announced struct{ host, port, bus string }

// announce puts m's peer proxy and bus router in front of it, and makes m
// announce them, in its config file too (a restart announces them at
// once).
func (c *Cluster) announce(ctx context.Context, m *Member) (announced, error) {
	pp, err := c.Net.Proxy(PeerProxy(m.Name), peerAddr(m.Node))
	if err != nil {
		return announced{}, err
	}
	if _, err := busAddr(m.Node); err != nil {
		return announced{}, err
	}
	br, err := newBusRouter(c, m, c.Backend.ProxyHost())
	if err != nil {
		return announced{}, err
	}
	c.mu.Lock()
	c.routers = append(c.routers, br)
	c.mu.Unlock()
	host, port, _ := net.SplitHostPort(pp.Listen)
	_, bus, _ := net.SplitHostPort(br.Addr())
	if _, err := c.Do(ctx, m, "CONFIG", "SET", "cluster-announce-ip", host, "cluster-announce-port", port, "cluster-announce-bus-port", bus); err != nil {
		return announced{}, fmt.Errorf("announce on %s: %w", m.Name, err)
	}
	if _, err := c.Do(ctx, m, "CONFIG", "REWRITE"); err != nil {
		return announced{}, fmt.Errorf("config rewrite on %s: %w", m.Name, err)
	}
	return announced{host, port, bus}, nil
}

// replicateMasters makes each master's replicas replicate it.
func (c *Cluster) replicateMasters(ctx context.Context) error {
	t := c.Topology
	for i := 1; i <= t.Masters; i++ {
		id, err := c.Do(ctx, c.Member(fmt.Sprintf("n%d", i)), "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		for j := 0; j < t.Replicas; j++ {
			r := c.Member(ClusterNodeName(t.Masters, i, j))
			if _, err := c.Do(ctx, r, "CLUSTER", "REPLICATE", id); err != nil {
				return fmt.Errorf("cluster replicate %s to n%d: %w", r.Name, i, err)
			}
		}
	}
	return nil
}

// waitClusterNodes waits until every node knows all total nodes, none of
// them still in the handshake.
func (c *Cluster) waitClusterNodes(ctx context.Context, total int, timeout time.Duration) error {
	return c.waitCluster(ctx, timeout, func(m *Member) error {
		ns, err := c.clusterNodes(ctx, m)
		if err != nil {
			return err
		}
		known := 0
		for _, n := range ns {
			if !n.Has("handshake") && !n.Has("noaddr") {
				known++
			}
		}
		if known != total {
			return fmt.Errorf("%s knows %d of %d nodes", m.Name, known, total)
		}
		return nil
	})
}

// WaitClusterOK waits until every running node says the cluster is ok with
// every slot served, sees itself either as a master serving slots or as a
// replica of a master (an old master that has not yet heard of its
// demotion is neither), and, as a replica, has its link to its master up.
func (c *Cluster) WaitClusterOK(ctx context.Context, timeout time.Duration) error {
	return c.waitCluster(ctx, timeout, func(m *Member) error {
		ns, err := c.clusterNodes(ctx, m)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if n.Has("myself") && n.Has("master") && len(n.Slots) == 0 {
				return fmt.Errorf("%s: a master serving no slot", m.Name)
			}
		}
		// Every node names the same masters for the same slots (an old
		// master may still claim its slots while the others name the
		// replica that took them over).
		if first := c.firstRunning(); first != nil && first != m {
			fs, err := c.clusterNodes(ctx, first)
			if err != nil {
				return err
			}
			if a, b := slotOwners(ns), slotOwners(fs); a != b {
				return fmt.Errorf("%s and %s disagree on the slots' masters: %s / %s", m.Name, first.Name, a, b)
			}
		}
		v, err := c.Do(ctx, m, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		s, _ := v.(string)
		if !strings.Contains(s, "cluster_state:ok") || !strings.Contains(s, fmt.Sprintf("cluster_slots_ok:%d", ClusterSlots)) {
			return fmt.Errorf("%s: cluster not ok: %s", m.Name, strings.Join(strings.Fields(s)[:min(6, len(strings.Fields(s)))], " "))
		}
		v, err = c.Do(ctx, m, "INFO", "replication")
		if err != nil {
			return err
		}
		s, _ = v.(string)
		if strings.Contains(s, "role:slave") && !strings.Contains(s, "master_link_status:up") {
			return fmt.Errorf("%s: replication link not up", m.Name)
		}
		return nil
	})
}

// firstRunning is the first running data node.
func (c *Cluster) firstRunning() *Member {
	for _, m := range c.DataNodes() {
		if m.Node.Running() {
			return m
		}
	}
	return nil
}

// slotOwners sums up which node serves which slots in a CLUSTER NODES view.
func slotOwners(ns []ClusterNode) string {
	var parts []string
	for _, n := range ns {
		if n.Has("master") && len(n.Slots) > 0 {
			parts = append(parts, n.ID+"="+strings.Join(n.Slots, ","))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// waitCluster polls ok on every running data node until all pass.
func (c *Cluster) waitCluster(ctx context.Context, timeout time.Duration, ok func(m *Member) error) error {
	deadline := time.Now().Add(timeout)
	for {
		var err error
		for _, m := range c.DataNodes() {
			if !m.Node.Running() {
				continue
			}
			if err = ok(m); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ClusterNode is one line of CLUSTER NODES, with the member it names.
type ClusterNode struct {
	ID          string
	Addr        string // the announced ip:port (a peer proxy's)
	Flags       []string
	MasterID    string // "-" for a master
	ConfigEpoch int64
	Connected   bool
	Slots       []string
	Member      *Member // nil if no member announces Addr
}

// Has reports whether the node has a flag (master, slave, fail, myself...).
func (n ClusterNode) Has(flag string) bool {
	for _, f := range n.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// clusterNodes asks m for CLUSTER NODES.
func (c *Cluster) clusterNodes(ctx context.Context, m *Member) ([]ClusterNode, error) {
	v, err := c.Do(ctx, m, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	s, _ := v.(string)
	byAddr := map[string]*Member{}
	for _, x := range c.DataNodes() {
		if p, ok := c.Net.Get(PeerProxy(x.Name)); ok {
			byAddr[p.Listen] = x
		}
	}
	var out []ClusterNode
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		epoch, _ := strconv.ParseInt(f[6], 10, 64)
		out = append(out, ClusterNode{ID: f[0], Addr: addr, Flags: strings.Split(f[2], ","), MasterID: f[3],
			ConfigEpoch: epoch, Connected: f[7] == "connected", Slots: f[8:], Member: byAddr[addr]})
	}
	return out, nil
}

// ClusterView is CLUSTER NODES as the most up-to-date running node sees it
// (the one that knows the highest config epoch), with every running node's
// own line in place of what that node says of it: a node knows its own role
// and master before the gossip has told the others.
func (c *Cluster) ClusterView(ctx context.Context) ([]ClusterNode, error) {
	var best []ClusterNode
	bestEpoch := int64(-1)
	own := map[string]ClusterNode{}
	var errs []error
	for _, m := range c.DataNodes() {
		if !m.Node.Running() {
			continue
		}
		ns, err := c.clusterNodes(ctx, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
			continue
		}
		var e int64
		for _, n := range ns {
			e = max(e, n.ConfigEpoch)
			if n.Has("myself") {
				own[n.ID] = n
			}
		}
		if e > bestEpoch {
			best, bestEpoch = ns, e
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no cluster node answers: %w", errors.Join(errs...))
	}
	out := make([]ClusterNode, len(best))
	for i, n := range best {
		if o, ok := own[n.ID]; ok {
			n = o
		}
		out[i] = n
	}
	return out, nil
}

// RefreshClusterRoles sets every member's role from the cluster's view: a
// master serving slots is RoleMaster, any other node (a replica, a failed
// master whose slots went to its replica) RoleReplica.
func (c *Cluster) RefreshClusterRoles(ctx context.Context) error {
	view, err := c.ClusterView(ctx)
	if err != nil {
		return err
	}
	byID := map[string]*Member{}
	for _, n := range view {
		byID[n.ID] = n.Member
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slots, c.masterOf = map[*Member][][2]int{}, map[*Member]*Member{}
	for _, n := range view {
		if n.Member == nil {
			continue
		}
		if n.Has("master") && len(n.Slots) > 0 {
			n.Member.Role = RoleMaster
			c.slots[n.Member] = slotRanges(n.Slots)
		} else {
			n.Member.Role = RoleReplica
			if m := byID[n.MasterID]; m != nil {
				c.masterOf[n.Member] = m
			}
		}
	}
	return nil
}

// slotRanges parses CLUSTER NODES slot fields ("0-5460", "5461"); the
// bracketed entries of a migration in progress are left out.
func slotRanges(fields []string) [][2]int {
	var out [][2]int
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue
		}
		lo, hi, found := strings.Cut(f, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if found {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 == nil && err2 == nil {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// keyMaster is the member serving key's slot, as last seen by
// RefreshClusterRoles, and its replicas in name order.
func (c *Cluster) keyMaster(key string) (*Member, []*Member) {
	slot := KeySlot(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	var owner *Member
	for m, rs := range c.slots {
		for _, r := range rs {
			if slot >= r[0] && slot <= r[1] {
				owner = m
			}
		}
	}
	if owner == nil {
		return nil, nil
	}
	var reps []*Member
	for _, m := range c.members {
		if c.masterOf[m] == owner {
			reps = append(reps, m)
		}
	}
	return owner, reps
}

// KeySlot is the cluster hash slot of a key: CRC16 (XMODEM) of the key, or
// of its hash tag (the part between the first { and the next }, if not
// empty), modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % ClusterSlots
}

// ClusterReplicasOf lists the members that replicate m in the cluster's view.
func (c *Cluster) ClusterReplicasOf(ctx context.Context, m *Member) ([]*Member, error) {
	view, err := c.ClusterView(ctx)
	if err != nil {
		return nil, err
	}
	id := ""
	for _, n := range view {
		if n.Member == m {
			id = n.ID
		}
	}
	if id == "" {
		return nil, fmt.Errorf("%s is not in the cluster's view", m.Name)
	}
	var out []*Member
	for _, n := range view {
		if n.MasterID == id && n.Member != nil {
			out = append(out, n.Member)
		}
	}
	return out, nil
}

// Announced is the address a cluster node announces: its peer proxy's.
func (c *Cluster) Announced(m *Member) (string, error) {
	p, ok := c.Net.Get(PeerProxy(m.Name))
	if !ok {
		return "", fmt.Errorf("no peer proxy for %s", m.Name)
	}
	return p.Listen, nil
}

// ClientRemap maps every address the cluster announces (a node's peer
// proxy) to the client's own proxy to that node: a cluster client that
// dials through it reaches every node, after any redirection, on the
// client's own path, which the client-scoped faults cut.
func (c *Cluster) ClientRemap(client string) (map[string]string, error) {
	addrs, err := c.ClientAddrs(client)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, a := range addrs {
		p, ok := c.Net.Get(PeerProxy(name))
		if !ok {
			return nil, fmt.Errorf("no peer proxy for %s", name)
		}
		out[p.Listen] = a
	}
	return out, nil
}

// AnnouncedBus is the bus address a cluster node announces: its bus
// router's.
func (c *Cluster) AnnouncedBus(m *Member) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.routers {
		if r.to == m {
			return r.Addr(), nil
		}
	}
	return "", fmt.Errorf("no bus router for %s", m.Name)
}

// closeRouters stops the bus routers.
func (c *Cluster) closeRouters() error {
	c.mu.Lock()
	rs := c.routers
	c.routers = nil
	c.mu.Unlock()
	var errs []error
	for _, r := range rs {
		errs = append(errs, r.close())
	}
	return errors.Join(errs...)
}
