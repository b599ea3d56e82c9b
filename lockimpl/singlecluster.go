package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:       "single-cluster",
		Source:     "the single lock (Redis docs, seeds 001/002) on a Redis Cluster through go-redis's ClusterClient",
		Promises:   "mutual exclusion while the master serving the key's slot does not fail; a crashed holder's lock frees within one TTL",
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
	return &singleCluster{single{cfg: cfg, rdb: rdb}, rdb}, nil
}

type singleCluster struct {
	single
	cc *redis.ClusterClient
}

// Acquire is single's, with a redirection (the slot map was stale, or the
// cluster was down) taken as not acquired, so the next attempt goes to the
// node the reloaded map names. Any other error reloads the slot map too (a
// node that fails may have been failed over, as redis-py's cluster client
// assumes on a connection error; go-redis alone would keep the old map for
// up to 10 s).
func (s *singleCluster) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		ok, err := s.rdb.SetNX(ctx, KeyFor(resource), token, opts.TTL).Result()
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
	if err != nil && !errors.Is(err, ErrNotHeld) {
		s.cc.ReloadState(ctx)
	}
	return err
}
