package golibs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

func newRedislockT(t *testing.T, primary string) lockimpl.Lock {
	t.Helper()
	l, err := lockimpl.New("redislock", lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: primary}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestRedislockLeaseExcludesAndReleaseFrees(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a, b := newRedislockT(t, addr), newRedislockT(t, addr)
	const ttl = 10 * time.Second
	before := time.Now()
	la, err := a.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if la.Validity <= 0 || la.Validity > ttl {
		t.Errorf("validity %v, want in (0, %v]", la.Validity, ttl)
	}
	if la.ValidUntil.Before(before) || la.ValidUntil.After(time.Now().Add(ttl)) {
		t.Errorf("valid until %v, not within a TTL of now", la.ValidUntil)
	}
	raw := multiRawClients(t, []string{addr})[0]
	if v := multiKeyValue(t, raw, lockimpl.KeyFor("r")); v != la.Token {
		t.Errorf("key holds %q, want the lease token %q", v, la.Token)
	}
	refusedWhileHeld(t, b, "r", ttl)
	lb := handOver(t, a, b, la, "r", ttl, nil)
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

func TestRedislockValidityFollowsTheKeyTTL(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	l := newRedislockT(t, addr)
	// A short TTL: the reported validity is the key's PTTL, at most the TTL.
	lease, err := l.Acquire(ctx, "v", lockimpl.AcquireOptions{TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Validity <= 0 || lease.Validity > 300*time.Millisecond {
		t.Errorf("validity %v, want in (0, 300ms]", lease.Validity)
	}
}

func TestRedislockWaitsForTheHolder(t *testing.T) {
	addr := startRedis(t)
	waitsForHolder(t, newRedislockT(t, addr), newRedislockT(t, addr))
}

func TestRedislockExtendIsRefresh(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	l := newRedislockT(t, addr)
	lease, err := l.Acquire(ctx, "e", lockimpl.AcquireOptions{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ex := l.(lockimpl.Extender)
	if err := ex.Extend(ctx, lease, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if lease.Validity <= 2*time.Second || lease.Validity > 30*time.Second {
		t.Errorf("validity after extend %v, want in (2s, 30s]", lease.Validity)
	}
	raw := multiRawClients(t, []string{addr})[0]
	if pttl, err := raw.PTTL(ctx, lockimpl.KeyFor("e")).Result(); err != nil || pttl <= 2*time.Second {
		t.Errorf("pttl %v err %v, want more than 2s", pttl, err)
	}
	// A lease survives a new lock instance (a worker re-pointing its endpoints).
	l2 := newRedislockT(t, addr)
	if err := l2.(lockimpl.Extender).Extend(ctx, lease, 20*time.Second); err != nil {
		t.Fatalf("extend through another instance: %v", err)
	}
	if err := raw.Del(ctx, lockimpl.KeyFor("e")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ex.Extend(ctx, lease, time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("extend of a lost lease: %v, want ErrNotHeld", err)
	}
	if err := l2.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release of a lost lease through another instance: %v, want ErrNotHeld", err)
	}
}
