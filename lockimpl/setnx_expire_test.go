package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSetnxExpireSetsTTLInWholeSeconds(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	var hits []string
	a := sfLock(t, "setnx-expire", addr, func(c *Config) { c.Failpoint = func(n string) { hits = append(hits, n) } })
	b := sfLock(t, "setnx-expire", addr, nil)

	l, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0] != "after-setnx" {
		t.Fatalf("failpoints hit = %v, want [after-setnx]", hits)
	}
	if ttl, err := raw.Do(ctx, "ttl", KeyFor("r")).Int(); err != nil || ttl != 2 {
		t.Fatalf("TTL = %d, %v; want 2 (1.5s rounded up)", ttl, err)
	}
	if l.Validity != 2*time.Second {
		t.Fatalf("validity %v, want 2s", l.Validity)
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second client acquired a held lock: %v", err)
	}
	if err := b.Release(ctx, &Lease{Resource: "r", Token: "not-mine"}); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("foreign release = %v, want ErrNotHeld", err)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, l); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("double release = %v, want ErrNotHeld", err)
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}

type crashHere struct{ name string }

// TestSetnxExpireCrashAfterSetnxDeadlocks is claim C1: the holder dies
// between SETNX and EXPIRE, the key has no TTL, and nobody acquires again.
func TestSetnxExpireCrashAfterSetnxDeadlocks(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	const ttl = 200 * time.Millisecond
	a := sfLock(t, "setnx-expire", addr, func(c *Config) {
		c.Failpoint = func(n string) {
			if n == "after-setnx" {
				panic(crashHere{n}) // the worker would SIGKILL itself here
			}
		}
	})
	crashed := func() (got any) {
		defer func() { got = recover() }()
		a.Acquire(ctx, "r", AcquireOptions{TTL: ttl})
		return nil
	}()
	if c, ok := crashed.(crashHere); !ok || c.name != "after-setnx" {
		t.Fatalf("acquire did not stop at after-setnx: %v", crashed)
	}
	if n, err := raw.Do(ctx, "ttl", KeyFor("r")).Int(); err != nil || n != -1 {
		t.Fatalf("TTL = %d, %v; want -1 (key without expiry)", n, err)
	}
	b := sfLock(t, "setnx-expire", addr, nil)
	start := time.Now()
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: ttl, Wait: 2 * ttl}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("another client acquired the orphaned lock: %v", err)
	}
	if time.Since(start) < 2*ttl {
		t.Fatalf("acquire gave up after %v, before its wait of %v", time.Since(start), 2*ttl)
	}
	if n, err := raw.Do(ctx, "ttl", KeyFor("r")).Int(); err != nil || n != -1 {
		t.Fatalf("after 2×TTL: TTL = %d, %v; want -1", n, err)
	}
}
