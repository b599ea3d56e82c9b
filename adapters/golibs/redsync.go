package golibs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

func init() {
	register(lockimpl.Info{
		Name: "redsync",
		Source: "github.com/go-redsync/redsync/v4 (a Go Redlock, README and mutex.go) with its goredis/v9 pool, used as published: " +
			"NewMutex(WithExpiry, WithTries, WithRetryDelayFunc), LockContext, UnlockContext, ExtendContext",
		Promises: "Redlock on 1 or more independent masters: mutual exclusion while a majority is up; " +
			"validity = TTL - elapsed - 1% of TTL (redsync's Until)",
		Needs: "masters",
		Caps:  []string{lockimpl.CapExtend},
	}, "github.com/go-redsync/redsync/v4", newRedsync)
}

// redsyncMeanDelay is the mean of redsyncRetryDelay, used to turn
// AcquireOptions.Wait into a number of tries.
const redsyncMeanDelay = 10 * time.Millisecond

// redsyncRetryDelay is 5 to 15 ms: redsync counts tries, not time, so a
// shorter delay would multiply the tries (and the time) when the masters
// answer slowly.
func redsyncRetryDelay() time.Duration {
	return 5*time.Millisecond + rand.N(10*time.Millisecond)
}

// redsyncLock adapts github.com/go-redsync/redsync/v4, the Go Redlock
// implementation, with one goredis/v9 pool per master (Endpoints.Masters;
// one master works too, with a quorum of 1).
//
// Each master gets a go-redis client that honours context deadlines, so
// redsync's per-node timeout (5% of the expiry) bounds every request, and
// that dials once, so a dead master fails at once with a dial error.
//
// Acquire builds a Mutex with WithExpiry(TTL) and
// WithTries(1 + Wait/10ms) and a retry delay of redsyncRetryDelay (5-15 ms,
// random, in place of redsync's default 50-250 ms so that a wait of a few
// hundred milliseconds still makes several tries), then calls LockContext.
// Redsync sends SET NX PX to all masters concurrently, each bounded by 5%
// of the expiry, and computes Until = now + expiry - elapsed - 1% of expiry
// on the real clock, with Go's monotonic reading. The lease's ValidUntil is
// that Until and its Validity is Until - time.Now() at the end of Acquire:
// a step of the wall clock (clock-client) moves neither.
//
// Error semantics: redsync reports only the last try's answers and throws
// away the result of its clean-up release after a failed try. Acquire
// returns ErrNotAcquired (wrapped) when redsync's error names no
// communication failure that may have reached a master (the masters
// answered "taken", refused the connection or replied with an error), and
// an error that does not wrap ErrNotAcquired when a master failed after the
// request may have reached it (a timeout): its SET may have landed and
// nothing tells whether redsync's clean-up removed it. A failure on an
// earlier try is invisible to the adapter, so ErrNotAcquired here is
// redsync's word, weaker than redlock's.
//
// Release is UnlockContext: nil when a quorum deleted the key, ErrNotHeld
// when the masters answered but fewer than a quorum held it, another error
// when some master failed (a refused connection deletes nothing, so the
// key may remain there). Extend is ExtendContext on a mutex with the new
// expiry and the lease's value (WithValue): nil with a quorum, ErrNotHeld
// when fewer than a quorum can have extended (a refused connection
// extends nothing), another error otherwise (a timeout, or a quorum that
// took longer than the validity: redsync's ErrExtendFailed).
type redsyncLock struct {
	cfg  lockimpl.Config
	rdbs []redis.UniversalClient
	rs   *redsync.Redsync
}

// redsyncState is the Lease.State of a redsync lease.
type redsyncState struct {
	rs     *redsync.Redsync // the instance whose pools the mutex uses
	mutex  *redsync.Mutex
	expiry time.Duration
}

