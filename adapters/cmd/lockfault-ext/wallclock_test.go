package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// Test code only: a small Go lock library written the way many are, broken
// on purpose (wallclock-broken: it dates its key's expiry from the wall
// clock, time.Now().UnixMilli(), and trusts it), and its correct twin
// (wallclock-correct: the same code dating the expiry on Go's monotonic
// clock, time.Now() kept whole). They call time.Now() themselves, never
// Config.Now, as every published Go library does: only a worker binary
// whose time.Now a client clock step moves (the clock overlay, docs/
// FAULTS.md) exposes the broken one. Registered in this package's test
// binary only, which stands in for lockfault-ext as a worker (TestMain):
// never in lockfault-ext itself.
func init() {
	for _, monotonic := range []bool{false, true} {
		name, how := "wallclock-broken", "dates its key's expiry from time.Now().UnixMilli() (the wall clock) and trusts it"
		if monotonic {
			name, how = "wallclock-correct", "dates its key's expiry from time.Now() with its monotonic reading"
		}
		lockimpl.Register(lockimpl.Info{Name: name, Source: "lockfault-ext test code: a lock library that " + how,
			Promises: "mutual exclusion on one Redis master while it does not fail", Needs: lockimpl.NeedsSingle},
			func(cfg lockimpl.Config) (lockimpl.Lock, error) {
				rdb, err := lockimpl.NewPrimaryClient(cfg.Endpoints)
				if err != nil {
					return nil, err
				}
				return &wallclockAdapter{lib: &wallclockLib{rdb: rdb, monotonic: monotonic}}, nil
			})
	}
}

// wallclockLib is the library: SET NX PX, compare-and-delete release, and
// ttl, what is left until the expiry it computed before the SET.
type wallclockLib struct {
	rdb       redis.UniversalClient
	monotonic bool
}

type wallclockHeld struct {
	key, token string
	until      time.Time
}

// ttl is what the library says is left of its hold, from its own dates.
func (h *wallclockHeld) ttl() time.Duration {
	return time.Until(h.until)
}

var errWallclockTaken = errors.New("wallclock: taken")

func (c *wallclockLib) obtain(ctx context.Context, key string, ttl time.Duration) (*wallclockHeld, error) {
	var until time.Time
	if c.monotonic {
		until = time.Now().Add(ttl)
	} else {
		// The slip: a wall-clock date, as from a Unix timestamp.
		until = time.UnixMilli(time.Now().UnixMilli() + ttl.Milliseconds())
	}
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ok, err := c.rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errWallclockTaken
	}
	return &wallclockHeld{key: key, token: token, until: until}, nil
}

func (c *wallclockLib) release(ctx context.Context, h *wallclockHeld) (bool, error) {
	n, err := c.rdb.Eval(ctx, lockimpl.UnlockScript, []string{h.key}, h.token).Int64()
	return n == 1, err
}

// wallclockAdapter is its lockfault adapter: Acquire retries until Wait,
// and reports as validity what the library says is left (ttl).
type wallclockAdapter struct{ lib *wallclockLib }

func (a *wallclockAdapter) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		h, err := a.lib.obtain(ctx, lockimpl.KeyFor(resource), opts.TTL)
		if errors.Is(err, errWallclockTaken) {
			return nil, lockimpl.ErrNotAcquired
		}
		if err != nil {
			return nil, fmt.Errorf("wallclock: %w", err)
		}
		// As the published libraries' adapters do: the validity is what
		// the library says is left, placed on the monotonic clock.
		left := h.ttl()
		return &lockimpl.Lease{Resource: resource, Token: h.token, Validity: left, ValidUntil: time.Now().Add(left), State: h}, nil
	})
}

func (a *wallclockAdapter) Release(ctx context.Context, l *lockimpl.Lease) error {
	h, _ := l.State.(*wallclockHeld)
	if h == nil {
		return lockimpl.ErrNotHeld
	}
	ok, err := a.lib.release(ctx, h)
	if err != nil {
		return err
	}
	if !ok {
		return lockimpl.ErrNotHeld
	}
	return nil
}

func (a *wallclockAdapter) Close() error { return a.lib.rdb.Close() }
