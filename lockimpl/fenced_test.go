package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFencedTokensStrictlyIncrease: 50 grants alternating between two
// clients, then a fresh Lock object (a restarted client): every token is
// larger than all before it.
func TestFencedTokensStrictlyIncrease(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	locks := []Lock{sfLock(t, "fenced", addr, nil), sfLock(t, "fenced", addr, nil)}
	var last int64
	for i := 0; i < 50; i++ {
		lk := locks[i%2]
		l, err := lk.Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second})
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Fence <= last {
			t.Fatalf("grant %d: fence %d not above %d", i, l.Fence, last)
		}
		last = l.Fence
		// A refused attempt must not consume a token.
		if _, err := locks[(i+1)%2].Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("grant %d: contender acquired: %v", i, err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if last != 50 {
		t.Fatalf("last fence %d after 50 grants, want 50 (a refused attempt took a token?)", last)
	}
	if n, err := raw.Do(ctx, "ttl", FenceKeyFor("r")).Int(); err != nil || n != -1 {
		t.Fatalf("fence counter TTL = %d, %v; want -1 (it must never expire)", n, err)
	}
	for _, lk := range locks {
		lk.Close()
	}

	fresh := sfLock(t, "fenced", addr, nil)
	l, err := fresh.Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence <= last {
		t.Fatalf("restarted client got fence %d, not above %d", l.Fence, last)
	}
	// Extend keeps the token and the key.
	if err := fresh.(Extender).Extend(ctx, l, 8*time.Second); err != nil {
		t.Fatal(err)
	}
	if pttl, _ := raw.PTTL(ctx, KeyFor("r")).Result(); pttl <= 5*time.Second {
		t.Fatalf("PTTL %v after extending to 8s", pttl)
	}
	if v, _ := raw.Get(ctx, KeyFor("r")).Result(); v != l.Token {
		t.Fatalf("lock key = %q, want the holder token", v)
	}
	if err := fresh.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := fresh.(Extender).Extend(ctx, l, time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend after release = %v, want ErrNotHeld", err)
	}
	if err := fresh.Release(ctx, l); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("double release = %v, want ErrNotHeld", err)
	}
}

// TestFencedStaleHolderHasSmallerToken: a holder whose key expired still
// carries its old token, and the next grant's token is larger, which is
// what lets a fenced resource reject the stale holder.
func TestFencedStaleHolderHasSmallerToken(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "fenced", addr, nil)
	b := sfLock(t, "fenced", addr, nil)
	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sfKeyGone(t, raw, KeyFor("r"))
	lb, err := b.Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if lb.Fence <= la.Fence {
		t.Fatalf("new holder's fence %d not above stale holder's %d", lb.Fence, la.Fence)
	}
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale release = %v, want ErrNotHeld", err)
	}
}
