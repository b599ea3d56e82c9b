package workercheck

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/register"
)

// Servers a check runs against.
const (
	// mastersPerSet is how many independent masters a lock that needs
	// masters gets (a majority is 2).
	mastersPerSet = 3
	// maxAccesses bounds the resource accesses kept for the checks.
	maxAccesses = 10000
	// redisTimeout bounds one inspection of a Redis server.
	redisTimeout = 5 * time.Second
)

// servers are the real servers of one Run: redis-server processes on free
// loopback ports (cluster's process backend: each node checked to be the
// one listening, else moved), started when a check first needs them, in
// two independent sets (the second is where control/endpoints re-points a
// worker), and lockfault's protected resource.
type servers struct {
	needs   string // the lock's, from handshake/describe
	backend *cluster.Process
	sets    [2][]cluster.Node
	res     *register.Server

	mu       sync.Mutex
	accesses []history.Event
}

// runError ends a whole Run, not one check: the worker cannot be started
// at all, or a server does not start. It is not a verdict on the worker.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

func newServers() (*servers, error) {
	b, err := cluster.NewProcess("worker-check")
	if err != nil {
		return nil, err
	}
	s := &servers{backend: b, res: &register.Server{}}
	s.res.Record = s.record
	if err := s.res.Listen("127.0.0.1:0"); err != nil {
		b.Close(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *servers) record(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accesses) < maxAccesses {
		s.accesses = append(s.accesses, e)
	}
}

// accessesOf returns the resource accesses made under a lease.
func (s *servers) accessesOf(lease string) []history.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []history.Event
	for _, e := range s.accesses {
		if e.Lease == lease {
			out = append(out, e)
		}
	}
	return out
}

// set returns the addresses of server set i (0 or 1), starting them on
// first use: one redis-server, or mastersPerSet for a lock that needs
// masters.
func (s *servers) set(ctx context.Context, i int) []string {
	n := 1
	if s.needs == "masters" {
		n = mastersPerSet
	}
	for len(s.sets[i]) < n {
		sctx, cancel := context.WithTimeout(ctx, RedisStartTimeout)
		node, err := s.backend.Start(sctx, cluster.NodeSpec{Name: fmt.Sprintf("r%d-%d", i+1, len(s.sets[i])+1), Kind: cluster.KindRedis})
		cancel()
		if err != nil {
			panic(runError{err})
		}
		s.sets[i] = append(s.sets[i], node)
	}
	var out []string
	for _, node := range s.sets[i] {
		out = append(out, node.Addr())
	}
	return out
}

// endpoints are the endpoints of server set i for the lock's needs.
func (s *servers) endpoints(ctx context.Context, i int) lockimpl.Endpoints {
	addrs := s.set(ctx, i)
	if s.needs == "masters" {
		return lockimpl.Endpoints{Masters: addrs}
	}
	return lockimpl.Endpoints{Primary: addrs[0]}
}

// keys returns the names of every key of server set i, per server.
func (s *servers) keys(ctx context.Context, i int) []map[string]bool {
	var out []map[string]bool
	for _, addr := range s.set(ctx, i) {
		c := lockimpl.NewNodeClient(addr, redisTimeout)
		ks, err := c.Keys(ctx, "*").Result()
		c.Close()
		if err != nil {
			panic(runError{fmt.Errorf("KEYS on %s: %w", addr, err)})
		}
		m := map[string]bool{}
		for _, k := range ks {
			m[k] = true
		}
		out = append(out, m)
	}
	return out
}

// newKeys returns the keys of server set i that are not in before, per
// server, with their time to live in ms (-1: none).
func (s *servers) newKeys(ctx context.Context, i int, before []map[string]bool) []map[string]int64 {
	var out []map[string]int64
	for j, now := range s.keys(ctx, i) {
		m := map[string]int64{}
		for k := range now {
			if !before[j][k] {
				m[k] = -1
			}
		}
		out = append(out, m)
	}
	s.ttls(ctx, i, out)
	return out
}

// refresh returns the keys of per, with their time to live now.
func (s *servers) refresh(ctx context.Context, i int, per []map[string]int64) []map[string]int64 {
	out := make([]map[string]int64, len(per))
	for j, m := range per {
		out[j] = maps.Clone(m)
	}
	s.ttls(ctx, i, out)
	return out
}

// ttls fills in the time to live (ms; -1: none) of the given keys of
// server set i; a key gone meanwhile is dropped.
func (s *servers) ttls(ctx context.Context, i int, keys []map[string]int64) {
	for j, addr := range s.set(ctx, i) {
		c := lockimpl.NewNodeClient(addr, redisTimeout)
		for k := range keys[j] {
			d, err := c.PTTL(ctx, k).Result()
			if err != nil {
				c.Close()
				panic(runError{fmt.Errorf("PTTL on %s: %w", addr, err)})
			}
			switch {
			case d >= 0:
				keys[j][k] = d.Milliseconds()
			case d == -2*time.Nanosecond: // gone meanwhile
				delete(keys[j], k)
			default:
				keys[j][k] = -1
			}
		}
		c.Close()
	}
}

// close stops the servers and removes their directory.
func (s *servers) close() error {
	s.res.Close()
	ctx, cancel := context.WithTimeout(context.Background(), KillTimeout)
	defer cancel()
	return s.backend.Close(ctx)
}
