package golock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockfaulttest"

	"example.com/golock"
	"example.com/golock/brokenlock"
)

// goLock is the lock as lockfault sees it: its description and, for each
// simulated client, an adapter around golock (the test binary runs it in
// every client's worker process).
var goLock = lockfaulttest.LockDef{
	Info: lockfaulttest.Info{Name: "golock", Needs: lockfaulttest.NeedsSingle, Caps: []string{lockfaulttest.CapExtend},
		Promises: "mutual exclusion on one Redis server; a crashed holder frees within one TTL; extend"},
	New: func(cfg lockfaulttest.Config) (lockfaulttest.Lock, error) {
		// golock measures validity on its Now, time.Now by default
		// (monotonic), as in production. This test binary is not built
		// with lockfault's clock overlay, so a client wall clock step
		// moves only Config.Now, which golock never reads:
		// clock/client-steps is reported not exercised (skipped, never
		// held). go test -overlay .../build/_clock/overlay.json -tags
		// lockfault_clock moves time.Now too (docs/FAULTS.md).
		l := golock.New(cfg.Endpoints.Primary)
		return &adapter[*golock.Lock]{l, cfg, golockLease, golock.ErrTaken, golock.ErrLost}, nil
	},
}

// brokenLock is golock's copy with one bug.
var brokenLock = lockfaulttest.LockDef{
	Info: lockfaulttest.Info{Name: "golock-broken", Needs: lockfaulttest.NeedsSingle, Caps: []string{lockfaulttest.CapExtend},
		Promises: "golock with one bug: acquire without NX"},
	New: func(cfg lockfaulttest.Config) (lockfaulttest.Lock, error) {
		l := brokenlock.New(cfg.Endpoints.Primary)
		return &adapter[*brokenlock.Lock]{l, cfg, brokenLease, brokenlock.ErrTaken, brokenlock.ErrLost}, nil
	},
}

// The whole suite against golock: one subtest per property, e.g.
//
//	go test -run 'TestGoLock/exclusion/no-faults'
//
// golock writes its key to one Redis master, so like every single-master
// lock it loses a grant when an asynchronous replica is promoted: that
// property is listed as a known violation (skipped with what was observed,
// not failed).
func TestGoLock(t *testing.T) {
	lockfaulttest.Run(t, goLock, lockfaulttest.Options{KnownViolations: map[string]string{
		"failover/async-replica": "one master, asynchronous replication: a failover can lose the key (C5)",
		"failover/sentinel":      "the same loss when the Sentinels fail over (C5)",
		"clock/node-jump":        "Redis expires the key by its own clock and golock has no fencing token (C10)",
		"clock/node-drift":       "the same: a server clock that runs fast expires the key early, and no fencing token guards the resource",
	}})
}

// The broken copy is caught: its card has exclusion/no-faults violated,
// and the explanation says what happened.
func TestBrokenCopyIsCaught(t *testing.T) {
	c, err := lockfaulttest.Suite(t, brokenLock, lockfaulttest.Options{
		Only: []string{"exclusion/no-faults"}, ReportsDir: t.TempDir(), Cycles: 2})
	if err != nil {
		t.Fatal(err)
	}
	row, _ := c.Row("exclusion/no-faults")
	if row.Outcome != lockfaulttest.Violated {
		t.Fatalf("the lock without NX was not caught: %s", row.Summary())
	}
	msg := lockfaulttest.Explain(row)
	if !strings.Contains(msg, "Two holders at once") {
		t.Errorf("the explanation does not say that two clients held the lock:\n%s", msg)
	}
	t.Logf("as a failing test shows it:\n%s", msg)
}

// What a violation looks like in `go test` output:
//
//	GOLOCK_SHOW_BROKEN=1 go test -run TestBrokenCopyFails
func TestBrokenCopyFails(t *testing.T) {
	if os.Getenv("GOLOCK_SHOW_BROKEN") == "" {
		t.Skip("fails on purpose: set GOLOCK_SHOW_BROKEN=1 to see how a violated property fails a test")
	}
	lockfaulttest.Run(t, brokenLock, lockfaulttest.Options{})
}

// adapter turns the user's lock API into lockfaulttest.Lock; the worker
// calls it in each simulated client.
type adapter[L any] struct {
	l interface {
		Obtain(ctx context.Context, key string, ttl, wait time.Duration) (L, error)
		Release(ctx context.Context, lk L) error
		Extend(ctx context.Context, lk L, ttl time.Duration) error
		Close() error
	}
	cfg            lockfaulttest.Config
	lease          func(L) (token string, validUntil time.Time)
	taken, lostErr error
}

func (a *adapter[L]) Acquire(ctx context.Context, res string, o lockfaulttest.AcquireOptions) (*lockfaulttest.Lease, error) {
	lk, err := a.l.Obtain(ctx, res, o.TTL, o.Wait)
	if errors.Is(err, a.taken) {
		return nil, lockfaulttest.ErrNotAcquired
	}
	if err != nil {
		return nil, err
	}
	token, until := a.lease(lk)
	return &lockfaulttest.Lease{Resource: res, Token: token, ValidUntil: until, Validity: time.Until(until), State: lk}, nil
}

func (a *adapter[L]) Release(ctx context.Context, l *lockfaulttest.Lease) error {
	return a.notHeld(a.l.Release(ctx, l.State.(L)))
}

func (a *adapter[L]) Extend(ctx context.Context, l *lockfaulttest.Lease, ttl time.Duration) error {
	if err := a.notHeld(a.l.Extend(ctx, l.State.(L), ttl)); err != nil {
		return err
	}
	_, until := a.lease(l.State.(L))
	l.ValidUntil, l.Validity = until, time.Until(until)
	return nil
}

func (a *adapter[L]) notHeld(err error) error {
	if errors.Is(err, a.lostErr) {
		return lockfaulttest.ErrNotHeld
	}
	return err
}

func (a *adapter[L]) Close() error { return a.l.Close() }

func golockLease(l *golock.Lock) (string, time.Time)     { return l.Token, l.ValidUntil }
func brokenLease(l *brokenlock.Lock) (string, time.Time) { return l.Token, l.ValidUntil }
