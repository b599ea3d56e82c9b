package golibs

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/rueidis"
)

func init() {
	register(lockimpl.Info{
		Name: "rueidislock-cluster",
		Source: "github.com/redis/rueidis/rueidislock (README and lock.go) on a rueidis client given the cluster's seeds (rueidis detects " +
			"cluster mode itself), used as published: NewLocker(LockerOption), TryWithContext, the lock context's cancel function; " +
			"its requests are observed through LockerOption.ClientBuilder",
		Promises: "rueidislock's README: a lock is KeyMajority of 2*KeyMajority-1 keys (SET NX PXAT) within KeyValidity, " +
			"extended every ExtendInterval while held; the lock's context is cancelled at once when the majority is no longer held; " +
			"on a cluster the keys (rueidislock:<i>:<name>) fall in different slots, on the masters those slots choose",
		Needs: lockfault.NeedsCluster,
		Caps:  []string{lockimpl.CapWatchdog},
		Options: []string{optKeyMajority, optExtendInterval, optTryNextAfter, optNoLoopTracking,
			optDisableCache, optFallbackSETPX},
	}, "github.com/redis/rueidis", newRueidislockCluster)
}

// newRueidislockCluster is the rueidislock adapter (rueidislock.go) on the
// cluster's seeds: rueidis reads the slot map itself and dials every
// address the cluster announces through DialCtxFn, at the client's own
// address for that node (Endpoints.ClusterRemap), so that its requests go
// through the client's proxies.
func newRueidislockCluster(cfg lockimpl.Config) (lockimpl.Lock, error) {
	if len(cfg.Endpoints.Cluster) == 0 {
		return nil, fmt.Errorf("rueidislock-cluster: no cluster endpoints")
	}
	remap := cfg.Endpoints.ClusterRemap
	co := rueidis.ClientOption{
		InitAddress: cfg.Endpoints.Cluster,
		Password:    cfg.Endpoints.Password,
		DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			if a, ok := remap[addr]; ok {
				addr = a
			}
			return d.DialContext(ctx, "tcp", addr)
		},
	}
	return newRueidislockOn(cfg, co)
}
