package golibs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func newEtcdT(t *testing.T, url string) lockimpl.Lock {
	t.Helper()
	l, err := lockimpl.New("etcd", lockimpl.Config{Endpoints: lockimpl.Endpoints{Etcd: []string{url}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func rawEtcd(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// etcdKeys lists the waiter keys under a resource's prefix.
func etcdKeys(t *testing.T, c *clientv3.Client, resource string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, EtcdPrefix+resource+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

func TestEtcdLeaseExcludesAndReleaseFrees(t *testing.T) {
	ctx := context.Background()
	url := startEtcd(t)
	raw := rawEtcd(t, url)
	a, b := newEtcdT(t, url), newEtcdT(t, url)
	const ttl = 5 * time.Second
	la, err := a.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if la.Fence <= 0 {
		t.Errorf("fence %d, want a positive revision", la.Fence)
	}
	if la.Validity <= 0 || la.Validity > ttl {
		t.Errorf("validity %v, want in (0, %v]", la.Validity, ttl)
	}
	for _, wait := range []time.Duration{0, 200 * time.Millisecond} {
		if lb, err := b.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl, Wait: wait}); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("second client, wait %v: lease %+v err %v, want ErrNotAcquired", wait, lb, err)
		}
		// The failed attempt left no waiter key behind.
		if keys := etcdKeys(t, raw, "r"); len(keys) != 1 || keys[0] != la.Token {
			t.Fatalf("after a failed acquire (wait %v) the keys are %q, want only the holder's %q", wait, keys, la.Token)
		}
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if keys := etcdKeys(t, raw, "r"); len(keys) != 0 {
		t.Fatalf("keys after release: %q", keys)
	}
	lb, err := b.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatalf("second client after release: %v", err)
	}
	if lb.Fence <= la.Fence {
		t.Errorf("second grant's fence %d is not above the first's %d", lb.Fence, la.Fence)
	}
	if err := a.Release(ctx, la); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("releasing a released lease: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

func TestEtcdWaitingClientGetsTheLockOnRelease(t *testing.T) {
	ctx := context.Background()
	url := startEtcd(t)
	a, b := newEtcdT(t, url), newEtcdT(t, url)
	la, err := a.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		l   *lockimpl.Lease
		err error
	}
	done := make(chan res, 1)
	go func() {
		l, err := b.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: 5 * time.Second, Wait: 10 * time.Second})
		done <- res{l, err}
	}()
	time.Sleep(100 * time.Millisecond)
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiting client after release: %v", r.err)
	}
	if r.l.Fence <= la.Fence {
		t.Errorf("fence %d after a wait is not above the previous holder's %d", r.l.Fence, la.Fence)
	}
	if r.l.Validity <= 0 {
		t.Errorf("validity %v after a wait, want positive", r.l.Validity)
	}
}

// TestEtcdFenceIncreasesStrictly alternates grants between two instances
// and a fresh one: every fence is above the previous one and is the owner
// key's create revision.
func TestEtcdFenceIncreasesStrictly(t *testing.T) {
	ctx := context.Background()
	url := startEtcd(t)
	raw := rawEtcd(t, url)
	locks := []lockimpl.Lock{newEtcdT(t, url), newEtcdT(t, url)}
	var last int64
	for i := 0; i < 12; i++ {
		l := locks[i%2]
		if i == 11 {
			l = newEtcdT(t, url) // a new Lock object
		}
		lease, err := l.Acquire(ctx, "f", lockimpl.AcquireOptions{TTL: 3 * time.Second})
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if lease.Fence <= last {
			t.Fatalf("grant %d: fence %d not above the previous %d", i, lease.Fence, last)
		}
		last = lease.Fence
		resp, err := raw.Get(ctx, lease.Token)
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != lease.Fence {
			t.Fatalf("grant %d: owner key %s: %v %v, want create revision %d", i, lease.Token, resp, err, lease.Fence)
		}
		// Unrelated writes move the store's revision between grants.
		if _, err := raw.Put(ctx, "/unrelated", "x"); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
	}
}

// TestEtcdDeadHolderFreesWithinTTL closes a holder's client without
// releasing (its session's keepalive stops, as when the process dies): the
// lock must not be free at once, and must be free within TTL + 1s.
func TestEtcdDeadHolderFreesWithinTTL(t *testing.T) {
	ctx := context.Background()
	url := startEtcd(t)
	a, err := lockimpl.New("etcd", lockimpl.Config{Endpoints: lockimpl.Endpoints{Etcd: []string{url}}})
	if err != nil {
		t.Fatal(err)
	}
	b := newEtcdT(t, url)
	la, err := a.Acquire(ctx, "d", lockimpl.AcquireOptions{TTL: 2 * time.Second})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	granted := time.Duration(la.State.(*etcdState).TTL) * time.Second
	if granted < 2*time.Second {
		t.Fatalf("granted TTL %v, want at least the requested 2s", granted)
	}
	a.Close() // the holder dies: no unlock, no revoke
	died := time.Now()
	if _, err := b.Acquire(ctx, "d", lockimpl.AcquireOptions{TTL: 2 * time.Second}); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("right after the holder died: %v, want ErrNotAcquired (its lease still runs)", err)
	}
	lb, err := b.Acquire(ctx, "d", lockimpl.AcquireOptions{TTL: 2 * time.Second, Wait: granted + time.Second})
	if err != nil {
		t.Fatalf("the lock did not free within the granted TTL %v + 1s: %v", granted, err)
	}
	t.Logf("freed %v after the holder died (granted TTL %v)", time.Since(died).Round(time.Millisecond), granted)
	if lb.Fence <= la.Fence {
		t.Errorf("fence %d after the expiry is not above the dead holder's %d", lb.Fence, la.Fence)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

func TestEtcdReleaseOfARevokedLeaseIsErrNotHeld(t *testing.T) {
	ctx := context.Background()
	url := startEtcd(t)
	raw := rawEtcd(t, url)
	l := newEtcdT(t, url)
	lease, err := l.Acquire(ctx, "g", lockimpl.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Revoke(ctx, lease.State.(*etcdState).LeaseID); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("release after the lease was revoked: %v, want ErrNotHeld", err)
	}
	// Another instance can release a live lease (the state is plain values).
	lease, err = l.Acquire(ctx, "g", lockimpl.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := newEtcdT(t, url).Release(ctx, lease); err != nil {
		t.Fatalf("release through another instance: %v", err)
	}
	if keys := etcdKeys(t, raw, "g"); len(keys) != 0 {
		t.Fatalf("keys after release: %q", keys)
	}
}

func TestEtcdTTLRoundsUp(t *testing.T) {
	for ttl, want := range map[time.Duration]int64{
		time.Millisecond:        1,
		time.Second:             1,
		1001 * time.Millisecond: 2,
		2500 * time.Millisecond: 3,
	} {
		if got := etcdTTLSeconds(ttl); got != want {
			t.Errorf("etcdTTLSeconds(%v) = %d, want %d", ttl, got, want)
		}
	}
}
