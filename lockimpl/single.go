package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// UnlockScript is the compare-and-delete release from the Redis documentation
// (seeds 001, 002, 003 §35.2.2).
const UnlockScript = `if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end`

// ExtendScript is the compare-and-pexpire extension.
const ExtendScript = `if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end`

var (
	unlockScript = redis.NewScript(UnlockScript)
	extendScript = redis.NewScript(ExtendScript)
)

func init() {
	Register(Info{
		Name:       "single",
		Source:     "Redis docs (seeds 001/002), 003 §35.1.2 and §35.2.2",
		Promises:   "mutual exclusion on one Redis master while it does not fail; a crashed holder's lock frees within one TTL",
		Needs:      "single",
		Caps:       []string{CapExtend},
		Failpoints: []string{"after-extend"},
	}, newSingle)
}

// single is SET key token NX PX ttl, released by Lua compare-and-delete and
// extended by Lua compare-and-pexpire.
type single struct {
	cfg Config
	rdb redis.UniversalClient
}

func newSingle(cfg Config) (Lock, error) {
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &single{cfg: cfg, rdb: rdb}, nil
}

// Acquire tries SET NX PX until it succeeds or opts.Wait runs out.
func (s *single) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		ok, err := s.rdb.SetNX(ctx, KeyFor(resource), token, opts.TTL).Result()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: resource, Token: token, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

func (s *single) Release(ctx context.Context, l *Lease) error {
	return casRelease(ctx, s.rdb, l)
}

func (s *single) Extend(ctx context.Context, l *Lease, ttl time.Duration) error {
	return casExtend(ctx, s.rdb, s.cfg, l, ttl)
}

// casRelease is the Lua compare-and-delete of a lease's key on one server.
func casRelease(ctx context.Context, rdb redis.Scripter, l *Lease) error {
	n, err := unlockScript.Run(ctx, rdb, []string{KeyFor(l.Resource)}, l.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// casExtend is the Lua compare-and-pexpire of a lease's key on one server;
// on success the lease's validity restarts from the moment it was sent.
func casExtend(ctx context.Context, rdb redis.Scripter, cfg Config, l *Lease, ttl time.Duration) error {
	start := time.Now()
	n, err := extendScript.Run(ctx, rdb, []string{KeyFor(l.Resource)}, l.Token, ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	cfg.Hit("after-extend") // the key is renewed; the validity is still to be told
	l.Validity, l.ValidUntil = ttl, start.Add(ttl)
	return nil
}

func (s *single) Close() error { return s.rdb.Close() }

// KeyFor is the Redis key that guards a resource.
func KeyFor(resource string) string { return "lock:" + resource }

// RetryAcquire calls try until it returns something other than
// ErrNotAcquired or wait runs out, sleeping a short random interval between
// attempts. Unknown-outcome errors are returned at once.
func RetryAcquire(ctx context.Context, wait time.Duration, try func() (*Lease, error)) (*Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := try()
		if err == nil || !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		if !time.Now().Before(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", ErrNotAcquired, ctx.Err())
		case <-time.After(RetryDelay()):
		}
	}
}
