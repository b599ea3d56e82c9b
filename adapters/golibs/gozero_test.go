package golibs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

func newGoZeroT(t *testing.T, primary string) lockimpl.Lock {
	t.Helper()
	return newLockT(t, "go-zero", lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: primary}})
}

func TestGoZeroExcludesAndReleaseFrees(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a, b := newGoZeroT(t, addr), newGoZeroT(t, addr)
	raw := multiRawClients(t, []string{addr})[0]
	before := time.Now()
	la, err := a.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if la.Validity <= 0 || la.Validity > 2*time.Second || la.ValidUntil.Before(before) || la.ValidUntil.After(time.Now().Add(2*time.Second)) {
		t.Errorf("validity %v until %v, want at most 2 s, ending within 2 s of now", la.Validity, la.ValidUntil)
	}
	// go-zero's key lives SetExpire seconds plus its 500 ms tolerance.
	if pttl, err := raw.PTTL(ctx, lockimpl.KeyFor("r")).Result(); err != nil || pttl <= 2*time.Second || pttl > 2500*time.Millisecond {
		t.Errorf("key PTTL %v (err %v), want in (2s, 2.5s]", pttl, err)
	}
	refusedWhileHeld(t, b, "r", 2*time.Second)
	lb := handOver(t, a, b, la, "r", 2*time.Second, nil)
	if v := multiKeyValue(t, raw, lockimpl.KeyFor("r")); v == "" {
		t.Errorf("the second client's key is gone after the first released its old lease")
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

func TestGoZeroMutualExclusion(t *testing.T) {
	addr := startRedis(t)
	checkExclusion(t, newGoZeroT(t, addr), newGoZeroT(t, addr), 5*time.Second)
}

// A lease whose key expired (TTL 1 s: the key lives 1.5 s) and was taken by
// another client cannot be released: the other client's key stays.
func TestGoZeroReleaseOfAnExpiredLeaseIsRefused(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a, b := newGoZeroT(t, addr), newGoZeroT(t, addr)
	la, err := a.Acquire(ctx, "x", lockimpl.AcquireOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "x", lockimpl.AcquireOptions{TTL: 10 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("the first lease did not expire within 5 s: %v", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("release of the expired lease: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("the second holder's release after the stale one: %v", err)
	}
}

// Re-entry through the same client is granted and keeps the key, and
// go-zero counts nothing: the first release deletes the key, and the
// re-entered lease is no longer held.
func TestGoZeroReentryDoesNotCount(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a, b := newGoZeroT(t, addr), newGoZeroT(t, addr)
	raw := multiRawClients(t, []string{addr})[0]
	outer, err := a.Acquire(ctx, "e", lockimpl.AcquireOptions{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id := multiKeyValue(t, raw, lockimpl.KeyFor("e"))
	inner, err := a.Acquire(ctx, "e", lockimpl.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	if inner.Token != outer.Token || multiKeyValue(t, raw, lockimpl.KeyFor("e")) != id {
		t.Errorf("re-entry changed the holder: tokens %s %s", outer.Token, inner.Token)
	}
	if pttl, err := raw.PTTL(ctx, lockimpl.KeyFor("e")).Result(); err != nil || pttl <= 10*time.Second {
		t.Errorf("after a re-entry with 10 s the key's PTTL is %v (err %v), want above 10 s", pttl, err)
	}
	if _, err := b.Acquire(ctx, "e", lockimpl.AcquireOptions{TTL: time.Second}); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("another client while re-entered: %v, want ErrNotAcquired", err)
	}
	if err := a.Release(ctx, inner); err != nil {
		t.Fatal(err)
	}
	if v := multiKeyValue(t, raw, lockimpl.KeyFor("e")); v != "" {
		t.Fatalf("after releasing the re-entry the key holds %q: go-zero counted re-entries", v)
	}
	if err := a.Release(ctx, outer); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("outer release after the inner one deleted the key: %v, want ErrNotHeld", err)
	}
	// The next acquire is an outer one again: a new go-zero id.
	again, err := a.Acquire(ctx, "e", lockimpl.AcquireOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if again.Token == outer.Token || multiKeyValue(t, raw, lockimpl.KeyFor("e")) == id {
		t.Errorf("an acquire after the release reused the released lock object")
	}
}

func TestGoZeroWaitsForTheHolder(t *testing.T) {
	addr := startRedis(t)
	waitsForHolder(t, newGoZeroT(t, addr), newGoZeroT(t, addr))
}

func TestGoZeroRefusesSentinelAndRoundsTTLUp(t *testing.T) {
	if _, err := lockimpl.New("go-zero", lockimpl.Config{Endpoints: lockimpl.Endpoints{Sentinels: []string{"127.0.0.1:1"}, Master: "m"}}); err == nil {
		t.Errorf("go-zero built a lock from Sentinel endpoints")
	}
	for ttl, want := range map[time.Duration]int{time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 2 * time.Second: 2} {
		if got := goZeroSeconds(ttl); got != want {
			t.Errorf("goZeroSeconds(%v) = %d, want %d", ttl, got, want)
		}
	}
}
