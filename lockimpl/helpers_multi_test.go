package lockimpl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

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

func newTestBackend(tb testing.TB) *cluster.Process {
	tb.Helper()
	p, err := cluster.NewProcess("lockimpl-multi")
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
