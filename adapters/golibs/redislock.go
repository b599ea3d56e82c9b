package golibs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

func init() {
	register(lockimpl.Info{
		Name: "redislock",
		Source: "github.com/bsm/redislock v0.9 (README and redislock.go), used as published: " +
			"Obtain with a RetryStrategy, Release, Refresh, TTL",
		Promises: "mutual exclusion on one Redis master while it does not fail; a crashed holder's lock frees within one TTL",
		Needs:    "single",
		Caps:     []string{lockimpl.CapExtend},
	}, "github.com/bsm/redislock", newRedislock)
}

// The compare-and-delete and compare-and-pexpire scripts of lockfault's
// single lock, which are redislock's luaRelease and luaRefresh for a lock
// without metadata: they release and extend a lease obtained through
// another instance.
var (
	unlockScript = redis.NewScript(lockimpl.UnlockScript)
	extendScript = redis.NewScript(lockimpl.ExtendScript)
)

// redislockSlack is how far past the wait the context given to Obtain
// reaches, so that the context never expires in the middle of a command
// (which would make the outcome unknown); the retry strategy ends the
// waiting instead.
const redislockSlack = 5 * time.Second

// redislockLock adapts github.com/bsm/redislock, a single-instance Redis
// lock (SET NX PX through a Lua script, compare-and-delete release,
// compare-and-pexpire Refresh), on Endpoints.Primary or through Sentinel.
//
// Acquire calls Obtain with a RetryStrategy that waits RetryDelay (1-3 ms)
// between tries until AcquireOptions.Wait has passed (Wait 0: one try), and
// then reads the remaining time to live with Lock.TTL: the lease's Validity
// is that PTTL and ValidUntil is the (monotonic) clock read before the TTL call
// plus it, a time at which the key certainly still existed. If the TTL call
// fails, ValidUntil falls back to the clock read before Obtain plus the TTL
// (also safe: the key was set after that instant). If TTL reports the key
// gone, the grant is already lost and Acquire returns ErrNotAcquired.
//
// Errors: redislock.ErrNotObtained maps to ErrNotAcquired, ErrLockNotHeld to
// ErrNotHeld (Release) and ErrNotObtained to ErrNotHeld (Refresh, which is
// Extend); any other error means the outcome is unknown.
type redislockLock struct {
	cfg lockimpl.Config
	rdb redis.UniversalClient
	cl  *redislock.Client
}

func newRedislock(cfg lockimpl.Config) (lockimpl.Lock, error) {
	rdb, err := lockimpl.NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &redislockLock{cfg: cfg, rdb: rdb, cl: redislock.New(rdb)}, nil
}

// redislockRetry retries every RetryDelay until a deadline.
type redislockRetry struct{ deadline time.Time }

func (r redislockRetry) NextBackoff() time.Duration {
	d := lockimpl.RetryDelay()
	if time.Now().Add(d).After(r.deadline) {
		return 0 // stop: redislock returns ErrNotObtained
	}
	return d
}

func (l *redislockLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("redislock: ttl must be positive")
	}
	deadline := time.Now().Add(opts.Wait)
	octx, cancel := context.WithDeadline(ctx, deadline.Add(redislockSlack))
	defer cancel()
	start := time.Now()
	lk, err := l.cl.Obtain(octx, lockimpl.KeyFor(resource), opts.TTL, &redislock.Options{RetryStrategy: redislockRetry{deadline}})
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
	}
	if err != nil {
		return nil, fmt.Errorf("redislock: obtain: %w", err)
	}
	lease := &lockimpl.Lease{Resource: resource, Token: lk.Token(), State: lk}
	before := time.Now()
	ttl, err := lk.TTL(ctx)
	switch {
	case err != nil:
		lease.ValidUntil = start.Add(opts.TTL)
	case ttl <= 0:
		return nil, fmt.Errorf("%w: obtained, but the key was already gone when its TTL was read", lockimpl.ErrNotAcquired)
	default:
		lease.ValidUntil = before.Add(ttl)
	}
	lease.Validity = redislockValidity(time.Until(lease.ValidUntil))
	return lease, nil
}

// ownLock returns the lease's redislock.Lock when it was obtained through
// this instance's client, nil otherwise (a worker that re-pointed its
// endpoints closed the client the lease came from).
func (l *redislockLock) ownLock(lease *lockimpl.Lease) *redislock.Lock {
	if lk, ok := lease.State.(*redislock.Lock); ok && lk.Client == l.cl {
		return lk
	}
	return nil
}

// Release is Lock.Release. A lease obtained through another instance is
// released with the same compare-and-delete script (UnlockScript, which is
// redislock's luaRelease; without metadata redislock's value is the token).
func (l *redislockLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	var err error
	if lk := l.ownLock(lease); lk != nil {
		err = lk.Release(ctx)
	} else {
		var n int
		n, err = unlockScript.Run(ctx, l.rdb, []string{lockimpl.KeyFor(lease.Resource)}, lease.Token).Int()
		if err == nil && n != 1 {
			err = redislock.ErrLockNotHeld
		}
	}
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	return err
}

// Extend is Lock.Refresh with the new TTL (for a lease from another
// instance, the same compare-and-pexpire script, ExtendScript).
func (l *redislockLock) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("redislock: ttl must be positive")
	}
	start := time.Now()
	var err error
	if lk := l.ownLock(lease); lk != nil {
		err = lk.Refresh(ctx, ttl, nil)
	} else {
		var n int
		n, err = extendScript.Run(ctx, l.rdb, []string{lockimpl.KeyFor(lease.Resource)}, lease.Token, ttl.Milliseconds()).Int()
		if err == nil && n != 1 {
			err = redislock.ErrNotObtained
		}
	}
	if errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	if err != nil {
		return err
	}
	lease.ValidUntil = start.Add(ttl)
	lease.Validity = redislockValidity(time.Until(lease.ValidUntil))
	return nil
}

// redislockValidity keeps a validity that ran out during the call from
// reading as zero, which would mean "no end".
func redislockValidity(v time.Duration) time.Duration {
	if v <= 0 {
		return time.Nanosecond
	}
	return v
}

func (l *redislockLock) Close() error { return l.rdb.Close() }
