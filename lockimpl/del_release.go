package lockimpl

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:     "del-release",
		Source:   "003 §35.2.1 (release without an ownership check)",
		Promises: "broken on purpose (claim C2): a holder that stalled past its TTL deletes the next holder's key on release",
		Needs:    "single",
	}, newDelRelease)
}

// delRelease acquires correctly with SET NX PX but releases with a plain
// DEL, checking nothing. It reproduces claim C2 (003 §35.2.1 scenario A): a
// holder whose key expired while it stalled deletes the next holder's key,
// and a third client then acquires while the second still holds.
type delRelease struct {
	cfg Config
	rdb redis.UniversalClient
}

func newDelRelease(cfg Config) (Lock, error) {
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &delRelease{cfg: cfg, rdb: rdb}, nil
}

// Acquire is SET NX PX, as in single.
func (d *delRelease) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		ok, err := d.rdb.SetNX(ctx, KeyFor(resource), token, opts.TTL).Result()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: resource, Token: token, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

// Release is DEL key, whoever owns it. It reports ErrNotHeld only when there
// was no key at all.
func (d *delRelease) Release(ctx context.Context, l *Lease) error {
	n, err := d.rdb.Del(ctx, KeyFor(l.Resource)).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (d *delRelease) Close() error { return d.rdb.Close() }
