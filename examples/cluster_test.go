package examples

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/worker"
)

// clusterWorker is a library worker that runs on a Redis Cluster.
type clusterWorker struct {
	lock   string
	argv   []string
	extend bool
}

var clusterWorkers = []clusterWorker{
	{"redis-py-cluster", []string{"/usr/bin/python3", "python-redis/worker_cluster.py"}, true},
	// phpredis has no remap: the PHP workers run under the connect remap
	// (faults/clockshim/connectremap.c), which dials the announced
	// addresses at the client's own (Worker::remapConnects).
	{"symfony-redis-cluster", []string{"/usr/bin/php", "php-symfony/worker_cluster.php"}, true},
	{"laravel-redis-cluster", []string{"/usr/bin/php", "php-laravel/worker_cluster.php"}, false},
}

// buildShims builds the workers' LD_PRELOAD libraries (make shim): the
// clock shim and the PHP workers' connect remap.
func buildShims(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("bash", "../faults/clockshim/build.sh").CombinedOutput(); err != nil {
		t.Fatalf("the shims do not build (make deps installs gcc): %v\n%s", err, out)
	}
}

// sentOn reads, for every connection open on the named proxy, the bytes its
// client has sent (by socket inode).
func sentOn(t *testing.T, c *cluster.Cluster, name string) map[uint32]uint64 {
	t.Helper()
	b, err := c.Net.LinkBytes([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]uint64{}
	for inode, cb := range b[name] {
		out[inode] = cb.FromClient
	}
	return out
}

// sentSince is how many bytes clients sent on the connections open on the
// named proxy since the reading before (a connection opened since counts
// from zero).
func sentSince(t *testing.T, c *cluster.Cluster, name string, before map[uint32]uint64) uint64 {
	t.Helper()
	var n uint64
	for inode, b := range sentOn(t, c, name) {
		if b > before[inode] {
			n += b - before[inode]
		}
	}
	return n
}

// peerAccepts is how many connections the nodes' peer proxies (the
// addresses the cluster announces) have accepted, per proxy. With no
// replicas, nothing but a client that dials an announced address uses them.
func peerAccepts(t *testing.T, c *cluster.Cluster) map[string]uint64 {
	t.Helper()
	var names []string
	for _, m := range c.DataNodes() {
		names = append(names, cluster.PeerProxy(m.Name))
	}
	n, err := c.Net.Accepted(names)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// testCluster starts a Redis Cluster of 3 masters on local processes.
func testCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	ctx := context.Background()
	b, err := cluster.NewProcess("examples-cluster")
	if err != nil {
		t.Fatal(err)
	}
	nw, err := cluster.NewNet(b.ProxyHost(), strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		b.Close(ctx)
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, b, nw, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, NodeTimeout: time.Second})
	if err != nil {
		b.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// clusterClient is one worker session of a cluster test, as the harness
// would drive it: its endpoints are its own proxies and the remap of every
// announced address to them (runner's endpoints for needs: cluster).
type clusterClient struct {
	t    *testing.T
	name string
	send func(string)
	recv func() worker.Message
	op   int64
}

// clusterEndpoints is the init message's endpoints for client name of a
// cluster: every node's client proxy as a seed, and the remap of the
// addresses the nodes announce to that client's proxies.
func clusterEndpoints(t *testing.T, c *cluster.Cluster, name string) []byte {
	t.Helper()
	addrs, err := c.ClientAddrs(name)
	if err != nil {
		t.Fatal(err)
	}
	remap, err := c.ClientRemap(name)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, m := range c.DataNodes() {
		seeds = append(seeds, addrs[m.Name])
	}
	ep, _ := json.Marshal(map[string]any{"cluster": seeds, "cluster_remap": remap})
	return ep
}

func startClusterClient(t *testing.T, c *cluster.Cluster, w clusterWorker, name string) *clusterClient {
	t.Helper()
	ep := clusterEndpoints(t, c, name)
	send, recv := session(t, w.argv)
	// The resource is never dialled: these tests run no critical section.
	send(fmt.Sprintf(`{"cmd":"init","client":%q,"lock":%q,"endpoints":%s,"resource":"127.0.0.1:9"}`, name, w.lock, ep))
	if m := recv(); m.Type != "ready" || string(m.Needs) != "cluster" {
		t.Fatalf("%s: init with cluster endpoints: %+v", name, m)
	}
	return &clusterClient{t: t, name: name, send: send, recv: recv}
}

// do sends one operation and returns its reply's status and error.
func (cc *clusterClient) do(format string, args ...any) (status, msg string) {
	cc.t.Helper()
	cc.op++
	cc.send(fmt.Sprintf(format, append([]any{cc.op}, args...)...))
	m := cc.recv()
	if m.Type != "reply" || m.Op != cc.op {
		cc.t.Fatalf("%s: op %d: %+v", cc.name, cc.op, m)
	}
	return m.Status, m.Error
}

func (cc *clusterClient) acquire(key, lease string, waitMs int) (string, string) {
	cc.t.Helper()
	return cc.acquireTTL(key, lease, 20000, waitMs)
}

func (cc *clusterClient) acquireTTL(key, lease string, ttlMs, waitMs int) (string, string) {
	cc.t.Helper()
	return cc.do(`{"cmd":"acquire","op":%d,"key":%q,"lease":%q,"ttl_ms":%d,"wait_ms":%d}`, key, lease, ttlMs, waitMs)
}

func (cc *clusterClient) release(lease string) (string, string) {
	cc.t.Helper()
	return cc.do(`{"cmd":"release","op":%d,"lease":%q}`, lease)
}

func (cc *clusterClient) extend(lease string) (string, string) {
	cc.t.Helper()
	return cc.do(`{"cmd":"extend","op":%d,"lease":%q,"ttl_ms":25000}`, lease)
}

// want fails the test unless an operation ended as wanted.
func want(t *testing.T, what, wantStatus string, status, msg string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: %s (%s), want %s", what, status, msg, wantStatus)
	}
}

// ownerOf is the master serving key's slot: the one that answers no MOVED.
func ownerOf(t *testing.T, c *cluster.Cluster, key string) *cluster.Member {
	t.Helper()
	for _, m := range c.WithRole(cluster.RoleMaster) {
		if _, err := c.Do(context.Background(), m, "EXISTS", key); err == nil {
			return m
		}
	}
	t.Fatalf("no master serves %s", key)
	return nil
}

// Each cluster worker runs its library's lock on a Redis Cluster as
// promised: on keys of every master one client excludes another, extends
// (where the library can), releases, and a released lease cannot be
// released again; a held lock survives a migration of its key's slot
// (ASK while it moves: the second client is refused, the holder extends and
// releases; MOVED once it moved: a stale slot map is corrected); and the
// redirections are followed through the client's own proxies (redis-py's
// connection_class, the PHP workers' connect remap), with the announced
// addresses cut: a cut of the client's own proxy to the node reaches it.
// Every worker's commands to every node arrive on its own proxy to that
// node, once it has read the slot map, and none on the shared peer proxies
// (the addresses the cluster announces).
func TestClusterWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes")
	}
	buildShims(t)
	for _, w := range clusterWorkers {
		t.Run(w.lock, func(t *testing.T) {
			c := testCluster(t)
			peers := peerAccepts(t, c)
			a := startClusterClient(t, c, w, "c1")
			b := startClusterClient(t, c, w, "c2")
			lease := 0
			next := func() string { lease++; return fmt.Sprintf("L%d", lease) }

			owners := map[string]bool{}
			for i := 0; i < 12; i++ {
				key := fmt.Sprintf("res-%d", i)
				owner := ownerOf(t, c, key)
				owners[owner.Name] = true
				la, lb := next(), next()
				own := cluster.ClientProxy("c1", owner.Name)
				before := sentOn(t, c, own)
				st, msg := a.acquire(key, la, 0)
				want(t, key+": c1 acquire", "ok", st, msg)
				if sentSince(t, c, own, before) == 0 {
					t.Fatalf("%s: c1 acquired on %s, and nothing arrived on its own proxy %s: its command took another path", key, owner.Name, own)
				}
				st, msg = b.acquire(key, lb, 100)
				want(t, key+": c2 acquire of a held lock", "fail", st, msg)
				if w.extend {
					st, msg = a.extend(la)
					want(t, key+": c1 extend", "ok", st, msg)
				}
				st, msg = a.release(la)
				want(t, key+": c1 release", "ok", st, msg)
				st, msg = a.release(la)
				want(t, key+": c1 release of a released lease", "fail", st, msg)
				if w.extend {
					st, msg = a.extend(la)
					want(t, key+": c1 extend of a released lease", "fail", st, msg)
				}
				lc := next()
				st, msg = b.acquire(key, lc, 0)
				want(t, key+": c2 acquire after the release", "ok", st, msg)
				st, msg = b.release(lc)
				want(t, key+": c2 release", "ok", st, msg)
			}
			if len(owners) != 3 {
				t.Fatalf("the keys fell on masters %v only", owners)
			}
			if now := peerAccepts(t, c); !maps.Equal(now, peers) {
				t.Fatalf("the peer proxies (the announced addresses) accepted connections while only c1 and c2 ran: %v, before %v: a client dialed an announced address, not its own proxy", now, peers)
			}

			// A migration of the key's slot from src to dst, stepped.
			ctx := context.Background()
			key := "order"
			src := ownerOf(t, c, key)
			var dst *cluster.Member
			for _, m := range c.WithRole(cluster.RoleMaster) {
				if m != src {
					dst = m
					break
				}
			}
			id := func(m *cluster.Member) string {
				v, err := c.Do(ctx, m, "CLUSTER", "MYID")
				if err != nil {
					t.Fatal(err)
				}
				return v.(string)
			}
			admin := func(m *cluster.Member, args ...any) {
				t.Helper()
				if _, err := c.Do(ctx, m, args...); err != nil {
					t.Fatalf("%s %v: %v", m.Name, args, err)
				}
			}
			slot := cluster.KeySlot(key)
			srcID, dstID := id(src), id(dst)
			l1 := next()
			st, msg := a.acquire(key, l1, 0)
			want(t, "c1 acquire before the migration", "ok", st, msg)
			admin(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
			admin(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
			dstAddr, _ := c.Announced(dst)
			host, port, _ := strings.Cut(dstAddr, ":")
			admin(src, "MIGRATE", host, port, "", 0, 5000, "KEYS", key)
			if _, err := c.Do(ctx, src, "GET", key); err == nil || !strings.HasPrefix(err.Error(), "ASK ") {
				t.Fatalf("the source answers %v for the moved key, want ASK", err)
			}
			st, msg = b.acquire(key, next(), 100)
			want(t, "c2 acquire while the key's slot migrates", "fail", st, msg)
			if w.extend {
				st, msg = a.extend(l1)
				want(t, "c1 extend while the key's slot migrates", "ok", st, msg)
			}
			st, msg = a.release(l1)
			want(t, "c1 release while the key's slot migrates", "ok", st, msg)
			l2 := next()
			st, msg = b.acquire(key, l2, 0)
			want(t, "c2 acquire after the release, while the slot migrates", "ok", st, msg)
			for _, m := range c.WithRole(cluster.RoleMaster) {
				admin(m, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
			}
			if err := c.WaitClusterOK(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Do(ctx, src, "GET", key); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
				t.Fatalf("the source answers %v after the migration, want MOVED", err)
			}

			// The redirections go through the client's own proxy to
			// dst (remapped). Nothing reaches a node through the
			// announced addresses: cut, they change nothing.
			path := cluster.ClientProxy("c1", dst.Name)
			for _, m := range c.DataNodes() {
				p, _ := c.Net.Get(cluster.PeerProxy(m.Name))
				if err := p.Disable(); err != nil {
					t.Fatal(err)
				}
			}
			st, msg = b.release(l2)
			want(t, "c2 release after the migration (its slot map is stale: MOVED)", "ok", st, msg)
			l3 := next()
			st, msg = a.acquireTTL(key, l3, 3000, 0)
			want(t, "c1 acquire after the migration (MOVED)", "ok", st, msg)
			if n, err := c.Net.Conns(path); err != nil || n == 0 {
				t.Fatalf("no connection open on %s after c1 followed the MOVED to %s (%d, %v)", path, dst.Name, n, err)
			}
			p, _ := c.Net.Get(path)
			if err := p.Disable(); err != nil {
				t.Fatal(err)
			}
			st, msg = a.release(l3)
			if st == "ok" {
				t.Fatalf("c1 released on %s with %s cut: its commands to %s bypass that proxy", dst.Name, path, dst.Name)
			}
			t.Logf("with %s cut, c1's release: %s (%s)", path, st, msg)
			if err := p.Enable(); err != nil {
				t.Fatal(err)
			}
			// The cut release's outcome is unknown (info): the key may
			// still be there, and a library may have forgotten the
			// grant (redis-py's Lock.release drops its token before it
			// sends the script): with the path back, c2 acquires within
			// l3's TTL, and c1, once c2 released, acquires again on dst.
			l4 := next()
			st, msg = b.acquire(key, l4, 6000)
			want(t, "c2 acquire once the path is back (within c1's TTL)", "ok", st, msg)
			st, msg = b.release(l4)
			want(t, "c2 release", "ok", st, msg)
			st, msg = a.acquire(key, next(), 2000)
			want(t, "c1 acquire once the path is back", "ok", st, msg)
		})
	}
}

// The path check of TestClusterWorkers can fail: with the announced
// addresses (the peer proxies) cut, the redis-py worker still acquires
// through its own proxies, and the same worker with its remap taken out
// (testdata/noremap_cluster_worker.py), which dials the announced
// addresses after reading the slot map, does not (its init or its
// acquire fails).
func TestClusterRemapCheckCatchesADirectDial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes")
	}
	c := testCluster(t)
	for _, m := range c.DataNodes() {
		p, _ := c.Net.Get(cluster.PeerProxy(m.Name))
		if err := p.Disable(); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range []struct {
		argv   []string
		wantOK bool
	}{
		{[]string{"/usr/bin/python3", "python-redis/worker_cluster.py"}, true},
		{[]string{"/usr/bin/python3", "testdata/noremap_cluster_worker.py"}, false},
	} {
		name := fmt.Sprintf("c%d", i+1)
		ep := clusterEndpoints(t, c, name)
		send, recv := session(t, w.argv)
		send(fmt.Sprintf(`{"cmd":"init","client":%q,"endpoints":%s,"resource":"127.0.0.1:9"}`, name, ep))
		// redis-py's cluster client sends COMMAND to a node as it is
		// made: a client that dials the cut addresses may fail already.
		st, msg := "", ""
		if m := recv(); m.Type != "ready" {
			st, msg = m.Type, m.Error
		} else {
			send(`{"cmd":"acquire","op":1,"key":"res-0","lease":"L1","ttl_ms":20000,"wait_ms":0}`)
			m := recv()
			st, msg = m.Status, m.Error
		}
		if (st == "ok") != w.wantOK {
			t.Errorf("%s with the peer proxies cut: acquire %s (%s), want ok %v", w.argv[1], st, msg, w.wantOK)
		}
		t.Logf("%s with the peer proxies cut: init or acquire %s (%.160s)", w.argv[1], st, msg)
	}
}
