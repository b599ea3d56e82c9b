package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:       "get-set",
		Source:     "003 §35.1.1 pattern 2 (GET, then SET, then EXPIRE)",
		Promises:   "broken on purpose: check-then-act, two clients that both GET an empty key both SET it and both hold the lock",
		Needs:      "single",
		Failpoints: []string{"after-get", "after-set"},
	}, newGetSet)
}

// getSet checks with GET and, when the key is empty, writes it with a plain
// SET followed by PEXPIRE. It reproduces the check-then-act race of 003
// §35.1.1 pattern 2: two clients that both read an empty key (failpoint
// "after-get") both SET it and both get a lease. A crash at "after-set"
// additionally leaves a key with no TTL. Release is the Lua
// compare-and-delete.
type getSet struct {
	cfg Config
	rdb redis.UniversalClient
}

func newGetSet(cfg Config) (Lock, error) {
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &getSet{cfg: cfg, rdb: rdb}, nil
}

// Acquire is GET; if the key is empty: failpoint "after-get", SET, failpoint
// "after-set", PEXPIRE.
func (g *getSet) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	key := KeyFor(resource)
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		err := g.rdb.Get(ctx, key).Err()
		if err == nil {
			return nil, ErrNotAcquired
		}
		if !errors.Is(err, redis.Nil) {
			return nil, err
		}
		g.cfg.Hit("after-get")
		if err := g.rdb.Set(ctx, key, token, 0).Err(); err != nil {
			return nil, err
		}
		g.cfg.Hit("after-set")
		if err := g.rdb.PExpire(ctx, key, opts.TTL).Err(); err != nil {
			return nil, err
		}
		return &Lease{Resource: resource, Token: token, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

// Release is the Lua compare-and-delete.
func (g *getSet) Release(ctx context.Context, l *Lease) error {
	return casRelease(ctx, g.rdb, l)
}

func (g *getSet) Close() error { return g.rdb.Close() }
