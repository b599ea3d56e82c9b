package golibs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/lockimpl"
)

// startCluster starts a Redis Cluster of 3 masters (process backend) and
// returns it and client c1's endpoints: its proxies as seeds, and the
// remap of every announced address to them (a copy of lockimpl's test
// helper clusterEndpoints).
func startCluster(t *testing.T) (*cluster.Cluster, lockimpl.Endpoints) {
	t.Helper()
	ctx := context.Background()
	b, err := cluster.NewProcess("golibs-test")
	if err != nil {
		t.Fatal(err)
	}
	nw, err := cluster.NewNet(b.ProxyHost(), strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, b, nw, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, NodeTimeout: time.Second})
	if err != nil {
		b.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	addrs, err := c.ClientAddrs("c1")
	if err != nil {
		t.Fatal(err)
	}
	remap, err := c.ClientRemap("c1")
	if err != nil {
		t.Fatal(err)
	}
	ep := lockimpl.Endpoints{ClusterRemap: remap}
	for _, m := range c.DataNodes() {
		ep.Cluster = append(ep.Cluster, addrs[m.Name])
	}
	return c, ep
}

// moveEmptySlot hands the slot of key, which holds no key, to the next
// master by name (CLUSTER SETSLOT NODE on every master), so that a client
// whose slot map was read before is answered MOVED.
func moveEmptySlot(t *testing.T, c *cluster.Cluster, key string) {
	t.Helper()
	ctx := context.Background()
	slot := cluster.KeySlot(key)
	masters := c.WithRole(cluster.RoleMaster)
	var owner int
	ids := make([]string, len(masters))
	for i, m := range masters {
		id, err := c.Do(ctx, m, "CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id.(string)
		if n, err := c.Do(ctx, m, "CLUSTER", "COUNTKEYSINSLOT", slot); err != nil || n != int64(0) {
			t.Fatalf("slot %d on %s: %v keys (%v), want none", slot, m.Name, n, err)
		}
		if _, err := c.Do(ctx, m, "GET", key); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
			owner = i // the owner answers (nil: no such key); the others MOVED
		}
	}
	dst := ids[(owner+1)%len(ids)]
	for _, m := range masters {
		if _, err := c.Do(ctx, m, "CLUSTER", "SETSLOT", slot, "NODE", dst); err != nil {
			t.Fatalf("%s: SETSLOT %d NODE: %v", m.Name, slot, err)
		}
	}
	if err := c.WaitClusterOK(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// The cluster adapters reach the cluster through the client's own proxies
// only, a MOVED included: with the proxies at the announced addresses cut,
// each excludes, extends (if it can) and releases on keys spread over every
// master, and still does after a slot of its key moved under its slot map.
func TestClusterAdaptersGoThroughTheirProxies(t *testing.T) {
	for _, name := range []string{"redsync-cluster", "redislock-cluster", "rueidislock-cluster"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, ep := startCluster(t)
			for _, m := range c.DataNodes() {
				p, _ := c.Net.Get(cluster.PeerProxy(m.Name))
				if err := p.Disable(); err != nil {
					t.Fatal(err)
				}
			}
			var locks [2]lockimpl.Lock
			for i := range locks {
				l, err := lockimpl.New(name, lockimpl.Config{Endpoints: ep})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				locks[i] = l
			}
			a, b := locks[0], locks[1]
			opts := lockimpl.AcquireOptions{TTL: 5 * time.Second, Wait: 200 * time.Millisecond}
			round := func(res string) {
				t.Helper()
				l, err := a.Acquire(ctx, res, opts)
				if err != nil {
					t.Fatalf("%s: acquire: %v", res, err)
				}
				if _, err := b.Acquire(ctx, res, opts); !errors.Is(err, lockimpl.ErrNotAcquired) {
					t.Fatalf("%s: second acquire: %v, want not acquired", res, err)
				}
				if e, ok := a.(lockimpl.Extender); ok {
					if err := e.Extend(ctx, l, 8*time.Second); err != nil {
						t.Fatalf("%s: extend: %v", res, err)
					}
				}
				if err := a.Release(ctx, l); err != nil {
					t.Fatalf("%s: release: %v", res, err)
				}
				l2, err := b.Acquire(ctx, res, opts)
				if err != nil {
					t.Fatalf("%s: acquire after release: %v", res, err)
				}
				if err := b.Release(ctx, l2); err != nil {
					t.Fatalf("%s: release of the second grant: %v", res, err)
				}
			}
			owners := map[int]bool{}
			for i := range 6 {
				res := fmt.Sprintf("r%d", i)
				owners[cluster.KeySlot(lockimpl.KeyFor(res))*3/cluster.ClusterSlots] = true
				round(res)
			}
			if len(owners) < 2 {
				t.Fatalf("the keys fell on %d master(s) only", len(owners))
			}
			key := lockimpl.KeyFor("moved")
			if name == "rueidislock-cluster" {
				key = "rueidislock:0:moved" // the first of its keys
			}
			moveEmptySlot(t, c, key)
			round("moved")
		})
	}
}
