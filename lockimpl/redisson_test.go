package lockimpl

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func redissonID(t *testing.T, l Lock) string {
	t.Helper()
	return l.(*redisson).id
}

// TestRedissonReentrantHoldCount: three acquires by one holder make a hold
// count of 3 in the hash; another client gets in only after three releases.
func TestRedissonReentrantHoldCount(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	var renews atomic.Int32
	a := sfLock(t, "redisson", addr, func(c *Config) { c.OnRenew = func(*Lease) { renews.Add(1) } })
	b := sfLock(t, "redisson", addr, nil)
	key := KeyFor("r")
	field := redissonID(t, a)

	var leases []*Lease
	for i := 0; i < 3; i++ {
		l, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
		if err != nil {
			t.Fatalf("acquire %d: %v", i+1, err)
		}
		if l.Token != field || l.Validity != 10*time.Second {
			t.Fatalf("lease %d: token %q validity %v; want %q and 10s", i+1, l.Token, l.Validity, field)
		}
		leases = append(leases, l)
	}
	if n, err := raw.HGet(ctx, key, field).Int(); err != nil || n != 3 {
		t.Fatalf("hold count = %d, %v; want 3", n, err)
	}
	if n, _ := raw.HLen(ctx, key).Result(); n != 1 {
		t.Fatalf("hash has %d fields, want 1", n)
	}
	// Each re-entry reset the key's TTL, so the earlier leases were told
	// (1 + 2 notifications).
	if got := renews.Load(); got != 3 {
		t.Fatalf("OnRenew calls after re-entries = %d, want 3", got)
	}
	for i, l := range leases {
		if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("other client acquired with hold count %d: %v", 3-i, err)
		}
		if err := a.Release(ctx, l); err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
		if i < 2 {
			if n, _ := raw.HGet(ctx, key, field).Int(); n != 2-i {
				t.Fatalf("hold count after %d releases = %d, want %d", i+1, n, 2-i)
			}
		}
	}
	if n, _ := raw.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("key survives the last release")
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); err != nil {
		t.Fatalf("other client after three releases: %v", err)
	}
}

// TestRedissonNonHolderReleaseRefused: a release by another holder identity
// returns ErrNotHeld and leaves the hash as it was; so does a second release
// of the same lease.
func TestRedissonNonHolderReleaseRefused(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "redisson", addr, nil)
	b := sfLock(t, "redisson", addr, nil)
	key := KeyFor("r")
	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	before, _ := raw.HGetAll(ctx, key).Result()
	foreign := &Lease{Resource: "r", Token: redissonID(t, b), State: &redissonState{}}
	if err := b.Release(ctx, foreign); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("non-holder release = %v, want ErrNotHeld", err)
	}
	after, _ := raw.HGetAll(ctx, key).Result()
	if len(after) != 1 || after[redissonID(t, a)] != "2" || len(before) != 1 || before[redissonID(t, a)] != "2" {
		t.Fatalf("hash before %v after %v; want the holder's count 2 both times", before, after)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second release of one lease = %v, want ErrNotHeld", err)
	}
	if n, _ := raw.HGet(ctx, key, redissonID(t, a)).Int(); n != 1 {
		t.Fatalf("hold count %d, want 1", n)
	}
}

// TestRedissonWatchdogKeepsLeaseAlive: a 1 s lease held for 4 s by the
// watchdog; meanwhile another client never acquires and the key always has
// a TTL. Each renewal reports the full lease through OnRenew.
func TestRedissonWatchdogKeepsLeaseAlive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	var mu sync.Mutex
	var renewals []time.Time
	var bad []string
	a := sfLock(t, "redisson", addr, func(c *Config) {
		c.Options = map[string]string{"lease": "1s"}
		c.OnRenew = func(l *Lease) {
			mu.Lock()
			defer mu.Unlock()
			if l.Validity != time.Second {
				bad = append(bad, "validity "+l.Validity.String())
			}
			if n := len(renewals); n > 0 && !l.ValidUntil.After(renewals[n-1]) {
				bad = append(bad, "ValidUntil did not advance")
			}
			renewals = append(renewals, l.ValidUntil)
		}
	})
	b := sfLock(t, "redisson", addr, nil)
	key := KeyFor("r")
	l, err := a.Acquire(ctx, "r", AcquireOptions{}) // no TTL: lock(), watchdog
	if err != nil {
		t.Fatal(err)
	}
	if l.Validity != time.Second {
		t.Fatalf("validity at acquire %v, want the 1s lease", l.Validity)
	}
	end := time.Now().Add(4 * time.Second)
	for time.Now().Before(end) {
		if pttl, err := raw.PTTL(ctx, key).Result(); err != nil || pttl <= 0 {
			t.Fatalf("PTTL = %v, %v while the holder is alive", pttl, err)
		}
		if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("other client acquired a watched lock: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatalf("release after 4s: %v", err)
	}
	mu.Lock()
	n := len(renewals)
	problems := bad
	mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("renewals: %v", problems)
	}
	if n < 3 {
		t.Fatalf("%d renewals reported in 4s of a 1s lease", n)
	}
	ra := a.(*redisson)
	ra.mu.Lock()
	left := len(ra.holdings)
	ra.mu.Unlock()
	if left != 0 {
		t.Fatal("holding (and its watchdog) survived the final release")
	}
}

