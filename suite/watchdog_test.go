package suite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

// The watchdog locks of the mutation tests: the single-master test lock
// (broken-correct) with a watchdog, as Redisson's: with the options
// watchdog=true and lease=D the lease is D and a goroutine extends it every
// D/3 while it is held, reporting each renewal. Test code only.
//
//   - watchdog: the control. A renewal that fails (timeout, lost
//     connection) is not reported and the next is tried; a renewal that
//     finds the key gone stops the watchdog.
//   - broken-renew-on-error: a renewal whose request failed is reported as
//     a success ("probably fine"), so the holder goes on believing it holds
//     a lease the key no longer has.
//   - broken-blind-renewal: a renewal is a plain PEXPIRE of the key,
//     whoever holds it, so a stale holder's watchdog renews the next
//     holder's key and reports it as its own.
func init() {
	for _, w := range []struct {
		name         string
		renewOnError bool
		slip         slip
	}{{"watchdog", false, slipNone}, {"broken-renew-on-error", true, slipNone}, {"broken-blind-renewal", false, slipBlindExtend}} {
		renewOnError, s := w.renewOnError, w.slip
		lockimpl.Register(lockimpl.Info{Name: w.name, Source: "suite mutation test", Needs: "single",
			Caps: []string{lockimpl.CapExtend, lockimpl.CapWatchdog}, Options: []string{"watchdog", "lease"},
			Promises: "single-master lock with a watchdog (test code only)"},
			func(cfg lockimpl.Config) (lockimpl.Lock, error) {
				rdb, err := lockimpl.NewPrimaryClient(cfg.Endpoints)
				if err != nil {
					return nil, err
				}
				lease, err := time.ParseDuration(cfg.Option("lease", "30s"))
				if err != nil || lease <= 0 {
					return nil, fmt.Errorf("option lease: %q is not a positive duration", cfg.Option("lease", ""))
				}
				inner := &broken{cfg: cfg, rdb: rdb, slip: s, held: map[string]*lockimpl.Lease{}}
				return &watched{broken: inner, on: cfg.Option("watchdog", "false") == "true", lease: lease,
					renewOnError: renewOnError, stops: map[*lockimpl.Lease]chan struct{}{}}, nil
			})
	}
}

type watched struct {
	*broken
	on           bool
	lease        time.Duration
	renewOnError bool

	mu    sync.Mutex
	stops map[*lockimpl.Lease]chan struct{}
}

func (w *watched) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if !w.on {
		return w.broken.Acquire(ctx, resource, opts)
	}
	opts.TTL = w.lease
	l, err := w.broken.Acquire(ctx, resource, opts)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	w.mu.Lock()
	w.stops[l] = stop
	w.mu.Unlock()
	go w.watch(l, stop)
	return l, nil
}

// watch extends the lease every lease/3 until stopped or the key is gone.
func (w *watched) watch(l *lockimpl.Lease, stop chan struct{}) {
	t := time.NewTicker(w.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), w.lease/3)
		err := w.broken.Extend(ctx, l, w.lease)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, lockimpl.ErrNotHeld):
			return
		case w.renewOnError:
			l.Validity, l.ValidUntil = w.lease, start.Add(w.lease) // the slip
		default:
			continue
		}
		if w.cfg.OnRenew != nil {
			w.cfg.OnRenew(l)
		}
	}
}

func (w *watched) Release(ctx context.Context, l *lockimpl.Lease) error {
	w.mu.Lock()
	if stop := w.stops[l]; stop != nil {
		close(stop)
		delete(w.stops, l)
	}
	w.mu.Unlock()
	return w.broken.Release(ctx, l)
}

func (w *watched) Close() error {
	w.mu.Lock()
	for l, stop := range w.stops {
		close(stop)
		delete(w.stops, l)
	}
	w.mu.Unlock()
	return w.broken.Close()
}
