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
//   - broken-renew-from-end: a renewal's validity is measured from its
//     reply, not from its start, so a renewal answered late claims time
//     the key does not have.
//   - reentrant-watchdog: the control, reentrant as Redisson is: a client
//     that holds the lock acquires it again if the key is still its own
//     (compare-and-pexpire, the lease renewed, as Redisson's re-entry
//     script does), and only the release that balances the first acquire
//     releases the key and stops the watchdog.
//   - broken-reentry-watchdog: reentrant, but any release stops the
//     watchdog, so the lease lapses while the outer hold goes on.
//   - broken-local-reentry: reentrant, but a re-entry is granted from the
//     client's own count, without asking the server whether the key is
//     still its own.
func init() {
	for _, w := range []struct {
		name         string
		renewOnError bool
		slip         slip
		reentrant    bool
		stopEarly    bool
	}{
		{"watchdog", false, slipNone, false, false},
		{"broken-renew-on-error", true, slipNone, false, false},
		{"broken-blind-renewal", false, slipBlindExtend, false, false},
		{"broken-renew-from-end", false, slipExtendFromEnd, false, false},
		{"reentrant-watchdog", false, slipNone, true, false},
		{"broken-reentry-watchdog", false, slipNone, true, true},
		{"broken-local-reentry", false, slipLocalReentry, true, false},
	} {
		renewOnError, s, reentrant, stopEarly := w.renewOnError, w.slip, w.reentrant, w.stopEarly
		caps := []string{lockimpl.CapExtend, lockimpl.CapWatchdog}
		if reentrant {
			caps = append(caps, lockimpl.CapReentrant)
		}
		lockimpl.Register(lockimpl.Info{Name: w.name, Source: "suite mutation test", Needs: "single",
			Caps: caps, Options: []string{"watchdog", "lease"},
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
					renewOnError: renewOnError, reentrant: reentrant, stopEarly: stopEarly,
					stops: map[*lockimpl.Lease]chan struct{}{}, holds: map[string]*hold{}}, nil
			})
	}
}

type watched struct {
	*broken
	on           bool
	lease        time.Duration
	renewOnError bool
	reentrant    bool
	stopEarly    bool // reentrant: any release stops the watchdog (the slip)

	mu    sync.Mutex
	stops map[*lockimpl.Lease]chan struct{}
	holds map[string]*hold // reentrant: this client's hold per resource
}

// hold is a reentrant hold: the first acquire's lease and the count.
type hold struct {
	lease *lockimpl.Lease
	n     int
}

func (w *watched) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if w.reentrant {
		w.mu.Lock()
		h := w.holds[resource]
		w.mu.Unlock()
		if h != nil {
			return w.reenter(ctx, h, opts)
		}
	}
	if w.on {
		opts.TTL = w.lease
	}
	l, err := w.broken.Acquire(ctx, resource, opts)
	if err != nil {
		return nil, err
	}
	if w.reentrant {
		w.mu.Lock()
		w.holds[resource] = &hold{lease: l, n: 1}
		w.mu.Unlock()
	}
	if !w.on {
		return l, nil
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

// reenter grants a re-entry if the key is still this client's, renewing its
// TTL (with the slip: from the client's count alone).
func (w *watched) reenter(ctx context.Context, h *hold, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	ttl := opts.TTL
	if w.on {
		ttl = w.lease
	}
	start := time.Now()
	if w.slip != slipLocalReentry {
		n, err := extend.Run(ctx, w.rdb, []string{lockimpl.KeyFor(h.lease.Resource)}, h.lease.Token, ttl.Milliseconds()).Int()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			// Expired or taken: the client's holds are gone.
			w.mu.Lock()
			if w.holds[h.lease.Resource] == h {
				delete(w.holds, h.lease.Resource)
			}
			w.mu.Unlock()
			return nil, lockimpl.ErrNotAcquired
		}
	}
	w.mu.Lock()
	h.n++
	w.mu.Unlock()
	return &lockimpl.Lease{Resource: h.lease.Resource, Token: h.lease.Token, Validity: ttl, ValidUntil: start.Add(ttl)}, nil
}

func (w *watched) Release(ctx context.Context, l *lockimpl.Lease) error {
	w.mu.Lock()
	if h := w.holds[l.Resource]; w.reentrant && h != nil && h.lease.Token == l.Token {
		h.n--
		if h.n > 0 {
			if w.stopEarly {
				w.stopLocked(h.lease) // the slip: the outer hold goes on unrenewed
			}
			w.mu.Unlock()
			return nil
		}
		delete(w.holds, l.Resource)
		l = h.lease
	}
	w.stopLocked(l)
	w.mu.Unlock()
	return w.broken.Release(ctx, l)
}

// stopLocked stops a lease's watchdog; the caller holds w.mu.
func (w *watched) stopLocked(l *lockimpl.Lease) {
	if stop := w.stops[l]; stop != nil {
		close(stop)
		delete(w.stops, l)
	}
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
