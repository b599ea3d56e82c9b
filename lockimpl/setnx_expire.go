package lockimpl

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:       "setnx-expire",
		Source:     "003 §35.1.1 pattern 1 (SETNX then EXPIRE); 002 (Redis SETNX page)",
		Promises:   "broken on purpose (claim C1): a holder that dies between SETNX and EXPIRE leaves a key with no TTL, so nobody acquires again",
		Needs:      "single",
		Failpoints: []string{"after-setnx"},
	}, newSetNXExpire)
}

// setnxExpire is the pre-2.6.12 lock: SETNX key token, then EXPIRE key
// seconds as a second command. It reproduces claim C1: the two steps are not
// atomic, so a holder that crashes after SETNX (failpoint "after-setnx")
// leaves a key without a TTL and the lock is never granted again. Release is
// the safe Lua compare-and-delete, so the non-atomic acquire is the only
// defect.
type setnxExpire struct {
	cfg Config
	rdb redis.UniversalClient
}

func newSetNXExpire(cfg Config) (Lock, error) {
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &setnxExpire{cfg: cfg, rdb: rdb}, nil
}

// expireSeconds is the TTL as EXPIRE takes it: whole seconds, rounded up,
// at least one.
func expireSeconds(ttl time.Duration) time.Duration {
	s := (ttl + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	return s * time.Second
}

// Acquire runs SETNX, hits "after-setnx", then EXPIRE. An error from EXPIRE
// is an unknown outcome: the key may now exist without a TTL.
func (s *setnxExpire) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	ttl := expireSeconds(opts.TTL)
	key := KeyFor(resource)
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		ok, err := s.rdb.Do(ctx, "setnx", key, token).Bool()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotAcquired
		}
		s.cfg.Hit("after-setnx")
		if err := s.rdb.Do(ctx, "expire", key, int64(ttl/time.Second)).Err(); err != nil {
			return nil, err
		}
		// The claim is the TTL actually set: whole seconds, rounded up.
		return &Lease{Resource: resource, Token: token, Validity: ttl, ValidUntil: start.Add(ttl)}, nil
	})
}

// Release is the Lua compare-and-delete.
func (s *setnxExpire) Release(ctx context.Context, l *Lease) error {
	return casRelease(ctx, s.rdb, l)
}

func (s *setnxExpire) Close() error { return s.rdb.Close() }
