package golibs

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// The options of the rueidislock lock: LockerOption's safety knobs.
const (
	optKeyMajority    = "key-majority"     // LockerOption.KeyMajority: keys needed out of 2*N-1 (default 2)
	optExtendInterval = "extend-interval"  // LockerOption.ExtendInterval (default: half the TTL)
	optTryNextAfter   = "try-next-after"   // LockerOption.TryNextAfter: per-key acquire timeout (default 20ms)
	optNoLoopTracking = "no-loop-tracking" // LockerOption.NoLoopTracking (default false)
	optDisableCache   = "disable-cache"    // ClientOption.DisableCache: no client-side caching (default false)
	optFallbackSETPX  = "fallback-setpx"   // LockerOption.FallbackSETPX: SET PX instead of PXAT (default false)
)

// rueidisMaxMajority bounds option key-majority (2*N-1 keys per lock).
const rueidisMaxMajority = 10

// rueidisReleaseWait bounds how long Release waits for rueidislock to
// finish deleting the keys: its delete is retried until it is answered.
const rueidisReleaseWait = 5 * time.Second

func init() {
	register(lockimpl.Info{
		Name: "rueidislock",
		Source: "github.com/redis/rueidis/rueidislock (README and lock.go), used as published: NewLocker(LockerOption), " +
			"TryWithContext, the lock context's cancel function; its requests are observed through LockerOption.ClientBuilder",
		Promises: "rueidislock's README: a lock is KeyMajority of 2*KeyMajority-1 keys (SET NX PXAT) within KeyValidity, " +
			"extended every ExtendInterval while held; the lock's context is cancelled at once when the majority is no longer held " +
			"(Redis down, keys deleted), as client-side caching tells; all keys on one Redis here, so a majority guards against " +
			"nothing a single key does not",
		Needs: "single",
		Caps:  []string{lockimpl.CapWatchdog},
		Options: []string{optKeyMajority, optExtendInterval, optTryNextAfter, optNoLoopTracking,
			optDisableCache, optFallbackSETPX},
	}, "github.com/redis/rueidis", newRueidislock)
}

// rueidisLock adapts rueidislock, rueidis's lock: a grant is KeyMajority
// of the keys "rueidislock:<i>:<resource>", i < 2*KeyMajority-1, set with
// SET NX PXAT now+KeyValidity on Endpoints.Primary, and the lock lives in
// a context that rueidislock cancels when it no longer holds a majority;
// every ExtendInterval it moves each key's expiry to now+KeyValidity.
//
// A Locker has one KeyValidity, so the adapter keeps one Locker (one
// rueidis client) per TTL: KeyValidity is AcquireOptions.TTL. Acquire
// calls TryWithContext once and, while it fails with ErrNotLocked and Wait
// has not passed, again every RetryDelay (WithContext would tie the
// lock's life to the waiting context). Release calls the lock's cancel
// function, which deletes the keys and waits for that.
//
// What rueidislock tells the caller is only the lock's context; the
// adapter reads the rest from the answers to rueidislock's own requests
// (rueidisObserver): the lease's ValidUntil is the KeyMajority-th latest
// expiry among its keys, each the deadline rueidislock sent, placed on
// the monotonic clock from the clock read before the request. Each
// answered renewal that moves it is reported (OnRenew); a key found not
// the lock's, or the lock's context cancelled by rueidislock, ends the
// validity where it is observed, also reported. Lease.Renewing is set.
//
// ErrNotAcquired: TryWithContext failed and every key of the try is known
// not to hold its value (refused, or deleted by rueidislock's clean-up, or
// never reached). Otherwise an error means unknown. Release: nil when a
// majority of the keys was deleted; ErrNotHeld when the lease was released
// before or its keys were no longer its own; another error when a delete
// went unanswered (or did not finish within rueidisReleaseWait).
type rueidisLock struct {
	cfg      lockimpl.Config
	base     rueidislock.LockerOption
	majority int

	mu      sync.Mutex
	lockers map[time.Duration]*rueidisLocker
	closed  bool
}

