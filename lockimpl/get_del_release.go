package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:       "get-del-release",
		Source:     "003 §35.2.1 (GET, compare in the client, then DEL)",
		Promises:   "broken on purpose (claim C3): the key can change hands between the GET and the DEL, which then deletes the new holder's key",
		Needs:      "single",
		Failpoints: []string{"release-after-get"},
	}, newGetDelRelease)
}

// getDelRelease acquires with SET NX PX and releases with GET, a comparison
// in the client, then DEL. It reproduces claim C3 (003 §35.2.1): if the key
// expires and is taken by another client between the GET and the DEL
// (failpoint "release-after-get"), the DEL removes the new holder's key.
type getDelRelease struct {
	cfg Config
	rdb redis.UniversalClient
}

func newGetDelRelease(cfg Config) (Lock, error) {
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &getDelRelease{cfg: cfg, rdb: rdb}, nil
}

// Acquire is SET NX PX, as in single.
func (g *getDelRelease) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		ok, err := g.rdb.SetNX(ctx, KeyFor(resource), token, opts.TTL).Result()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: resource, Token: token, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

// Release is GET; if the value is ours: failpoint "release-after-get", DEL.
func (g *getDelRelease) Release(ctx context.Context, l *Lease) error {
	key := KeyFor(l.Resource)
	v, err := g.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	if v != l.Token {
		return ErrNotHeld
	}
	g.cfg.Hit("release-after-get")
	n, err := g.rdb.Del(ctx, key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld // expired between the GET and the DEL, and nobody took it
	}
	return nil
}

func (g *getDelRelease) Close() error { return g.rdb.Close() }
