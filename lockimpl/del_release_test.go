package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelReleaseBasic(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a := sfLock(t, "del-release", addr, nil)
	b := sfLock(t, "del-release", addr, nil)
	l, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second client acquired a held lock: %v", err)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, l); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with no key = %v, want ErrNotHeld", err)
	}
}

// TestDelReleaseDeletesNextHoldersKey is claim C2: A stalls past its TTL, B
// acquires, A's release deletes B's key, and C acquires while B holds.
func TestDelReleaseDeletesNextHoldersKey(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "del-release", addr, nil)
	b := sfLock(t, "del-release", addr, nil)
	c := sfLock(t, "del-release", addr, nil)

	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sfKeyGone(t, raw, KeyFor("r")) // A stalls past its TTL
	lb, err := b.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("A's late release = %v; the plain DEL should succeed", err)
	}
	if n, _ := raw.Exists(ctx, KeyFor("r")).Result(); n != 0 {
		t.Fatal("B's key survived A's DEL")
	}
	lc, err := c.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("C could not acquire after A deleted B's key: %v", err)
	}
	if lb.Token == lc.Token {
		t.Fatal("B and C share a token")
	}
	// B and C both hold the lock now; B's release in turn deletes C's key.
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if n, _ := raw.Exists(ctx, KeyFor("r")).Result(); n != 0 {
		t.Fatal("C's key survived B's DEL")
	}
}