// TestRedissonWatchdogOptionWithExplicitTTL: watchdog=true uses the lease
// option and renews even though the caller passed a TTL.
func TestRedissonWatchdogOptionWithExplicitTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "redisson", addr, func(c *Config) {
		c.Options = map[string]string{"lease": "300ms", "watchdog": "true"}
	})
	l, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if l.Validity != 300*time.Millisecond {
		t.Fatalf("validity %v, want the 300ms lease", l.Validity)
	}
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		if n, _ := raw.Exists(ctx, KeyFor("r")).Result(); n != 1 {
			t.Fatal("watched key expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// TestRedissonExplicitTTLIsNotRenewed: tryLock(wait, leaseTime) semantics:
// with a TTL and no watchdog option the key simply expires.
func TestRedissonExplicitTTLIsNotRenewed(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	var renews atomic.Int32
	a := sfLock(t, "redisson", addr, func(c *Config) {
		c.Options = map[string]string{"lease": "300ms"}
		c.OnRenew = func(*Lease) { renews.Add(1) }
	})
	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sfKeyGone(t, raw, KeyFor("r"))
	if n := renews.Load(); n != 0 {
		t.Fatalf("%d renewals of a lease with an explicit TTL", n)
	}
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release after expiry = %v, want ErrNotHeld", err)
	}
}

// TestRedissonCloseFreesWithinOneLease: Close stops the watchdog without
// releasing (as a crash would); the key then has at most one lease to live
// and is gone once that has passed.
func TestRedissonCloseFreesWithinOneLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	const lease = time.Second
	var renews atomic.Int32
	a := sfLock(t, "redisson", addr, func(c *Config) {
		c.Options = map[string]string{"lease": lease.String()}
		c.OnRenew = func(*Lease) { renews.Add(1) }
	})
	b := sfLock(t, "redisson", addr, nil)
	key := KeyFor("r")
	if _, err := a.Acquire(ctx, "r", AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	// Let the watchdog renew at least once so that Close interrupts it.
	sfEventually(t, 5*time.Second, "a renewal", func() bool { return renews.Load() > 0 })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	pttl, err := raw.PTTL(ctx, key).Result()
	if err != nil || pttl <= 0 || pttl > lease {
		t.Fatalf("PTTL after Close = %v, %v; want in (0, %v]", pttl, err, lease)
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquired right after the holder's Close: %v", err)
	}
	time.Sleep(pttl + 20*time.Millisecond)
	if n, _ := raw.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("key still exists one lease after Close: the watchdog kept renewing")
	}
	if _, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second}); err != nil {
		t.Fatalf("acquire after the lease ran out: %v", err)
	}
}

