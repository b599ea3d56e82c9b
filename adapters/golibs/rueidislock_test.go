package golibs

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// renewals records what a lock reports through OnRenew.
type renewals struct {
	mu  sync.Mutex
	got []renewal
}

type renewal struct {
	at, until time.Time
}

func (r *renewals) add(l *lockimpl.Lease) {
	r.mu.Lock()
	r.got = append(r.got, renewal{at: time.Now(), until: l.ValidUntil})
	r.mu.Unlock()
}

func (r *renewals) list() []renewal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]renewal(nil), r.got...)
}

func newRueidisT(t *testing.T, primary string, opts map[string]string, rn *renewals) lockimpl.Lock {
	t.Helper()
	cfg := lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: primary}, Options: opts}
	if rn != nil {
		cfg.OnRenew = rn.add
	}
	return newLockT(t, "rueidislock", cfg)
}

// rueidisKeys lists the lock's keys holding the lease's value.
func rueidisKeys(t *testing.T, raw *redis.Client, resource string, lease *lockimpl.Lease) int {
	t.Helper()
	val, err := hex.DecodeString(lease.Token)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range 3 {
		if multiKeyValue(t, raw, fmt.Sprintf("rueidislock:%d:%s", i, resource)) == string(val) {
			n++
		}
	}
	return n
}

func TestRueidislockExcludesAndReleaseFrees(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a, b := newRueidisT(t, addr, nil, nil), newRueidisT(t, addr, nil, nil)
	raw := multiRawClients(t, []string{addr})[0]
	const ttl = 5 * time.Second
	before := time.Now()
	la, err := a.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if !la.Renewing || la.Validity <= 0 || la.ValidUntil.Before(before) || la.ValidUntil.After(time.Now().Add(ttl)) {
		t.Errorf("lease renewing %v, validity %v until %v: want a renewing lease valid for at most the TTL", la.Renewing, la.Validity, la.ValidUntil)
	}
	if n := rueidisKeys(t, raw, "r", la); n < 2 {
		t.Errorf("%d of the 3 keys hold the lease's value, want a majority", n)
	}
	refusedWhileHeld(t, b, "r", ttl)
	lb := handOver(t, a, b, la, "r", ttl, func() {
		if n := rueidisKeys(t, raw, "r", la); n != 0 {
			t.Errorf("%d keys keep the released lease's value", n)
		}
	})
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

func TestRueidislockMutualExclusion(t *testing.T) {
	addr := startRedis(t)
	checkExclusion(t, newRueidisT(t, addr, nil, nil), newRueidisT(t, addr, nil, nil), 5*time.Second)
}

// expireKeys makes the lock's keys expire on the server now (PEXPIRE 1),
// as if their TTL had run out.
func expireKeys(t *testing.T, raw *redis.Client, resource string) {
	t.Helper()
	for i := range 3 {
		if err := raw.PExpire(context.Background(), fmt.Sprintf("rueidislock:%d:%s", i, resource), time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A lease whose keys expired, then taken by another client, cannot be
// released, and the loss is reported; with client-side caching off too,
// where rueidislock only learns it at its next renewal or at the release.
// The other client's grant is written straight to the keys (the value a
// SET NX after the expiry leaves): a second rueidislock client would race
// the holder's own goroutines, which with client-side caching on take
// expired keys back at once.
func TestRueidislockExpiredLeaseIsReportedAndItsReleaseRefused(t *testing.T) {
	const other = "another-holder"
	for _, cache := range []string{"false", "true"} {
		t.Run("disable-cache="+cache, func(t *testing.T) {
			ctx := context.Background()
			addr := startRedis(t)
			raw := multiRawClients(t, []string{addr})[0]
			var rn renewals
			opts := map[string]string{optDisableCache: cache}
			a := newRueidisT(t, addr, opts, &rn)
			la, err := a.Acquire(ctx, "x", lockimpl.AcquireOptions{TTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if err := raw.Set(ctx, fmt.Sprintf("rueidislock:%d:x", i), other, 10*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if cache == "false" {
				// Client-side caching tells rueidislock at once.
				// (A renewal reported just before the keys were taken may
				// come first: wait for the report of the loss.)
				ended := func(got []renewal) bool {
					return len(got) > 0 && !got[len(got)-1].until.After(got[len(got)-1].at)
				}
				deadline := time.Now().Add(5 * time.Second)
				for !ended(rn.list()) && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if got := rn.list(); !ended(got) {
					t.Fatalf("reports after the keys were taken: %+v, want the validity ended", got)
				}
			}
			if err := a.Release(ctx, la); !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Fatalf("release of the lost lease: %v, want ErrNotHeld", err)
			}
			n := 0
			for i := range 3 {
				if multiKeyValue(t, raw, fmt.Sprintf("rueidislock:%d:x", i)) == other {
					n++
				}
			}
			if n < 3 {
				t.Fatalf("after the stale release only %d of 3 keys hold the other client's value", n)
			}
		})
	}
}

// rueidislock renews a live holder's keys: with a 1 s TTL (renewed every
// 500 ms), the lease is reported renewed, each report claiming at most
// the TTL from the renewal, and nobody else gets the lock after 2 s.
func TestRueidislockRenewalsAreReported(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	var rn renewals
	a, b := newRueidisT(t, addr, nil, &rn), newRueidisT(t, addr, nil, nil)
	la, err := a.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first := la.ValidUntil
	time.Sleep(2200 * time.Millisecond)
	if _, err := b.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: time.Second}); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("another client 2.2 s into a 1 s lease: %v, want ErrNotAcquired (the renewals keep it)", err)
	}
	got := rn.list()
	if len(got) < 2 {
		t.Fatalf("%d renewals reported in 2.2 s of a 1 s lease renewed every 500 ms, want at least 2", len(got))
	}
	prev := first
	for i, r := range got {
		if !r.until.After(prev) || r.until.After(r.at.Add(time.Second)) || !r.until.After(r.at) {
			t.Errorf("renewal %d at %v: valid until %v (previous %v), want later than the previous and than the report, within 1 s of it",
				i, r.at, r.until, prev)
		}
		prev = r.until
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	n := len(rn.list())
	time.Sleep(600 * time.Millisecond)
	if m := len(rn.list()); m != n {
		t.Errorf("%d reports after the release", m-n)
	}
}

// Bad options are refused before anything connects.
func TestRueidislockRefusesBadOptions(t *testing.T) {
	for name, v := range map[string]string{optKeyMajority: "0", optExtendInterval: "soon", optTryNextAfter: "0s", optDisableCache: "yes"} {
		_, err := lockimpl.New("rueidislock", lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: "127.0.0.1:1"}, Options: map[string]string{name: v}})
		if err == nil {
			t.Errorf("option %s=%q accepted", name, v)
		}
	}
	if _, err := lockimpl.New("rueidislock", lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: "127.0.0.1:1"},
		Options: map[string]string{optKeyMajority: "1", optExtendInterval: "100ms"}}); err != nil {
		t.Errorf("good options refused: %v", err)
	}
}
