package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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
	// NodeTimeout is a cluster's cluster-node-timeout (0: DefaultNodeTimeout).
	NodeTimeout time.Duration
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

	// LockKey is the key of the run's lock (a cluster's key-master and
	// key-replica targets follow its slot); set before the nemesis starts.
	LockKey string

	mu      sync.Mutex
	members []*Member
	// A cluster's slots per master and master per replica, as of the last
	// RefreshClusterRoles.
	slots    map[*Member][][2]int
	masterOf map[*Member]*Member
	routers  []*busRouter // a cluster's bus routers, one per node
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
	case lockfault.Cluster:
		err = c.startCluster(ctx)
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

// Resolve turns a fault target into members: a node name, or a role:
// primary, replica (the first), replicas, master (the first), masters,
// minority (the first floor((n-1)/2) masters), majority (the first n/2+1),
// sentinels, all; on a cluster key-master (the master serving LockKey's
// slot) and key-replica (its first replica).
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
	case lockfault.TargetKeyMaster, lockfault.TargetKeyReplica:
		if c.LockKey == "" {
			return nil, fmt.Errorf("target %q: the run names no lock key", target)
		}
		m, reps := c.keyMaster(c.LockKey)
		if target == lockfault.TargetKeyReplica {
			out = first(reps, 1)
		} else if m != nil {
			out = []*Member{m}
		}
	default:
		return nil, fmt.Errorf("unknown target %q (allowed: %s)", target, strings.Join(NodeTargets(c.Topology), ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("target %q matches no node in this topology", target)
	}
	return out, nil
}

// Close deletes the proxies and stops every node.
func (c *Cluster) Close(ctx context.Context) error {
	return errors.Join(c.closeRouters(), c.Net.Close(), c.Backend.Close(ctx))
}