// TestRedissonWaiterWokenByUnlockMessage: a waiter blocked in
// Acquire(Wait=5s) on a key with about ten seconds to live returns within
// 50 ms of the holder's unlock, which only the pub/sub message can explain.
func TestRedissonWaiterWokenByUnlockMessage(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := sfRaw(t, addr)
	a := sfLock(t, "redisson", addr, nil)
	b := sfLock(t, "redisson", addr, nil)
	key := KeyFor("r")
	la, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *Lease
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		l, err := b.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second, Wait: 5 * time.Second})
		done <- result{l, err, time.Now()}
	}()
	// Barrier: the waiter has subscribed to the unlock channel ...
	ch := RedissonChannelFor(key)
	sfEventually(t, 5*time.Second, "the waiter to subscribe", func() bool {
		m, err := raw.PubSubNumSub(ctx, ch).Result()
		return err == nil && m[ch] == 1
	})
	// ... and has had time to retry and park on it.
	time.Sleep(100 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("waiter returned before the unlock: %+v", r)
	default:
	}
	pttl, _ := raw.PTTL(ctx, key).Result()
	if pttl < 5*time.Second {
		t.Fatalf("PTTL %v: the key should have seconds left, far above the wake bound", pttl)
	}
	unlock := time.Now()
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(6 * time.Second):
		t.Fatal("waiter never returned")
	}
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	woke := r.at.Sub(unlock)
	// Woken by the unlock message, not by the key's expiry seconds later:
	// the bound is far from both (a loaded machine delays a wake-up by
	// tens of ms, never by seconds).
	if woke > time.Second {
		t.Fatalf("waiter returned %v after the unlock, want it woken by the unlock message, long before the key's %v were up", woke, pttl)
	}
	t.Logf("waiter returned %v after the unlock (key had %v left)", woke, pttl)
	if v, _ := raw.HGet(ctx, key, redissonID(t, b)).Int(); v != 1 {
		t.Fatalf("waiter's hold count %d, want 1", v)
	}
	if err := b.Release(ctx, r.l); err != nil {
		t.Fatal(err)
	}
	// The waiter unsubscribed when it returned.
	m, _ := raw.PubSubNumSub(ctx, ch).Result()
	if m[ch] != 0 {
		sfEventually(t, 2*time.Second, "the waiter to unsubscribe", func() bool {
			m, err := raw.PubSubNumSub(ctx, ch).Result()
			return err == nil && m[ch] == 0
		})
	}
}

// TestRedissonWaitRunsOut: a waiter gives up when its wait is used up, not
// before, and reports ErrNotAcquired.
func TestRedissonWaitRunsOut(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a := sfLock(t, "redisson", addr, nil)
	b := sfLock(t, "redisson", addr, nil)
	if _, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	start := time.Now()
	_, err := b.Acquire(ctx, "r", AcquireOptions{TTL: time.Second, Wait: wait})
	if !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire = %v, want ErrNotAcquired", err)
	}
	if el := time.Since(start); el < wait {
		t.Fatalf("gave up after %v, before its wait of %v", el, wait)
	}
}

// TestRedissonWaitReplicas: with wait-replicas=1 and no replica the grant is
// undone and Acquire fails; with a replica attached it succeeds.
func TestRedissonWaitReplicas(t *testing.T) {
	ctx := context.Background()
	addrs := startRedisN(t, 2)
	raw := sfRaw(t, addrs[0])
	opts := map[string]string{"wait-replicas": "1", "wait-timeout": "100ms"}
	a := sfLock(t, "redisson", addrs[0], func(c *Config) { c.Options = opts })
	b := sfLock(t, "redisson", addrs[0], nil)
	key := KeyFor("r")

	_, err := a.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if !errors.Is(err, ErrReplicasNotSynced) || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire with no replica = %v, want ErrReplicasNotSynced (and ErrNotAcquired)", err)
	}
	if n, _ := raw.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("the refused grant was not undone")
	}
	lb, err := b.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("another client after the refused grant: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}

	// Attach a replica and wait until it is online.
	if err := raw.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	replica := sfRaw(t, addrs[1])
	host, port, err := net.SplitHostPort(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.Do(ctx, "replicaof", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	sfEventually(t, 10*time.Second, "the replica to come online", func() bool {
		s, err := raw.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(s, "connected_slaves:1") && strings.Contains(s, "state=online")
	})
	// "online" can precede the command stream by up to a second; wait until
	// a write reaches the replica.
	if err := raw.Set(ctx, "probe", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sfEventually(t, 10*time.Second, "a write to reach the replica", func() bool {
		n, err := replica.Exists(ctx, "probe").Result()
		return err == nil && n == 1
	})
	// WAIT returns as soon as the replica acknowledges; the generous timeout
	// only matters on a loaded machine.
	a2 := sfLock(t, "redisson", addrs[0], func(c *Config) {
		c.Options = map[string]string{"wait-replicas": "1", "wait-timeout": "5s"}
	})
	acq := time.Now()
	la, err := a2.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("acquire with one replica online: %v", err)
	}
	t.Logf("acquired with WAIT 1 in %v", time.Since(acq))
	sfEventually(t, 5*time.Second, "the lock on the replica", func() bool {
		n, err := replica.HGet(ctx, key, redissonID(t, a2)).Int()
		return err == nil && n == 1
	})
	if err := a2.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
}
