package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// twoClients is env with clients c1 and c2.
type twoClients struct{ *env }

func (e twoClients) Clients(target string) ([]Client, error) {
	switch target {
	case "c1", "c2":
		return []Client{&fakeClient{name: target}}, nil
	}
	return []Client{&fakeClient{name: "c1"}, &fakeClient{name: "c2"}}, nil
}

// A master cut off with client c1 on its side: it sees nobody on the bus
// and keeps taking c1's writes, which nobody else can reach; the majority
// fails it over to its replica, which never got those writes; after
// cluster-node-timeout the minority master refuses writes (CLUSTERDOWN).
// The heal brings it back as a replica of the new master.
func TestClusterMinorityPartition(t *testing.T) {
	ctx := context.Background()
	base, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	e := twoClients{base}
	c := e.c
	a1, err := c.ClientAddrs("c1")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := c.ClientAddrs("c2")
	if err != nil {
		t.Fatal(err)
	}
	client := func(addr string) *redis.Client {
		r := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond})
		t.Cleanup(func() { r.Close() })
		return r
	}
	c1n2, c1n1, c2n2, c2n5 := client(a1["n2"]), client(a1["n1"]), client(a2["n2"]), client(a2["n5"])
	key := "lock:order" // slot 9975: n2's, replicated by n5
	if err := c1n2.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}

	check := Prove(ctx, "cluster-minority-partition", e, "n2", Params{"clients": "c1"})
	f, _, _ := Get("cluster-minority-partition")
	cut := time.Now()
	h, err := f.Inject(ctx, e, "n2", Params{"clients": "c1"})
	if err != nil {
		t.Fatal(err)
	}
	eff := check(ctx)
	t.Logf("effect: %+v (notes %q)", eff, e.notes)
	if !eff.Seen {
		t.Fatalf("effect: %+v, want n2 seen cut off and serving as a master", eff)
	}
	// Its side: c1 writes to n2, and reaches nobody else; the other side
	// does not reach n2.
	if err := c1n2.Set(ctx, key, "minority", 0).Err(); err != nil {
		t.Fatalf("the minority master refused c1's write right after the cut: %v", err)
	}
	if err := c1n1.Ping(ctx).Err(); err == nil {
		t.Fatal("c1 still reaches n1")
	}
	if err := c2n2.Ping(ctx).Err(); err == nil {
		t.Fatal("c2 still reaches n2")
	}
	// Writes go on until the node timeout, then CLUSTERDOWN; meanwhile the
	// majority promotes n5.
	var lastOK, refused time.Duration
	promoted := time.Duration(0)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && (refused == 0 || promoted == 0); time.Sleep(50 * time.Millisecond) {
		if refused == 0 {
			switch err := c1n2.Set(ctx, key, "minority", 0).Err(); {
			case err == nil:
				lastOK = time.Since(cut)
			case strings.HasPrefix(err.Error(), "CLUSTERDOWN"):
				refused = time.Since(cut)
			default:
				t.Fatalf("c1's write to n2: %v", err)
			}
		}
		if promoted == 0 {
			if r, err := c.Do(ctx, c.Member("n5"), "ROLE"); err == nil && r.([]any)[0] == "master" {
				promoted = time.Since(cut)
			}
		}
	}
	t.Logf("n2 took c1's writes until %v after the cut, refused from %v; n5 promoted after %v",
		lastOK.Round(time.Millisecond), refused.Round(time.Millisecond), promoted.Round(time.Millisecond))
	if refused == 0 || promoted == 0 {
		t.Fatalf("refused %v, promoted %v: want both", refused, promoted)
	}
	if lastOK == 0 {
		t.Fatal("the minority master took no write after the cut")
	}
	// The majority's new master never saw the minority's writes.
	v, err := c2n5.Get(ctx, key).Result()
	if err != nil || v != "before" {
		t.Fatalf("the new master n5 has %q (%v), want the value before the cut", v, err)
	}

	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitClusterOK(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.RefreshClusterRoles(ctx); err != nil {
		t.Fatal(err)
	}
	if r := roleOf(t, c, "n2"); r != "slave" {
		t.Fatalf("n2 is %s after the heal, want a replica of n5", r)
	}
}

// Without a cut, the check is not seen: n2 sees the others connected.
func TestClusterMinorityPartitionCheckWithoutCut(t *testing.T) {
	base, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, NodeTimeout: time.Second})
	check := Prove(context.Background(), "cluster-minority-partition", twoClients{base}, "n2", nil)
	if eff := check(context.Background()); eff.Seen || eff.Unchecked {
		t.Fatalf("check with no cut: %+v, want not seen", eff)
	}
}