// rueidisLocker is one Locker and the observer of its client.
type rueidisLocker struct {
	locker rueidislock.Locker
	obs    *rueidisObserver
}

// rueidisState is the Lease.State of a rueidislock lease.
type rueidisState struct {
	lk       *rueidisLocker
	val      string // the try's random value
	lockCtx  context.Context
	cancel   context.CancelFunc
	released atomic.Bool
}

func newRueidislock(cfg lockimpl.Config) (lockimpl.Lock, error) {
	if cfg.Endpoints.Primary == "" {
		return nil, fmt.Errorf("rueidislock: needs endpoints.primary")
	}
	return newRueidislockOn(cfg, rueidis.ClientOption{InitAddress: []string{cfg.Endpoints.Primary}, Password: cfg.Endpoints.Password})
}

// newRueidislockOn is the rueidislock adapter on a client option: one
// Redis (rueidislock) or a cluster's seeds (rueidislock-cluster).
func newRueidislockOn(cfg lockimpl.Config, co rueidis.ClientOption) (lockimpl.Lock, error) {
	base := rueidislock.LockerOption{ClientOption: co}
	var err error
	if base.KeyMajority, err = rueidisInt(cfg, optKeyMajority, 2); err != nil {
		return nil, err
	}
	if base.ExtendInterval, err = rueidisDuration(cfg, optExtendInterval); err != nil {
		return nil, err
	}
	if base.TryNextAfter, err = rueidisDuration(cfg, optTryNextAfter); err != nil {
		return nil, err
	}
	for name, dst := range map[string]*bool{optNoLoopTracking: &base.NoLoopTracking,
		optDisableCache: &base.ClientOption.DisableCache, optFallbackSETPX: &base.FallbackSETPX} {
		if *dst, err = rueidisBool(cfg, name); err != nil {
			return nil, err
		}
	}
	return &rueidisLock{cfg: cfg, base: base, majority: int(base.KeyMajority), lockers: map[time.Duration]*rueidisLocker{}}, nil
}

func rueidisInt(cfg lockimpl.Config, name string, def int32) (int32, error) {
	v := cfg.Option(name, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > rueidisMaxMajority {
		return 0, fmt.Errorf("rueidislock: option %s: %q (allowed: a whole number from 1 to %d)", name, v, rueidisMaxMajority)
	}
	return int32(n), nil
}

// rueidisDuration reads a duration option; 0 (absent) is rueidislock's
// default.
func rueidisDuration(cfg lockimpl.Config, name string) (time.Duration, error) {
	v := cfg.Option(name, "")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond || d > time.Hour {
		return 0, fmt.Errorf("rueidislock: option %s: %q (allowed: a duration from 1ms to 1h)", name, v)
	}
	return d, nil
}

func rueidisBool(cfg lockimpl.Config, name string) (bool, error) {
	switch v := cfg.Option(name, "false"); v {
	case "true", "false":
		return v == "true", nil
	default:
		return false, fmt.Errorf("rueidislock: option %s: %q (allowed: true, false)", name, v)
	}
}

// lockerFor returns the Locker whose KeyValidity is ttl, building it on
// first use.
func (l *rueidisLock) lockerFor(ttl time.Duration) (*rueidisLocker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("%w: rueidislock: the lock is closed", lockimpl.ErrNotAcquired)
	}
	if lk := l.lockers[ttl]; lk != nil {
		return lk, nil
	}
	opt := l.base
	opt.KeyValidity = ttl
	prefix := opt.KeyPrefix
	if prefix == "" {
		prefix = "rueidislock" // rueidislock's default
	}
	lk := &rueidisLocker{}
	opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
		c, err := rueidis.NewClient(o)
		if err != nil {
			return nil, err
		}
		lk.obs = newRueidisObserver(c, prefix)
		return lk.obs, nil
	}
	locker, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, fmt.Errorf("%w: rueidislock: %v", lockimpl.ErrNotAcquired, err)
	}
	lk.locker = locker
	l.lockers[ttl] = lk
	return lk, nil
}

