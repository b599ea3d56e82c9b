package golibs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

func init() {
	// go-zero logs to standard output, which is the worker protocol's
	// channel: its logs go to standard error (the run's workers.log), and
	// its once-a-minute resource statistics are off.
	logx.SetWriter(logx.NewWriter(os.Stderr))
	logx.DisableStat()
	register(lockimpl.Info{
		Name: "go-zero",
		Source: "github.com/zeromicro/go-zero/core/stores/redis RedisLock (redislock.go, lockscript.lua, delscript.lua; " +
			"go-zero.dev, \"Redis Lock\"), used as published: New(addr, WithPass), NewRedisLock, SetExpire, AcquireCtx, ReleaseCtx",
		Promises: "go-zero's docs: a random version number prevents outdated releases; the lock can be re-entered " +
			"(AcquireCtx again on the same RedisLock re-sets its key, which the docs call automatic renewal: nothing renews in the background); " +
			"a grant's key expires SetExpire seconds plus 500 ms later",
		Needs: "single",
		Caps:  []string{lockimpl.CapReentrant},
	}, "github.com/zeromicro/go-zero", newGoZero)
}

// goZeroLock adapts go-zero's RedisLock on Endpoints.Primary (go-zero
// talks to a node or a cluster, never through Sentinel).
//
// A RedisLock object carries a random id, the value of its key. Acquire
// makes a new RedisLock for an outer grant and re-enters through the same
// object while this instance holds a lease on the resource that no
// Release has been tried on yet, as a go-zero program re-enters by calling
// AcquireCtx again on its lock. go-zero counts nothing: the first release
// of any of the object's leases deletes the key. The lease's Token is the
// adapter's name for the RedisLock object (go-zero keeps the id private).
//
// TTL: SetExpire takes whole seconds, so the TTL is rounded up to seconds
// (at least 1); go-zero sets the key for that many seconds plus its fixed
// 500 ms tolerance. Validity is the SetExpire seconds from the clock read
// (monotonic) before AcquireCtx: the key was set after that instant and
// lives 500 ms longer, so this is what go-zero grants without its slack.
//
// Acquire calls AcquireCtx once and, while it answers false (the key is
// someone else's) and Wait has not passed, again every RetryDelay.
// ErrNotAcquired: AcquireCtx answered false, or go-zero's circuit breaker
// refused the request without sending it. Any other error means unknown
// (go-zero's go-redis client retries a failed command up to 3 times, so a
// script that ran may still report an error).
//
// Release is ReleaseCtx: nil when it deleted the key, ErrNotHeld when the
// key was not this object's, another error otherwise (a breaker refusal
// included: nothing was deleted, the key may remain until it expires).
// go-zero keeps one client per address for the process's life and has no
// way to close it: Close only forgets this instance's state.
type goZeroLock struct {
	cfg   lockimpl.Config
	store *zredis.Redis

	mu      sync.Mutex
	holders map[string]*goZeroHolder // resource -> the object that re-entries use
}

// goZeroHolder is one RedisLock object (one go-zero id).
type goZeroHolder struct {
	rl    *zredis.RedisLock
	token string
}

// goZeroState is the Lease.State of a go-zero lease.
type goZeroState struct{ holder *goZeroHolder }

func newGoZero(cfg lockimpl.Config) (lockimpl.Lock, error) {
	if cfg.Endpoints.Primary == "" {
		return nil, fmt.Errorf("go-zero: needs endpoints.primary (go-zero's RedisLock cannot follow Sentinel)")
	}
	var opts []zredis.Option
	if cfg.Endpoints.Password != "" {
		opts = append(opts, zredis.WithPass(cfg.Endpoints.Password))
	}
	return &goZeroLock{cfg: cfg, store: zredis.New(cfg.Endpoints.Primary, opts...), holders: map[string]*goZeroHolder{}}, nil
}

// goZeroSeconds is the TTL in whole seconds, rounded up, at least 1.
func goZeroSeconds(ttl time.Duration) int {
	return max(int((ttl+time.Second-1)/time.Second), 1)
}

func (l *goZeroLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("go-zero: ttl must be positive")
	}
	seconds := goZeroSeconds(opts.TTL)
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		return l.try(ctx, resource, seconds)
	})
}

// try is one AcquireCtx, on the resource's current object or a new one.
func (l *goZeroLock) try(ctx context.Context, resource string, seconds int) (*lockimpl.Lease, error) {
	l.mu.Lock()
	h := l.holders[resource]
	l.mu.Unlock()
	outer := h == nil
	if outer {
		h = &goZeroHolder{rl: zredis.NewRedisLock(l.store, lockimpl.KeyFor(resource)), token: lockimpl.RandomToken()}
	}
	h.rl.SetExpire(seconds)
	start := time.Now()
	ok, err := h.rl.AcquireCtx(ctx)
	switch {
	case errors.Is(err, breaker.ErrServiceUnavailable):
		return nil, fmt.Errorf("%w: go-zero: the circuit breaker refused the request: %v", lockimpl.ErrNotAcquired, err)
	case err != nil:
		return nil, fmt.Errorf("go-zero: acquire: %w", err)
	case !ok:
		return nil, fmt.Errorf("%w: go-zero: the key is held", lockimpl.ErrNotAcquired)
	}
	if outer {
		l.mu.Lock()
		l.holders[resource] = h
		l.mu.Unlock()
	}
	until := start.Add(time.Duration(seconds) * time.Second)
	return &lockimpl.Lease{Resource: resource, Token: h.token, Validity: max(time.Until(until), time.Nanosecond),
		ValidUntil: until, State: &goZeroState{holder: h}}, nil
}

func (l *goZeroLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	st, ok := lease.State.(*goZeroState)
	if !ok {
		return fmt.Errorf("go-zero: lease has no go-zero state")
	}
	// Whatever the answer, the object serves no more re-entries.
	l.mu.Lock()
	if l.holders[lease.Resource] == st.holder {
		delete(l.holders, lease.Resource)
	}
	l.mu.Unlock()
	released, err := st.holder.rl.ReleaseCtx(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("go-zero: release: %w", err)
	case !released:
		return fmt.Errorf("%w: go-zero: the key is not this lock's", lockimpl.ErrNotHeld)
	}
	return nil
}

func (l *goZeroLock) Close() error {
	l.mu.Lock()
	clear(l.holders)
	l.mu.Unlock()
	return nil
}
