package lockimpl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/redis/go-redis/v9"
)

// startRedis starts one real redis-server on loopback through the process
// backend and returns its address. The server and its directory are removed
// when the test ends.
func startRedis(t *testing.T) string {
	t.Helper()
	return startRedisTB(t, 1)[0]
}

// startRedisN starts n independent redis-server masters (Redlock needs
// several) and returns their addresses. They are removed when the test ends.
func startRedisN(t *testing.T, n int) []string {
	t.Helper()
	return startRedisTB(t, n)
}

// startRedisTB is startRedis for tests and benchmarks alike.
func startRedisTB(tb testing.TB, n int) []string {
	tb.Helper()
	if n <= 0 {
		tb.Fatalf("startRedisN: n=%d, want > 0", n)
	}
	p, err := cluster.NewProcess("lockimpl-test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("closing redis nodes: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		node, err := p.Start(ctx, cluster.NodeSpec{Name: fmt.Sprintf("n%d", i), Kind: cluster.KindRedis})
		if err != nil {
			tb.Fatal(err)
		}
		addrs = append(addrs, node.Addr())
	}
	return addrs
}

// sfLock builds a registered lock against addr for a test or benchmark and
// closes it when the test ends. mod may adjust the config (options,
// failpoints, OnRenew).
func sfLock(tb testing.TB, name, addr string, mod func(*Config)) Lock {
	tb.Helper()
	cfg := Config{ClientID: name + "-" + RandomToken()[:8], Endpoints: Endpoints{Primary: addr}}
	if mod != nil {
		mod(&cfg)
	}
	l, err := New(name, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// sfRaw is a plain client for inspecting the server in tests.
func sfRaw(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	return c
}

// sfEventually polls cond every few milliseconds until it holds, failing the
// test after timeout. It waits for a state, it does not bound a duration.
func sfEventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sfKeyGone waits until the key no longer exists (it expired).
func sfKeyGone(tb testing.TB, rdb *redis.Client, key string) {
	tb.Helper()
	sfEventually(tb, 5*time.Second, key+" to expire", func() bool {
		n, err := rdb.Exists(context.Background(), key).Result()
		return err == nil && n == 0
	})
}
