package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

// redlock-cluster keeps one key on every master of the cluster (its keys
// in different slots), excludes, extends and releases with all of them,
// and reaches the masters through the client's own proxies only: with the
// announced addresses' proxies cut, nothing changes.
func TestRedlockClusterOneKeyPerMaster(t *testing.T) {
	ctx := context.Background()
	c, ep := clusterEndpoints(t, "c1")
	for _, m := range c.DataNodes() {
		p, _ := c.Net.Get(cluster.PeerProxy(m.Name))
		if err := p.Disable(); err != nil {
			t.Fatal(err)
		}
	}
	var locks [2]Lock
	for i := range locks {
		l, err := New("redlock-cluster", Config{Endpoints: ep})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		locks[i] = l
	}
	a, b := locks[0], locks[1]
	opts := AcquireOptions{TTL: 5 * time.Second, Wait: 100 * time.Millisecond}
	l, err := a.Acquire(ctx, "order", opts)
	if err != nil {
		t.Fatal(err)
	}
	masters := 0
	for _, m := range c.DataNodes() {
		role, err := c.Do(ctx, m, "ROLE")
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := role.([]any); !ok || len(r) == 0 || r[0] != "master" {
			continue
		}
		masters++
		if n, err := c.Do(ctx, m, "DBSIZE"); err != nil || n != int64(1) {
			t.Errorf("master %s holds %v keys (%v), want one key of the lock", m.Name, n, err)
		}
	}
	if masters != 3 {
		t.Fatalf("%d masters, want 3", masters)
	}
	if _, err := b.Acquire(ctx, "order", opts); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second acquire: %v, want not acquired", err)
	}
	if err := a.(Extender).Extend(ctx, l, 8*time.Second); err != nil {
		t.Fatalf("extend: %v", err)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatalf("release: %v", err)
	}
	l2, err := b.Acquire(ctx, "order", opts)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if err := b.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
}