func (l *rueidisLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("rueidislock: ttl must be positive")
	}
	lk, err := l.lockerFor(opts.TTL)
	if err != nil {
		return nil, err
	}
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		return l.try(lk, resource)
	})
}

// try is one TryWithContext.
func (l *rueidisLock) try(lk *rueidisLocker, resource string) (*lockimpl.Lease, error) {
	lk.obs.begin(resource)
	// The lock's context must outlive the call: its parent is never
	// cancelled.
	lockCtx, cancel, err := lk.locker.TryWithContext(context.Background(), resource)
	val := lk.obs.end(resource)
	if err != nil {
		settled := lk.obs.settled(val)
		lk.obs.forget(val)
		if settled || errors.Is(err, rueidislock.ErrLockerClosed) {
			return nil, fmt.Errorf("%w: rueidislock: %v", lockimpl.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("rueidislock: not acquired, and a key may remain until it expires: %w", err)
	}
	st := &rueidisState{lk: lk, val: val, lockCtx: lockCtx, cancel: cancel}
	lease := &lockimpl.Lease{Resource: resource, Token: hex.EncodeToString([]byte(val)), Renewing: true, State: st}
	until, ok := lk.obs.validUntil(val, l.majority)
	if !ok {
		// Granted, but the answers do not show a majority (for example
		// a renewal answered with an error already): claim nothing.
		until = time.Now()
	}
	lease.ValidUntil, lease.Validity = until, max(time.Until(until), time.Nanosecond)
	var mu sync.Mutex // orders the reports of this lease
	report := func() {
		mu.Lock()
		defer mu.Unlock()
		if st.released.Load() {
			return
		}
		end, ok := lk.obs.validUntil(val, l.majority)
		if !ok || lockCtx.Err() != nil {
			end = time.Now()
			if lease.ValidUntil.Before(end) {
				return // already reported over
			}
		}
		if end.Equal(lease.ValidUntil) {
			return
		}
		lease.ValidUntil, lease.Validity = end, max(time.Until(end), time.Nanosecond)
		if l.cfg.OnRenew != nil {
			l.cfg.OnRenew(lease)
		}
	}
	lk.obs.watch(val, report)
	context.AfterFunc(lockCtx, report)
	return lease, nil
}

func (l *rueidisLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	st, ok := lease.State.(*rueidisState)
	if !ok {
		return fmt.Errorf("rueidislock: lease has no rueidislock state")
	}
	if st.released.Swap(true) {
		return fmt.Errorf("%w: rueidislock: released before", lockimpl.ErrNotHeld)
	}
	done := make(chan struct{})
	go func() {
		st.cancel() // deletes the keys and waits for every key's monitor
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("rueidislock: release: %w", ctx.Err())
	case <-time.After(rueidisReleaseWait):
		return fmt.Errorf("rueidislock: release: the keys' deletion was not answered within %v", rueidisReleaseWait)
	}
	n, unknown := st.lk.obs.deleted(st.val)
	st.lk.obs.forget(st.val)
	switch {
	case n >= l.majority:
		return nil
	case unknown:
		return fmt.Errorf("rueidislock: release: %d of the keys deleted and a delete went unanswered", n)
	}
	return fmt.Errorf("%w: rueidislock: %d of the keys were still this lease's", lockimpl.ErrNotHeld, n)
}

func (l *rueidisLock) Close() error {
	l.mu.Lock()
	ls := l.lockers
	l.lockers, l.closed = nil, true
	l.mu.Unlock()
	for _, lk := range ls {
		lk.locker.Close()
	}
	return nil
}
