package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestGetDelReleaseChecksOwner(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "get-del-release", addr, nil)
	b := sfLock(t, "get-del-release", addr, nil)
	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sfKeyGone(t, raw, KeyFor("r"))
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of an expired lease = %v, want ErrNotHeld", err)
	}
	lb, err := b.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Without a pause between GET and DEL the comparison protects B.
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale release = %v, want ErrNotHeld", err)
	}
	if v, _ := raw.Get(ctx, KeyFor("r")).Result(); v != lb.Token {
		t.Fatalf("key = %q, want B's token", v)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// TestGetDelReleaseRaceDeletesNextHoldersKey is claim C3: A's GET sees its
// own token, A pauses at "release-after-get" until its key expires and B
// acquires, then A's DEL removes B's key and C acquires while B holds.
func TestGetDelReleaseRaceDeletesNextHoldersKey(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	reached := make(chan struct{})
	proceed := make(chan struct{})
	a := sfLock(t, "get-del-release", addr, func(c *Config) {
		c.Failpoint = func(n string) {
			if n == "release-after-get" {
				close(reached)
				<-proceed
			}
		}
	})
	b := sfLock(t, "get-del-release", addr, nil)
	c := sfLock(t, "get-del-release", addr, nil)

	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- a.Release(ctx, la) }()
	select {
	case <-reached:
	case <-time.After(5 * time.Second):
		t.Fatal("A's release never reached release-after-get")
	}
	sfKeyGone(t, raw, KeyFor("r"))
	lb, err := b.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	close(proceed)
	if err := <-released; err != nil {
		t.Fatalf("A's release = %v; its DEL should have deleted a key", err)
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
	// B still believes it holds; its own (checked) release is now refused.
	if err := b.Release(ctx, lb); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("B's release = %v, want ErrNotHeld (C holds the key)", err)
	}
}
