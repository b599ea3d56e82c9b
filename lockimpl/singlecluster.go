package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:       "single-cluster",
		Source:     "the single lock (Redis docs, seeds 001/002) on a Redis Cluster through go-redis's ClusterClient",
		Promises:   "mutual exclusion while the master serving the key's slot does not fail; a crashed holder's lock frees within one TTL; a held lock survives a migration of its key's slot",
		Needs:      NeedsCluster,
		Caps:       []string{CapExtend},
		Failpoints: []string{"after-extend"},
	}, newSingleCluster)
}

// newSingleCluster is single (SET NX PX, Lua compare-and-delete and
// compare-and-pexpire) on a cluster client: the key lives on the master
// serving its slot, and a failover of that master to an asynchronous
// replica loses it as on one master with a replica (claim C5).
func newSingleCluster(cfg Config) (Lock, error) {
	rdb, err := NewClusterClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &singleCluster{single: single{cfg: cfg, rdb: rdb}, cc: rdb, nodes: map[string]*redis.Client{}}, nil
}

// singleCluster follows a redirection itself, once per command: the
// cluster client follows none (NewClusterClient), so that nothing it sends
// is retried after a timeout, but a MOVED or ASK reply says the node
// executed nothing, and sending the command where it points is safe. A
// MOVED goes to the node named (and the slot map is reloaded); an ASK (the
// key's slot is migrating and the key is not, or no longer, on the source)
// goes to the node named after ASKING on the same connection, as the
// cluster specification asks. A slot still moving after that (TRYAGAIN, a
// second redirection) or a cluster down is not acquired.
type singleCluster struct {
	single
	cc *redis.ClusterClient

	mu    sync.Mutex
	nodes map[string]*redis.Client // one client per announced address a redirection named
}

// Acquire is single's, following a redirection; any error other than a
// redirection reloads the slot map (a node that fails may have been failed
// over, as redis-py's cluster client assumes on a connection error;
// go-redis alone would keep the old map for up to 10 s).
func (s *singleCluster) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	key := KeyFor(resource)
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		ok, err := s.rdb.SetNX(ctx, key, token, opts.TTL).Result()
		if Redirected(err) {
			var v any
			v, err = s.follow(ctx, err, "SET", key, token, "NX", "PX", opts.TTL.Milliseconds())
			ok = err == nil && v == "OK"
			if errors.Is(err, redis.Nil) {
				err = nil
			}
		}
		if Redirected(err) {
			return nil, fmt.Errorf("%w: %v", ErrNotAcquired, err)
		}
		if err != nil {
			s.cc.ReloadState(ctx)
			return nil, err
		}
		if !ok {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: resource, Token: token, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

func (s *singleCluster) Release(ctx context.Context, l *Lease) error {
	err := s.single.Release(ctx, l)
	if Redirected(err) {
		var v any
		if v, err = s.follow(ctx, err, "EVAL", UnlockScript, 1, KeyFor(l.Resource), l.Token); err == nil && v == int64(0) {
			err = ErrNotHeld
		}
	}
	if err != nil && !errors.Is(err, ErrNotHeld) {
		s.cc.ReloadState(ctx)
	}
	return err
}

func (s *singleCluster) Extend(ctx context.Context, l *Lease, ttl time.Duration) error {
	start := time.Now()
	err := s.single.Extend(ctx, l, ttl)
	if !Redirected(err) {
		return err
	}
	v, err := s.follow(ctx, err, "EVAL", ExtendScript, 1, KeyFor(l.Resource), l.Token, ttl.Milliseconds())
	if err != nil {
		return err
	}
	if v == int64(0) {
		return ErrNotHeld
	}
	s.cfg.Hit("after-extend")
	l.Validity, l.ValidUntil = ttl, start.Add(ttl)
	return nil
}

// follow sends args once more where the redirection redir points: after
// ASKING for an ASK, as is for a MOVED (then the slot map is reloaded).
// Anything else comes back as redir.
func (s *singleCluster) follow(ctx context.Context, redir error, args ...any) (any, error) {
	f := strings.Fields(redir.Error())
	if len(f) != 3 || (f[0] != "ASK" && f[0] != "MOVED") {
		return nil, redir
	}
	node := s.node(f[2])
	if f[0] == "MOVED" {
		s.cc.ReloadState(ctx)
		return node.Do(ctx, args...).Result()
	}
	pipe := node.Pipeline()
	asking := pipe.Do(ctx, "ASKING")
	cmd := pipe.Do(ctx, args...)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && asking.Err() != nil {
		return nil, asking.Err()
	}
	return cmd.Result()
}

// node is a client for an announced address, dialled at the client's own
// address for that node (Endpoints.ClusterRemap).
func (s *singleCluster) node(addr string) *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.nodes[addr]; ok {
		return c
	}
	dial := addr
	if a, ok := s.cfg.Endpoints.ClusterRemap[addr]; ok {
		dial = a
	}
	c := NewNodeClientAuth(dial, s.cfg.Endpoints.Password, 0)
	s.nodes[addr] = c
	return c
}

func (s *singleCluster) Close() error {
	s.mu.Lock()
	for _, c := range s.nodes {
		c.Close()
	}
	s.nodes = map[string]*redis.Client{}
	s.mu.Unlock()
	return s.single.Close()
}
