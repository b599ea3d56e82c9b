package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault"
)

// testPassword is generated per run: no secret is ever committed.
func testPassword(t *testing.T) string {
	var b [12]byte
	rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:])
}

// topology.password: every node requires it (requirepass), replicas sync
// with it (masterauth: Start waits for the link), Sentinels monitor with it
// (auth-pass: Start waits until they see the replica), and a client without
// it or with a wrong one is refused.
func TestAuthOnNodesReplicasAndSentinels(t *testing.T) {
	ctx := context.Background()
	pw := testPassword(t)
	c := startTopology(t, Topology{Kind: lockfault.Replicated, Replicas: 1, Sentinels: 3, Password: pw})
	addrs, err := c.ClientAddrs("c1")
	if err != nil {
		t.Fatal(err)
	}
	try := func(node, password string) error {
		cl := redis.NewClient(&redis.Options{Addr: addrs[node], Password: password, DialTimeout: time.Second, MaxRetries: -1})
		defer cl.Close()
		return cl.Set(ctx, "k", "v", 0).Err()
	}
	if err := try("n1", pw); err != nil {
		t.Fatalf("the right password is refused: %v", err)
	}
	if err := try("n1", ""); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("no password: %v, want NOAUTH", err)
	}
	if err := try("n1", pw+"x"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("wrong password: %v, want WRONGPASS", err)
	}
	// The write replicated to n2 (which needs masterauth to sync).
	rep := c.redisClient(c.Member("n2"))
	defer rep.Close()
	waitKey(t, rep, "k", true)
	// Sentinel knows the master through auth-pass: it reports it as up.
	v, err := c.Do(ctx, c.WithRole(RoleSentinel)[0], "SENTINEL", "MASTER", SentinelMaster)
	if err != nil {
		t.Fatal(err)
	}
	if f := flatten(v); f["flags"] != "master" || f["num-slaves"] != "1" {
		t.Errorf("sentinel sees %v", f)
	}
}

// Without the Sentinel's auth-pass the same topology cannot start: the
// Sentinels never see the replica (the test above is not vacuous).
func TestAuthSentinelWithoutAuthPassFails(t *testing.T) {
	ctx := context.Background()
	pw := testPassword(t)
	b, err := NewProcess("auth-neg")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	nw, err := NewNet(b.ProxyHost(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	c := &Cluster{Backend: b, Net: nw, Topology: Topology{Kind: lockfault.Replicated, Replicas: 1, Password: pw}}
	if err := c.startReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	p, _ := nw.Get(PeerProxy("n1"))
	host, port, _ := strings.Cut(p.Listen, ":")
	conf := "sentinel monitor " + SentinelMaster + " " + host + " " + port + " 1\nsentinel down-after-milliseconds " + SentinelMaster + " 1000\n"
	n, err := b.Start(ctx, NodeSpec{Name: "s1", Kind: KindSentinel, Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	c.add(&Member{Node: n, Name: "s1", Role: RoleSentinel})
	c.Topology.Sentinels = 1
	if err := c.WaitSentinelsReady(ctx, 3*time.Second); err == nil {
		t.Fatal("a Sentinel without auth-pass became ready against a password-protected master")
	}
}
