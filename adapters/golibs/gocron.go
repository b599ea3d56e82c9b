package golibs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	redislock "github.com/go-co-op/gocron-redis-lock/v2"
	"github.com/go-co-op/gocron/v2"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// The options of the gocron-redis-lock lock: the library's knobs.
const (
	// optGocronWatchdog turns auto-extend on (WithAutoExtendDuration, every
	// third of the TTL unless auto-extend says otherwise); false, the
	// library's default, leaves it off.
	optGocronWatchdog = "watchdog"
	// optGocronAutoExtend is WithAutoExtendDuration: how often the
	// auto-extend renews (it turns auto-extend on).
	optGocronAutoExtend = "auto-extend"
	// optGocronDriftFactor is redsync's WithDriftFactor (default 0.01).
	optGocronDriftFactor = "drift-factor"
)

// gocronDefaultDrift is redsync's default drift factor.
const gocronDefaultDrift = 0.01

// gocronMaxDrift bounds option drift-factor.
const gocronMaxDrift = 0.5

// gocronMaxLockers bounds the lockers kept (one per TTL).
const gocronMaxLockers = 16

func init() {
	register(lockimpl.Info{
		Name: "gocron-redis-lock",
		Source: "github.com/go-co-op/gocron-redis-lock/v2 (README, redislock.go, options.go; gocron's Locker and Lock), used as published " +
			"over the go-redsync/redsync/v4 this module builds: NewRedisLockerWithOptions(client, WithRedsyncOptions(WithExpiry, WithTries(1), " +
			"WithDriftFactor), WithAutoExtendDuration), Locker.Lock, Lock.Unlock; its requests are observed through a go-redis hook on the client it is given",
		Promises: "gocron's docs: a distributed Locker ensures that only one instance of each job is run, the lock held for the duration of the job's run; " +
			"gocron-redis-lock: redsync (SET NX PX, compare-and-delete) on the one Redis client it is given, a key that expires after " +
			"WithExpiry (here the TTL), auto-extended every WithAutoExtendDuration when set (off by default; a renewal that fails ends the " +
			"auto-extend silently); validity = TTL - elapsed - drift factor x TTL (redsync's Until)",
		Needs:   lockimpl.NeedsSingle,
		Caps:    []string{lockimpl.CapWatchdog},
		Options: []string{optGocronWatchdog, optGocronAutoExtend, optGocronDriftFactor},
	}, "github.com/go-co-op/gocron-redis-lock/v2", newGocron)
}

// gocronLock adapts gocron-redis-lock, gocron's Redis Locker: redsync with
// one pool, the go-redis client it is given (here the harness's client of
// Endpoints.Primary, or of the master Sentinel names), so a single master.
//
// WithExpiry is a Locker's, so the adapter keeps one Locker per TTL:
// NewRedisLockerWithOptions with WithRedsyncOptions(WithExpiry(TTL),
// WithTries(1) as the README does, WithDriftFactor) and, with option
// watchdog or auto-extend, WithAutoExtendDuration. Acquire calls
// Locker.Lock once and, while it fails with nothing left behind and Wait
// has not passed, again every RetryDelay. Release is Lock.Unlock.
//
// gocron-redis-lock hides redsync's Mutex and answers every failure with
// one error (ErrFailedToObtainLock, ErrFailedToReleaseLock), so the adapter
// reads the rest from the answers to the lock's own requests
// (gocronObserver, a go-redis hook): the lease's Token is the value of the
// SET that was answered OK, its ValidUntil redsync's Until computed from
// the clock read (monotonic) just before that SET was handed to go-redis:
// start + TTL - drift factor x TTL. With auto-extend, each renewal that
// redsync counts (answered 1 before the validity it sets) moves it the
// same way and is reported (OnRenew), and Lease.Renewing is set. A renewal
// that fails ends gocron-redis-lock's auto-extend without a word to its
// caller: the adapter reports nothing then either, and the lease keeps the
// validity of its last renewal, which the key outlives.
//
// ErrNotAcquired: Lock failed and its SET was not sent, refused or
// answered nil, or it landed and redsync's clean-up delete answered.
// Otherwise an error means unknown (a SET that timed out may still land).
// Release: nil when Unlock deleted the key; ErrNotHeld when the delete
// found the key gone or someone else's, or the lease was released before
// with a known outcome; another error when the delete was not answered
// (a refused connection deletes nothing, so the key may remain).
// gocron-redis-lock's Unlock closes a channel, so a second Unlock of one
// lock panics: a release is never retried through it.
type gocronLock struct {
	cfg      lockimpl.Config
	rdb      redis.UniversalClient
	obs      *gocronObserver
	watchdog bool
	interval time.Duration // auto-extend interval; 0: a third of the TTL
	drift    float64

	mu      sync.Mutex
	lockers map[time.Duration]gocron.Locker
}

// gocronState is the Lease.State of a gocron-redis-lock lease.
type gocronState struct {
	lk    gocron.Lock
	obs   *gocronObserver // of the instance that granted it
	value string

	mu       sync.Mutex // orders the lease's reports and its release
	released bool       // Unlock was called
	known    bool       // and its outcome is known
}

