package golibs

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// newClusterClient is go-redis's ClusterClient as a user of a Redis
// Cluster configures it, on the run's endpoints: the client's own proxies
// as seeds, every address the cluster announces (CLUSTER SLOTS, MOVED,
// ASK) dialled at the client's own address for that node
// (Endpoints.ClusterRemap), so that no request bypasses the proxies and
// every network fault reaches it. It follows redirections as go-redis
// does by default (MaxRedirects 3, which also lets it retry a command
// that timed out on another attempt: go-redis's behaviour as published),
// with lockfault's timeouts, one dial per attempt, and the context's
// deadline on every request.
func newClusterClient(ep lockimpl.Endpoints, timeout time.Duration) (*redis.ClusterClient, error) {
	if len(ep.Cluster) == 0 {
		return nil, fmt.Errorf("no cluster endpoints")
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 ep.Cluster,
		Password:              ep.Password,
		DialerRetries:         1,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              4,
		DisableIdentity:       true,
		Dialer:                remapDialer(ep, timeout),
	}), nil
}

// remapDialer dials an announced address at the client's own address for
// that node (Endpoints.ClusterRemap); an address it does not know is
// dialled as is.
func remapDialer(ep lockimpl.Endpoints, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	remap := ep.ClusterRemap
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := remap[addr]; ok {
			addr = a
		}
		d := net.Dialer{Timeout: timeout}
		return d.DialContext(ctx, network, addr)
	}
}
