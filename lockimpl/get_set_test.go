package lockimpl

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestGetSetExcludesWhenNotRacing(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "get-set", addr, nil)
	b := sfLock(t, "get-set", addr, nil)
	l, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if pttl, err := raw.PTTL(ctx, KeyFor("r")).Result(); err != nil || pttl <= 0 || pttl > 5*time.Second {
		t.Fatalf("PTTL = %v, %v; want in (0, 5s]", pttl, err)
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second client acquired a held lock: %v", err)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
}

// TestGetSetDoubleGrant: two clients both GET an empty key, both are held at
// "after-get" until both have read, then both SET: both hold the lock.
func TestGetSetDoubleGrant(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)

	var arrived sync.WaitGroup
	arrived.Add(2)
	allIn := make(chan struct{})
	go func() { arrived.Wait(); close(allIn) }()
	barrier := func(name string) {
		if name != "after-get" {
			return
		}
		arrived.Done()
		select {
		case <-allIn:
		case <-time.After(10 * time.Second):
			t.Error("barrier: the other client never reached after-get")
		}
	}
	locks := []Lock{
		sfLock(t, "get-set", addr, func(c *Config) { c.Failpoint = barrier }),
		sfLock(t, "get-set", addr, func(c *Config) { c.Failpoint = barrier }),
	}
	leases := make([]*Lease, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leases[i], errs[i] = locks[i].Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v (want both granted)", i, err)
		}
	}
	if leases[0].Token == leases[1].Token {
		t.Fatal("both leases have the same token")
	}
	// The key holds whichever SET came last; the other holder's release is
	// refused, though it held the lock.
	v, err := raw.Get(ctx, KeyFor("r")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if v != leases[0].Token && v != leases[1].Token {
		t.Fatalf("key holds %q, neither client's token", v)
	}
	ok := 0
	for i, l := range leases {
		if err := locks[i].Release(ctx, l); err == nil {
			ok++
		} else if !errors.Is(err, ErrNotHeld) {
			t.Fatal(err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d releases succeeded, want exactly 1", ok)
	}
}