func newRedsync(cfg lockimpl.Config) (lockimpl.Lock, error) {
	if len(cfg.Endpoints.Masters) == 0 {
		return nil, fmt.Errorf("redsync: no masters in endpoints")
	}
	l := &redsyncLock{cfg: cfg}
	var pools []redsyncredis.Pool
	for _, addr := range cfg.Endpoints.Masters {
		c := lockimpl.QuorumNodeClient(addr, cfg.Endpoints.Password, lockimpl.NodeTimeout)
		l.rdbs = append(l.rdbs, c)
		pools = append(pools, goredis.NewPool(c))
	}
	l.rs = redsync.New(pools...)
	return l, nil
}

func (l *redsyncLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("redsync: ttl must be positive")
	}
	tries := 1 + int(opts.Wait/redsyncMeanDelay)
	m := l.rs.NewMutex(lockimpl.KeyFor(resource),
		redsync.WithExpiry(opts.TTL),
		redsync.WithTries(tries),
		redsync.WithRetryDelayFunc(func(int) time.Duration { return redsyncRetryDelay() }),
	)
	if err := m.LockContext(ctx); err != nil {
		if redsyncNodeFailed(err) {
			return nil, fmt.Errorf("redsync: lock failed with a master error, a key may remain until its TTL: %w", err)
		}
		return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
	}
	lease := &lockimpl.Lease{Resource: resource, Token: m.Value(), State: &redsyncState{rs: l.rs, mutex: m, expiry: opts.TTL}}
	l.setValidity(lease, m.Until())
	return lease, nil
}

// setValidity takes redsync's Until (monotonic) as the lease's validity.
func (l *redsyncLock) setValidity(lease *lockimpl.Lease, until time.Time) {
	lease.Validity, lease.ValidUntil = time.Until(until), until
}

// redsyncNodeFailed reports whether a redsync error includes a failure to
// talk to a master that may have reached it (rather than "taken" answers,
// refused connections or error replies only).
func redsyncNodeFailed(err error) bool {
	var re *redsync.RedisError
	if errors.As(err, &re) && !lockimpl.NotSent(re.Err) {
		return true
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			if redsyncNodeFailed(e) {
				return true
			}
		}
	}
	return false
}

// mutexFor returns the mutex that holds the lease, or, when the lease came
// from another instance (a worker that re-pointed its endpoints) or a new
// expiry is wanted (redsync extends by the mutex's expiry), a mutex on this
// instance's pools with the lease's value (WithValue).
func (l *redsyncLock) mutexFor(lease *lockimpl.Lease, expiry time.Duration) *redsync.Mutex {
	if st, ok := lease.State.(*redsyncState); ok && st.rs == l.rs && (expiry == 0 || st.expiry == expiry) {
		return st.mutex
	}
	opts := []redsync.Option{redsync.WithValue(lease.Token)}
	if expiry > 0 {
		opts = append(opts, redsync.WithExpiry(expiry))
	}
	return l.rs.NewMutex(lockimpl.KeyFor(lease.Resource), opts...)
}

func (l *redsyncLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	ok, err := l.mutexFor(lease, 0).UnlockContext(ctx)
	if ok {
		return nil
	}
	// Any failed master may still hold the key (a refused connection
	// deletes nothing), so only "not mine" answers make it ErrNotHeld.
	var re *redsync.RedisError
	if errors.As(err, &re) {
		return fmt.Errorf("redsync: unlock did not reach a quorum and a master failed: %w", err)
	}
	return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
}

func (l *redsyncLock) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("redsync: ttl must be positive")
	}
	m := l.mutexFor(lease, ttl)
	ok, err := m.ExtendContext(ctx)
	if ok {
		lease.State = &redsyncState{rs: l.rs, mutex: m, expiry: ttl}
		l.setValidity(lease, m.Until())
		return nil
	}
	if errors.Is(err, redsync.ErrExtendFailed) || (err != nil && redsyncNodeFailed(err)) {
		return fmt.Errorf("redsync: extend: %w", err)
	}
	return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
}

func (l *redsyncLock) Close() error {
	var errs []error
	for _, c := range l.rdbs {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
