package golibs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The test helpers of the root module's lockimpl tests are in _test files
// of another module, which cannot be imported: startRedisNodes,
// newTestBackend, killNodes, multiRawClients and multiKeyValue are copies
// of them; startEtcd and waitEtcdReady moved here with the etcd adapter.

// startRedisNodes starts n independent redis-server masters through the
// process backend and returns their addresses and node handles, so a test
// can kill and restart them. Everything is removed when the test ends.
func startRedisNodes(tb testing.TB, n int) ([]string, []cluster.Node) {
	tb.Helper()
	p := newTestBackend(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := make([]string, 0, n)
	nodes := make([]cluster.Node, 0, n)
	for i := 1; i <= n; i++ {
		node, err := p.Start(ctx, cluster.NodeSpec{Name: fmt.Sprintf("n%d", i), Kind: cluster.KindRedis})
		if err != nil {
			tb.Fatal(err)
		}
		addrs = append(addrs, node.Addr())
		nodes = append(nodes, node)
	}
	return addrs, nodes
}

// startRedis starts one redis-server and returns its address.
func startRedis(tb testing.TB) string {
	tb.Helper()
	addrs, _ := startRedisNodes(tb, 1)
	return addrs[0]
}

// startEtcd starts a real single-node etcd and returns its client URL. It
// is removed when the test ends.
func startEtcd(tb testing.TB) string {
	tb.Helper()
	p := newTestBackend(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := p.Start(ctx, cluster.NodeSpec{Name: "e1", Kind: cluster.KindEtcd})
	if err != nil {
		tb.Fatalf("starting etcd (apt-get install -y etcd-server if it is missing): %v", err)
	}
	url := "http://" + node.Addr()
	waitEtcdReady(tb, url)
	return url
}

// waitEtcdReady waits until etcd has elected itself leader and serves a
// lease grant (it listens about a second before that).
func waitEtcdReady(tb testing.TB, url string) {
	tb.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		g, err := c.Grant(ctx, 5)
		if err == nil {
			_, err = c.Revoke(ctx, g.ID)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("etcd at %s not ready: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newTestBackend(tb testing.TB) *cluster.Process {
	tb.Helper()
	p, err := cluster.NewProcess("golibs-test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("closing nodes: %v", err)
		}
	})
	return p
}

// killNodes kills the given nodes.
func killNodes(tb testing.TB, nodes ...cluster.Node) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.Kill(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

// multiRawClients returns a plain client per address, for inspecting the
// servers.
func multiRawClients(tb testing.TB, addrs []string) []*redis.Client {
	tb.Helper()
	var cs []*redis.Client
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialerRetries: 1})
		tb.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// multiKeyValue returns the key's value on a node, "" when it does not exist.
func multiKeyValue(tb testing.TB, c *redis.Client, key string) string {
	tb.Helper()
	v, err := c.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		tb.Fatalf("GET %s on %s: %v", key, c.Options().Addr, err)
	}
	return v
}

// newLockT builds a registered lock for a test and closes it when the test
// ends.
func newLockT(tb testing.TB, name string, cfg lockimpl.Config) lockimpl.Lock {
	tb.Helper()
	l, err := lockimpl.New(name, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// refusedWhileHeld: a second client is refused the held lock res, at once
// and after waiting 60 ms.
func refusedWhileHeld(t *testing.T, b lockimpl.Lock, res string, ttl time.Duration) {
	t.Helper()
	for _, wait := range []time.Duration{0, 60 * time.Millisecond} {
		if lb, err := b.Acquire(context.Background(), res, lockimpl.AcquireOptions{TTL: ttl, Wait: wait}); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("second client, wait %v: lease %+v err %v, want ErrNotAcquired", wait, lb, err)
		}
	}
}

// handOver releases a's lease la of res, runs released (if any), then has b
// acquire res, and checks that releasing la again is refused with
// ErrNotHeld. It returns b's lease.
func handOver(t *testing.T, a, b lockimpl.Lock, la *lockimpl.Lease, res string, ttl time.Duration, released func()) *lockimpl.Lease {
	t.Helper()
	ctx := context.Background()
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if released != nil {
		released()
	}
	lb, err := b.Acquire(ctx, res, lockimpl.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatalf("second client after release: %v", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("releasing a released lease: %v, want ErrNotHeld", err)
	}
	return lb
}

// waitsForHolder: b, asking while a holds the lock and waiting for it, is
// granted once a releases.
func waitsForHolder(t *testing.T, a, b lockimpl.Lock) {
	t.Helper()
	ctx := context.Background()
	la, err := a.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: 10 * time.Second, Wait: 10 * time.Second})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting client after release: %v", err)
	}
}
