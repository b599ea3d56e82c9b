package golibs

import (
	"fmt"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

func init() {
	register(lockimpl.Info{
		Name: "redsync-cluster",
		Source: "github.com/go-redsync/redsync/v4 with one goredis/v9 pool on go-redis's ClusterClient (following MOVED and ASK), used as published: " +
			"NewMutex(WithExpiry, WithTries, WithRetryDelayFunc), LockContext, UnlockContext, ExtendContext",
		Promises: "redsync with one pool: a quorum of 1, the key on the master serving its slot; mutual exclusion while that master " +
			"does not fail; validity = TTL - elapsed - 1% of TTL (redsync's Until)",
		Needs: lockfault.NeedsCluster,
		Caps:  []string{lockimpl.CapExtend},
	}, "github.com/go-redsync/redsync/v4", newRedsyncCluster)
}

// newRedsyncCluster is the redsync adapter (redsync.go) with a single pool
// on a cluster client (newClusterClient): redsync sees one "master", the
// cluster, and the client sends the key to the master serving its slot.
func newRedsyncCluster(cfg lockimpl.Config) (lockimpl.Lock, error) {
	cc, err := newClusterClient(cfg.Endpoints, lockimpl.NodeTimeout)
	if err != nil {
		return nil, fmt.Errorf("redsync-cluster: %w", err)
	}
	return &redsyncLock{cfg: cfg, rdbs: []redis.UniversalClient{cc}, rs: redsync.New(goredis.NewPool(cc))}, nil
}
