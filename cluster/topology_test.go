package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault"
)

func startTopology(t *testing.T, topo Topology) *Cluster {
	t.Helper()
	ctx := context.Background()
	b, err := NewProcess("topo")
	if err != nil {
		t.Fatal(err)
	}
	nw, err := NewNet(b.ProxyHost(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, b, nw, topo)
	if err != nil {
		b.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// A write on the primary reaches the replica through the peer proxy, and
// stops reaching it when that proxy is disabled: the cut the failover
// scenarios rely on.
func TestReplicationThroughPeerProxy(t *testing.T) {
	ctx := context.Background()
	c := startTopology(t, Topology{Kind: lockfault.Replicated, Replicas: 1})
	addrs, err := c.ClientAddrs("c1")
	if err != nil {
		t.Fatal(err)
	}
	prim := redis.NewClient(&redis.Options{Addr: addrs["n1"]})
	defer prim.Close()
	rep := c.redisClient(c.Member("n2"))
	defer rep.Close()
	if err := prim.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitKey(t, rep, "a", true)
	p, _ := c.Net.Get(PeerProxy("n1"))
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	if err := prim.Set(ctx, "b", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n, _ := rep.Exists(ctx, "b").Result(); n != 0 {
		t.Fatal("write crossed a disabled replication link")
	}
	if err := c.Net.Heal(); err != nil {
		t.Fatal(err)
	}
	waitKey(t, rep, "b", true)
}

func waitKey(t *testing.T, r *redis.Client, key string, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _ := r.Exists(context.Background(), key).Result()
		if (n == 1) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %s exists=%v after 10s, want %v", key, n == 1, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Killing the primary makes the Sentinels promote the replica.
func TestSentinelFailover(t *testing.T) {
	ctx := context.Background()
	c := startTopology(t, Topology{Kind: lockfault.Replicated, Replicas: 1, Sentinels: 3})
	if got := c.SentinelPrimary(ctx); got == nil || got.Name != "n1" {
		t.Fatalf("sentinels' primary = %v, want n1", got)
	}
	if err := c.Member("n1").Node.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got := c.SentinelPrimary(ctx); got != nil && got.Name == "n2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no failover to n2 within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A replica killed and restarted still announces its peer proxy to the
// primary (the address the Sentinels learn it by), not its own address:
// otherwise the Sentinels add it a second time, reached around the proxy,
// may promote that alias, and a partition of the node no longer cuts it.
func TestRestartedReplicaAnnouncesItsPeerProxy(t *testing.T) {
	ctx := context.Background()
	c := startTopology(t, Topology{Kind: lockfault.Replicated, Replicas: 1})
	n2 := c.Member("n2")
	if err := n2.Node.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, n2); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReplicasSynced(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Net.Get(PeerProxy("n2"))
	host, port, _ := net.SplitHostPort(p.Listen)
	want := fmt.Sprintf("slave0:ip=%s,port=%s,", host, port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.Do(ctx, c.Member("n1"), "INFO", "replication")
		s, _ := v.(string)
		if err == nil && strings.Contains(s, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 does not list n2 at its peer proxy (%s) after 10s: %v\n%s", want, err, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
