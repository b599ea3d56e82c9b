package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// clusterEndpoints starts a Redis Cluster of 3 masters (process backend)
// and returns a client's endpoints: its proxies as seeds, and the remap of
// every announced address to them.
func clusterEndpoints(t *testing.T, client string) (*cluster.Cluster, Endpoints) {
	t.Helper()
	ctx := context.Background()
	b, err := cluster.NewProcess("lockimpl-test")
	if err != nil {
		t.Fatal(err)
	}
	nw, err := cluster.NewNet(b.ProxyHost(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, b, nw, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, NodeTimeout: time.Second})
	if err != nil {
		b.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	addrs, err := c.ClientAddrs(client)
	if err != nil {
		t.Fatal(err)
	}
	remap, err := c.ClientRemap(client)
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoints{ClusterRemap: remap}
	for _, m := range c.DataNodes() {
		ep.Cluster = append(ep.Cluster, addrs[m.Name])
	}
	return c, ep
}

// twoClusterLocks makes two single-cluster clients on ep, closed with t.
func twoClusterLocks(t *testing.T, ep Endpoints) (a, b Lock) {
	t.Helper()
	for _, l := range []*Lock{&a, &b} {
		var err error
		if *l, err = New("single-cluster", Config{Endpoints: ep}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*l).Close() })
	}
	return a, b
}

// single-cluster excludes, releases and extends on keys spread over every
// master, all through the client's own proxies.
func TestSingleClusterAcrossSlots(t *testing.T) {
	ctx := context.Background()
	c, ep := clusterEndpoints(t, "c1")
	a, b := twoClusterLocks(t, ep)
	owners := map[int]bool{}
	for i := 0; i < 6; i++ {
		res := fmt.Sprintf("r%d", i)
		owners[cluster.KeySlot(KeyFor(res))*3/cluster.ClusterSlots] = true
		opts := AcquireOptions{TTL: 5 * time.Second, Wait: 100 * time.Millisecond}
		l, err := a.Acquire(ctx, res, opts)
		if err != nil {
			t.Fatalf("%s: acquire: %v", res, err)
		}
		if _, err := b.Acquire(ctx, res, opts); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("%s: second acquire: %v, want not acquired", res, err)
		}
		if err := a.(Extender).Extend(ctx, l, 8*time.Second); err != nil {
			t.Fatalf("%s: extend: %v", res, err)
		}
		if err := a.Release(ctx, l); err != nil {
			t.Fatalf("%s: release: %v", res, err)
		}
		if l2, err := b.Acquire(ctx, res, opts); err != nil {
			t.Fatalf("%s: acquire after release: %v", res, err)
		} else {
			b.Release(ctx, l2)
		}
	}
	if len(owners) < 2 {
		t.Fatalf("the keys fell on %d master(s) only", len(owners))
	}
	// Only the client's proxies carried it: the peer proxies (the announced
	// addresses) can go and nothing changes.
	for _, m := range c.DataNodes() {
		p, _ := c.Net.Get(cluster.PeerProxy(m.Name))
		if err := p.Disable(); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := a.Acquire(ctx, "r0", AcquireOptions{TTL: time.Second, Wait: 100 * time.Millisecond}); err != nil {
		t.Fatalf("acquire with the announced addresses cut: %v", err)
	} else {
		a.Release(ctx, l)
	}
}

// A held lock survives a migration of its key's slot: with the slot
// migrating and the key moved (the source answers ASK), a second client is
// refused, the holder extends and releases on the destination, and the
// second client then acquires there; once the slot is the destination's
// (the source answers MOVED), release and acquire follow the MOVED.
func TestSingleClusterFollowsMigration(t *testing.T) {
	ctx := context.Background()
	c, ep := clusterEndpoints(t, "c1")
	a, b := twoClusterLocks(t, ep)
	res := "order" // lock:order, slot 9975: n2's
	slot := cluster.KeySlot(KeyFor(res))
	src, dst := c.Member("n2"), c.Member("n3")
	id := func(m *cluster.Member) string {
		v, err := c.Do(ctx, m, "CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		return v.(string)
	}
	srcID, dstID := id(src), id(dst)
	do := func(m *cluster.Member, args ...any) {
		t.Helper()
		if _, err := c.Do(ctx, m, args...); err != nil {
			t.Fatalf("%s %v: %v", m.Name, args, err)
		}
	}
	opts := AcquireOptions{TTL: 10 * time.Second, Wait: 300 * time.Millisecond}
	l, err := a.Acquire(ctx, res, opts)
	if err != nil {
		t.Fatal(err)
	}
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	dstAddr, _ := c.Announced(dst)
	host, port, _ := strings.Cut(dstAddr, ":")
	do(src, "MIGRATE", host, port, "", 0, 5000, "KEYS", KeyFor(res))
	if _, err := c.Do(ctx, src, "GET", KeyFor(res)); err == nil || !strings.HasPrefix(err.Error(), "ASK ") {
		t.Fatalf("the source answers %v for the moved key, want ASK", err)
	}
	if _, err := b.Acquire(ctx, res, opts); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second acquire during the migration: %v, want not acquired", err)
	}
	if err := a.(Extender).Extend(ctx, l, 12*time.Second); err != nil {
		t.Fatalf("extend during the migration: %v", err)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatalf("release during the migration: %v", err)
	}
	l2, err := b.Acquire(ctx, res, opts)
	if err != nil {
		t.Fatalf("acquire after the release, during the migration: %v", err)
	}
	if n, _ := c.Do(ctx, dst, "CLUSTER", "COUNTKEYSINSLOT", slot); n != int64(1) {
		t.Fatalf("the destination holds %v keys of the slot, want the new grant's", n)
	}
	for _, m := range []*cluster.Member{dst, src, c.Member("n1")} {
		do(m, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	}
	if err := c.WaitClusterOK(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, src, "GET", KeyFor(res)); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("the source answers %v after the migration, want MOVED", err)
	}
	if err := b.Release(ctx, l2); err != nil {
		t.Fatalf("release after the migration: %v", err)
	}
	if l3, err := a.Acquire(ctx, res, opts); err != nil {
		t.Fatalf("acquire after the migration: %v", err)
	} else if err := a.Release(ctx, l3); err != nil {
		t.Fatal(err)
	}
}
