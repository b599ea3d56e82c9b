package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault"
)

// Roles a member can have.
const (
	RolePrimary  = "primary"
	RoleReplica  = "replica"
	RoleMaster   = "master" // one of N independent masters
	RoleSentinel = "sentinel"
	RoleEtcd     = "etcd"
)

// SentinelMaster is the name Sentinels monitor the primary under.
const SentinelMaster = "lockfault"

// Topology describes the nodes of a run.
type Topology struct {
	Kind        lockfault.TopologyKind
	Replicas    int
	Sentinels   int
	Masters     int
	Persistence string // none, aof-always, aof-everysec
	ClockShim   bool
	// Password, when set: requirepass and masterauth on every redis node,
	// auth-pass for the monitored master on every Sentinel. The harness's
	// own admin connections use it too.
	Password string
}

// Member is one node with its place in the topology. Clients reach it only
// through per-client proxies named "<client>><node>"; replicas and Sentinels
// reach it through its peer proxy "peer>n" (replicated topologies), so the
// replication link and the client links can be cut separately.
type Member struct {
	Node Node
	Name string
	Role string
}

// Cluster is a running topology.
type Cluster struct {
	Backend  Backend
	Net      *Net
	Topology Topology

	mu      sync.Mutex
	members []*Member
}

// Start brings up a topology. On error everything started is torn down.
func Start(ctx context.Context, b Backend, nw *Net, t Topology) (c *Cluster, err error) {
	c = &Cluster{Backend: b, Net: nw, Topology: t}
	defer func() {
		if err != nil {
			c.Close(context.Background())
			c = nil
		}
	}()
	switch t.Kind {
	case lockfault.Standalone:
		_, err = c.startRedis(ctx, "n1", RolePrimary, nil)
	case lockfault.Masters:
		if t.Masters < 1 {
			return nil, fmt.Errorf("masters topology needs masters >= 1")
		}
		err = c.parallel(ctx, t.Masters, func(i int) error {
			_, err := c.startRedis(ctx, fmt.Sprintf("n%d", i+1), RoleMaster, nil)
			return err
		})
	case lockfault.Replicated:
		err = c.startReplicated(ctx)
	case lockfault.Etcd:
		var n Node
		n, err = b.Start(ctx, NodeSpec{Name: "e1", Kind: KindEtcd})
		if err == nil {
			c.add(&Member{Node: n, Name: "e1", Role: RoleEtcd})
		}
	default:
		return nil, fmt.Errorf("unknown topology %q", t.Kind)
	}
	return c, err
}

// startParallel bounds the nodes starting at once: enough to overlap their
// start-up, few enough that an interrupted start-up has little in flight.
const startParallel = 4

// parallel runs f(0..n-1), at most startParallel at a time; once ctx is
// cancelled no new call begins.
func (c *Cluster) parallel(ctx context.Context, n int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, startParallel)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		if ctx.Err() != nil {
			<-sem
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

func (c *Cluster) add(m *Member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = append(c.members, m)
	sort.Slice(c.members, func(i, j int) bool { return memberLess(c.members[i].Name, c.members[j].Name) })
}

func memberLess(a, b string) bool {
	rank := map[byte]int{'n': 0, 'e': 1, 's': 2}
	if a[0] != b[0] {
		return rank[a[0]] < rank[b[0]] // data nodes first, Sentinels last
	}
	ai, _ := strconv.Atoi(a[1:])
	bi, _ := strconv.Atoi(b[1:])
	return ai < bi
}

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
	n, err := c.Backend.Start(ctx, NodeSpec{Name: name, Kind: KindRedis, Args: append(args, extra...), ClockShim: c.Topology.ClockShim, Password: c.Topology.Password})
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
		host, port, _ := net.SplitHostPort(peers[i])
		if _, err := c.Do(ctx, m, "CONFIG", "SET", "replica-announce-ip", host, "replica-announce-port", port); err != nil {
			return fmt.Errorf("configure %s: %w", m.Name, err)
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

// Members returns the members, redis nodes first, in name order.
func (c *Cluster) Members() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Member(nil), c.members...)
}

// Member returns a member by name.
func (c *Cluster) Member(name string) *Member {
	for _, m := range c.Members() {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// WithRole lists the members that currently have a role.
func (c *Cluster) WithRole(role string) []*Member {
	var out []*Member
	for _, m := range c.Members() {
		if m.Role == role {
			out = append(out, m)
		}
	}
	return out
}

// Primary is the current primary of a replicated or standalone topology.
func (c *Cluster) Primary() *Member {
	if p := c.WithRole(RolePrimary); len(p) > 0 {
		return p[0]
	}
	return nil
}

// DataNodes are the members clients talk to (redis or etcd, not Sentinels).
func (c *Cluster) DataNodes() []*Member {
	var out []*Member
	for _, m := range c.Members() {
		if m.Role != RoleSentinel {
			out = append(out, m)
		}
	}
	return out
}

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

// Resolve turns a fault target into members: a node name, or a role:
// primary, replica (the first), replicas, master (the first), masters,
// minority (the first floor((n-1)/2) masters), majority (the first n/2+1),
// sentinels, all.
func (c *Cluster) Resolve(target string) ([]*Member, error) {
	if m := c.Member(target); m != nil {
		return []*Member{m}, nil
	}
	first := func(ms []*Member, k int) []*Member {
		if k > len(ms) {
			k = len(ms)
		}
		return ms[:k]
	}
	var out []*Member
	switch target {
	case lockfault.TargetPrimary:
		out = c.WithRole(RolePrimary)
	case lockfault.TargetReplica:
		out = first(c.WithRole(RoleReplica), 1)
	case lockfault.TargetReplicas:
		out = c.WithRole(RoleReplica)
	case lockfault.TargetMaster:
		out = first(c.WithRole(RoleMaster), 1)
	case lockfault.TargetMasters:
		out = c.WithRole(RoleMaster)
	case lockfault.TargetMinority:
		ms := c.WithRole(RoleMaster)
		out = first(ms, (len(ms)-1)/2)
	case lockfault.TargetMajority:
		ms := c.WithRole(RoleMaster)
		out = first(ms, len(ms)/2+1)
	case lockfault.TargetSentinels:
		out = c.WithRole(RoleSentinel)
	case lockfault.TargetEtcd:
		out = c.WithRole(RoleEtcd)
	case lockfault.TargetAll:
		out = c.DataNodes()
	default:
		return nil, fmt.Errorf("unknown target %q (allowed: %s)", target, strings.Join(NodeTargets(c.Topology), ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("target %q matches no node in this topology", target)
	}
	return out, nil
}

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
	if m.Role == RoleReplica {
		// It came back as an empty master: make it follow the primary again.
		return c.Rejoin(ctx)
	}
	return nil
}

// Repoint sets every proxy in front of m to m's current address (its peer
// address for the peer proxy).
func (c *Cluster) Repoint(m *Member) error {
	for _, name := range c.Net.Names("") {
		if strings.HasSuffix(name, ">"+m.Name) {
			upstream := m.Node.Addr()
			if isPeerProxy(name) {
				upstream = peerAddr(m.Node)
			}
			if err := c.Net.SetUpstream(name, upstream); err != nil {
				return err
			}
		}
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

// Close deletes the proxies and stops every node.
func (c *Cluster) Close(ctx context.Context) error {
	return errors.Join(c.Net.Close(), c.Backend.Close(ctx))
}
