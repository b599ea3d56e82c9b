package lockimpl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewPrimaryClient connects to the single master named by the endpoints,
// directly or through Sentinel discovery.
func NewPrimaryClient(ep Endpoints) (redis.UniversalClient, error) {
	opt := clientTimeouts()
	if len(ep.Sentinels) > 0 {
		if ep.Master == "" {
			return nil, fmt.Errorf("sentinel endpoints need a master name")
		}
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    ep.Master,
			Password:      ep.Password,
			SentinelAddrs: ep.Sentinels,
			DialerRetries: 1,
			DialTimeout:   opt.DialTimeout,
			ReadTimeout:   opt.ReadTimeout,
			WriteTimeout:  opt.WriteTimeout,
			MaxRetries:    -1,
			PoolSize:      4,
		}), nil
	}
	if ep.Primary == "" {
		return nil, fmt.Errorf("no primary endpoint")
	}
	opt.Addr = ep.Primary
	opt.Password = ep.Password
	return redis.NewClient(opt), nil
}

// NewClusterClient connects to a Redis Cluster through the endpoints: it
// dials every address the cluster announces at the client's own address
// for that node (Endpoints.ClusterRemap). It follows no redirection and
// retries nothing inside a command (MaxRedirects -1: go-redis would also
// retry a timed-out command, a SET NX among them); a MOVED or ASK reply
// reloads its slot map and comes back as an error (see Redirected), which
// the lock may follow itself (single-cluster does, once per command).
func NewClusterClient(ep Endpoints) (*redis.ClusterClient, error) {
	opt := clientTimeouts()
	o, err := clusterOptions(ep, opt.DialTimeout)
	if err != nil {
		return nil, err
	}
	o.DialerRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout = opt.DialerRetries, opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout
	return redis.NewClusterClient(o), nil
}

// clusterOptions are what every lockfault cluster client shares: the
// cluster's seeds and password, no redirection followed and no retry
// inside a command, the pool size, and a dialer that reaches each node
// the cluster announces at the client's own proxy (Endpoints.ClusterRemap)
// within dial.
func clusterOptions(ep Endpoints, dial time.Duration) (*redis.ClusterOptions, error) {
	if len(ep.Cluster) == 0 {
		return nil, fmt.Errorf("no cluster endpoints")
	}
	remap := ep.ClusterRemap
	return &redis.ClusterOptions{
		Addrs:        ep.Cluster,
		Password:     ep.Password,
		MaxRedirects: -1,
		MaxRetries:   -1,
		PoolSize:     clientTimeouts().PoolSize,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if a, ok := remap[addr]; ok {
				addr = a
			}
			d := net.Dialer{Timeout: dial}
			return d.DialContext(ctx, network, addr)
		},
	}, nil
}

// Redirected reports whether err is a cluster's refusal that certainly
// executed nothing: MOVED, ASK (the slot is elsewhere), TRYAGAIN (a
// migration in progress) or CLUSTERDOWN.
func Redirected(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// NewNodeClient connects to one node with the harness's default timeouts.
func NewNodeClient(addr string, timeout time.Duration) *redis.Client {
	return NewNodeClientAuth(addr, "", timeout)
}

// NewNodeClientAuth is NewNodeClient authenticating with a password.
func NewNodeClientAuth(addr, password string, timeout time.Duration) *redis.Client {
	opt := clientTimeouts()
	opt.Addr = addr
	opt.Password = password
	if timeout > 0 {
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = timeout, timeout, timeout
	}
	return redis.NewClient(opt)
}

// NodeTimeout is the dial, read and write timeout of the harness's Redis
// clients.
const NodeTimeout = 500 * time.Millisecond

// clientTimeouts: no hidden retries (a retried SET NX would muddy the
// history) and short timeouts so a dead node shows up as an error quickly.
func clientTimeouts() *redis.Options {
	return &redis.Options{
		DialerRetries: 1, // one dial per attempt: go-redis would retry 5 times, 100 ms apart
		DialTimeout:   NodeTimeout,
		ReadTimeout:   NodeTimeout,
		WriteTimeout:  NodeTimeout,
		MaxRetries:    -1,
		PoolSize:      4,
	}
}

// RandomToken returns 20 random bytes in hex, the holder's identity.
func RandomToken() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}