func newGocron(cfg lockimpl.Config) (lockimpl.Lock, error) {
	l := &gocronLock{cfg: cfg, drift: gocronDefaultDrift, lockers: map[time.Duration]gocron.Locker{}}
	switch v := cfg.Option(optGocronWatchdog, ""); v {
	case "", "false", "true":
		l.watchdog = v == "true"
	default:
		return nil, fmt.Errorf("gocron-redis-lock: option %s: %q (allowed: true, false)", optGocronWatchdog, v)
	}
	if v := cfg.Option(optGocronAutoExtend, ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Hour {
			return nil, fmt.Errorf("gocron-redis-lock: option %s: %q (allowed: a duration from 1ms to 1h)", optGocronAutoExtend, v)
		}
		if cfg.Option(optGocronWatchdog, "") == "false" {
			return nil, fmt.Errorf("gocron-redis-lock: option %s: set with %s=false (allowed: watchdog true or absent)", optGocronAutoExtend, optGocronWatchdog)
		}
		l.watchdog, l.interval = true, d
	}
	if v := cfg.Option(optGocronDriftFactor, ""); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > gocronMaxDrift {
			return nil, fmt.Errorf("gocron-redis-lock: option %s: %q (allowed: a number from 0 to %v)", optGocronDriftFactor, v, gocronMaxDrift)
		}
		l.drift = f
	}
	rdb, err := lockimpl.NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("gocron-redis-lock: %w", err)
	}
	l.rdb, l.obs = rdb, newGocronObserver(l.drift)
	rdb.AddHook(l.obs)
	return l, nil
}

// lockerFor returns the Locker whose expiry is ttl, building it on first
// use (NewRedisLockerWithOptions sends a PING, and nothing else).
func (l *gocronLock) lockerFor(ttl time.Duration) (gocron.Locker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lk := l.lockers[ttl]; lk != nil {
		return lk, nil
	}
	opts := []redislock.LockerOption{redislock.WithRedsyncOptions(
		redislock.WithExpiry(ttl), redislock.WithTries(1), redislock.WithDriftFactor(l.drift))}
	if l.watchdog {
		every := l.interval
		if every == 0 {
			every = ttl / 3
		}
		opts = append(opts, redislock.WithAutoExtendDuration(every))
	}
	lk, err := redislock.NewRedisLockerWithOptions(l.rdb, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: gocron-redis-lock: %v", lockimpl.ErrNotAcquired, err)
	}
	if len(l.lockers) >= gocronMaxLockers {
		clear(l.lockers) // a Locker holds nothing but its options
	}
	l.lockers[ttl] = lk
	return lk, nil
}

func (l *gocronLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if opts.TTL < time.Millisecond {
		return nil, fmt.Errorf("gocron-redis-lock: ttl must be at least 1ms (go-redis sends whole milliseconds)")
	}
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		return l.try(ctx, resource, opts.TTL)
	})
}

// try is one Locker.Lock.
func (l *gocronLock) try(ctx context.Context, resource string, ttl time.Duration) (*lockimpl.Lease, error) {
	locker, err := l.lockerFor(ttl)
	if err != nil {
		return nil, err
	}
	call := &gocronCall{}
	start := time.Now()
	lk, err := locker.Lock(context.WithValue(ctx, gocronCallKey{}, call), lockimpl.KeyFor(resource))
	call.mu.Lock()
	value, until := call.value, call.until
	call.mu.Unlock()
	if err != nil {
		l.obs.forget(value)
		if call.settled() {
			return nil, fmt.Errorf("%w: gocron-redis-lock: %v (%v)", lockimpl.ErrNotAcquired, err, call)
		}
		return nil, fmt.Errorf("gocron-redis-lock: lock failed and its key may remain until it expires: %w (%v)", err, call)
	}
	st := &gocronState{lk: lk, obs: l.obs, value: value}
	lease := &lockimpl.Lease{Resource: resource, Token: value, Renewing: l.watchdog, State: st}
	if until.IsZero() {
		until = l.obs.validity(start, ttl) // never: the SET is always seen
	}
	lease.ValidUntil, lease.Validity = until, max(time.Until(until), time.Nanosecond)
	if !l.watchdog {
		l.obs.forget(value)
		return lease, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if latest, ok := l.obs.watch(value, func(until time.Time) { l.renewed(lease, st, until) }); ok && latest.After(lease.ValidUntil) {
		lease.ValidUntil, lease.Validity = latest, max(time.Until(latest), time.Nanosecond)
	}
	return lease, nil
}

// renewed reports a renewal of a lease that is not released.
func (l *gocronLock) renewed(lease *lockimpl.Lease, st *gocronState, until time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.released || !until.After(lease.ValidUntil) {
		return
	}
	lease.ValidUntil, lease.Validity = until, max(time.Until(until), time.Nanosecond)
	if l.cfg.OnRenew != nil {
		l.cfg.OnRenew(lease)
	}
}

func (l *gocronLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	st, ok := lease.State.(*gocronState)
	if !ok {
		return fmt.Errorf("gocron-redis-lock: lease has no gocron-redis-lock state")
	}
	st.mu.Lock()
	released, known := st.released, st.known
	st.released = true
	st.mu.Unlock()
	switch {
	case released && known:
		return fmt.Errorf("%w: gocron-redis-lock: released before", lockimpl.ErrNotHeld)
	case released:
		return errors.New("gocron-redis-lock: released before with an unknown outcome, and its Unlock cannot be called twice (a second call panics)")
	}
	call := &gocronCall{}
	err := st.lk.Unlock(context.WithValue(ctx, gocronCallKey{}, call))
	st.obs.forget(st.value)
	call.mu.Lock()
	del := call.del
	call.mu.Unlock()
	st.mu.Lock()
	st.known = err == nil || del == gocronYes || del == gocronNo
	st.mu.Unlock()
	switch {
	case err == nil:
		return nil
	case del == gocronNo:
		return fmt.Errorf("%w: gocron-redis-lock: the key is gone or someone else's: %v", lockimpl.ErrNotHeld, err)
	}
	return fmt.Errorf("gocron-redis-lock: unlock: %w (delete: %v)", err, del)
}

func (l *gocronLock) Close() error {
	l.mu.Lock()
	clear(l.lockers)
	l.mu.Unlock()
	return l.rdb.Close()
}
