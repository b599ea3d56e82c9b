package golibs

import (
	"fmt"

	"github.com/bsm/redislock"
	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
)

func init() {
	register(lockimpl.Info{
		Name: "redislock-cluster",
		Source: "github.com/bsm/redislock v0.9 (README and redislock.go) on go-redis's ClusterClient (following MOVED and ASK), used as published: " +
			"Obtain with a RetryStrategy, Release, Refresh, TTL",
		Promises: "mutual exclusion while the master serving the key's slot does not fail; a crashed holder's lock frees within one TTL",
		Needs:    lockfault.NeedsCluster,
		Caps:     []string{lockimpl.CapExtend},
	}, "github.com/bsm/redislock", newRedislockCluster)
}

// newRedislockCluster is the redislock adapter (redislock.go) on a cluster
// client (newClusterClient): its one key goes to the master serving its
// slot.
func newRedislockCluster(cfg lockimpl.Config) (lockimpl.Lock, error) {
	cc, err := newClusterClient(cfg.Endpoints, lockimpl.NodeTimeout)
	if err != nil {
		return nil, fmt.Errorf("redislock-cluster: %w", err)
	}
	return &redislockLock{cfg: cfg, rdb: cc, cl: redislock.New(cc)}, nil
}
