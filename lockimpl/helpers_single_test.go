package lockimpl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
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
