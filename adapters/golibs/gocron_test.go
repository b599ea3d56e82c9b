package golibs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

func newGocronT(t *testing.T, primary string, opts map[string]string, rn *renewals) lockimpl.Lock {
	t.Helper()
	cfg := lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: primary}, Options: opts}
	if rn != nil {
		cfg.OnRenew = rn.add
	}
	return newLockT(t, "gocron-redis-lock", cfg)
}

func TestGocronExcludesAndReleaseFrees(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	a, b := newGocronT(t, addr, nil, nil), newGocronT(t, addr, nil, nil)
	raw := multiRawClients(t, []string{addr})[0]
	const ttl = 10 * time.Second
	before := time.Now()
	la, err := a.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if la.Renewing || la.Validity <= 0 || la.Validity > ttl-ttl/100 || la.ValidUntil.Before(before) || la.ValidUntil.After(time.Now().Add(ttl)) {
		t.Errorf("lease renewing %v, validity %v until %v: want no renewal, at most TTL - 1%% of it, within a TTL of now",
			la.Renewing, la.Validity, la.ValidUntil)
	}
	if v := multiKeyValue(t, raw, lockimpl.KeyFor("r")); v == "" || v != la.Token {
		t.Errorf("the key holds %q, want the lease token %q", v, la.Token)
	}
	refusedWhileHeld(t, b, "r", ttl)
	// gocron-redis-lock's Unlock panics when called twice: the adapter
	// answers instead (handOver releases la twice).
	lb := handOver(t, a, b, la, "r", ttl, func() {
		if v := multiKeyValue(t, raw, lockimpl.KeyFor("r")); v != "" {
			t.Errorf("the released key keeps %q", v)
		}
	})
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if n := a.(*gocronLock).obs.watched() + b.(*gocronLock).obs.watched(); n != 0 {
		t.Errorf("%d grants still watched without a watchdog", n)
	}
}

// Both clients wait for each other's releases (Wait 3 s) in every round.
func TestGocronMutualExclusion(t *testing.T) {
	addr := startRedis(t)
	checkExclusion(t, newGocronT(t, addr, nil, nil), newGocronT(t, addr, nil, nil), 5*time.Second)
}

// A lease whose key expired, then taken by another client, cannot be
// released: the next holder's key stays.
func TestGocronExpiredLeaseReleaseRefused(t *testing.T) {
	ctx := context.Background()
	addr := startRedis(t)
	raw := multiRawClients(t, []string{addr})[0]
	a, b := newGocronT(t, addr, nil, nil), newGocronT(t, addr, nil, nil)
	la, err := a.Acquire(ctx, "x", lockimpl.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.PExpire(ctx, lockimpl.KeyFor("x"), time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "x", lockimpl.AcquireOptions{TTL: 10 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("the key expired, yet another client cannot acquire: %v", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("release of the expired lease: %v, want ErrNotHeld", err)
	}
	if v := multiKeyValue(t, raw, lockimpl.KeyFor("x")); v != lb.Token {
		t.Fatalf("after the stale release the key holds %q, want the second holder's %q", v, lb.Token)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// renewalProblems lists what is wrong with the renewals reported for a
// lease of the given TTL whose acquire claimed first: each must move the
// validity forward, past the report, and claim at most the TTL from it.
func renewalProblems(first time.Time, got []renewal, ttl time.Duration) []string {
	var out []string
	prev := first
	for i, r := range got {
		if !r.until.After(prev) || !r.until.After(r.at) || r.until.After(r.at.Add(ttl)) {
			out = append(out, fmt.Sprintf("renewal %d at %v: valid until %v (previous %v), want later than the previous and than the report, within %v of it",
				i, r.at, r.until, prev, ttl))
		}
		prev = r.until
	}
	return out
}

// The renewal check can fail: reports that claim more than the TTL, or
// move the validity back, are caught.
func TestGocronRenewalCheckCatchesBadReports(t *testing.T) {
	now := time.Now()
	for name, got := range map[string][]renewal{
		"past the TTL": {{at: now, until: now.Add(1500 * time.Millisecond)}},
		"backwards":    {{at: now, until: now.Add(900 * time.Millisecond)}, {at: now.Add(time.Millisecond), until: now.Add(800 * time.Millisecond)}},
		"already over": {{at: now, until: now.Add(-time.Millisecond)}},
	} {
		if p := renewalProblems(now.Add(-time.Second), got, time.Second); len(p) == 0 {
			t.Errorf("%s: no problem found in %+v", name, got)
		}
	}
	if p := renewalProblems(now, []renewal{{at: now, until: now.Add(time.Second)}}, time.Second); len(p) != 0 {
		t.Errorf("a good renewal: %v", p)
	}
}

// With watchdog=true gocron-redis-lock auto-extends a 1 s lease every
// third of a second: each renewal is reported, and nobody else gets the
// lock 2.2 s in. Without it (the library's default) nothing renews and the
// other client gets the lock: the check fails against a lock that does not
// renew.
func TestGocronRenewalsAreReported(t *testing.T) {
	for _, watchdog := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchdog=%v", watchdog), func(t *testing.T) {
			ctx := context.Background()
			addr := startRedis(t)
			var rn renewals
			opts := map[string]string{optGocronWatchdog: fmt.Sprint(watchdog)}
			a, b := newGocronT(t, addr, opts, &rn), newGocronT(t, addr, opts, nil)
			la, err := a.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if la.Renewing != watchdog {
				t.Errorf("lease renewing %v, want %v", la.Renewing, watchdog)
			}
			// Renewals write the lease's validity under its state's mutex.
			st := la.State.(*gocronState)
			st.mu.Lock()
			first := la.ValidUntil
			st.mu.Unlock()
			time.Sleep(2200 * time.Millisecond)
			lb, err := b.Acquire(ctx, "w", lockimpl.AcquireOptions{TTL: time.Second})
			got := rn.list()
			if !watchdog {
				if err != nil || len(got) != 0 {
					t.Fatalf("without auto-extend, 2.2 s into a 1 s lease: acquire %v, %d renewals; want the lock free and none", err, len(got))
				}
				if err := b.Release(ctx, lb); err != nil {
					t.Fatal(err)
				}
				if err := a.Release(ctx, la); !errors.Is(err, lockimpl.ErrNotHeld) {
					t.Fatalf("release of the expired lease: %v, want ErrNotHeld", err)
				}
				return
			}
			if !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("another client 2.2 s into a 1 s lease: %v, want ErrNotAcquired (the renewals keep it)", err)
			}
			if len(got) < 3 {
				t.Fatalf("%d renewals reported in 2.2 s of a 1 s lease renewed every 333 ms, want at least 3", len(got))
			}
			for _, p := range renewalProblems(first, got, time.Second) {
				t.Error(p)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatal(err)
			}
			n := len(rn.list())
			time.Sleep(700 * time.Millisecond)
			if m := len(rn.list()); m != n {
				t.Errorf("%d reports after the release", m-n)
			}
			if w := a.(*gocronLock).obs.watched(); w != 0 {
				t.Errorf("%d grants still watched after the release", w)
			}
		})
	}
}

// An acquire whose SET timed out (the server stopped) may have left its key
// behind: it is not ErrNotAcquired. A refused connection is.
func TestGocronUnansweredAcquireIsUnknown(t *testing.T) {
	ctx := context.Background()
	addrs, nodes := startRedisNodes(t, 1)
	l := newGocronT(t, addrs[0], nil, nil)
	// Build the Locker (its PING) while the server answers.
	lease, err := l.Acquire(ctx, "u", lockimpl.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].Signal(ctx, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nodes[0].Signal(context.Background(), syscall.SIGCONT) })
	_, err = l.Acquire(ctx, "u", lockimpl.AcquireOptions{TTL: 10 * time.Second})
	if err == nil || errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire against a stopped server: %v, want an error that is not ErrNotAcquired", err)
	}
	if err := nodes[0].Signal(ctx, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	killNodes(t, nodes[0])
	if _, err := l.Acquire(ctx, "u", lockimpl.AcquireOptions{TTL: 10 * time.Second}); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire against a dead server: %v, want ErrNotAcquired (the connection was refused)", err)
	}
}

// settled, the rule behind ErrNotAcquired, against every pair of answers.
func TestGocronSettled(t *testing.T) {
	all := []gocronOutcome{gocronNone, gocronYes, gocronNo, gocronNotSent, gocronUnknown}
	for _, set := range all {
		for _, del := range all {
			want := set == gocronNone || set == gocronNo || set == gocronNotSent ||
				del == gocronYes || (set == gocronYes && del == gocronNo)
			if got := (&gocronCall{set: set, del: del}).settled(); got != want {
				t.Errorf("SET %v, delete %v: settled %v, want %v", set, del, got, want)
			}
		}
	}
}

func TestGocronParsesTheLockRequests(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want gocronCommand
	}{
		{[]any{"set", "lock:r", "v1", "px", int64(1500), "nx"}, gocronCommand{gocronSet, "v1", 1500 * time.Millisecond}},
		{[]any{"set", "lock:r", "v1", "ex", int64(2), "nx"}, gocronCommand{gocronSet, "v1", 2 * time.Second}},
		{[]any{"evalsha", "e950836ed1e694540c503ef9972b8de518044d3b", 1, "lock:r", "v1"}, gocronCommand{gocronDelete, "v1", 0}},
		{[]any{"evalsha", "d75bb8b5bd13532ddedd17762e772346e39b321e", 1, "lock:r", "v1", 1000}, gocronCommand{gocronTouch, "v1", time.Second}},
		{[]any{"eval", "local x", 1, "lock:r", "v1", 1000}, gocronCommand{gocronTouch, "v1", time.Second}},
	} {
		if got, ok := parseGocron(tc.args); !ok || got != tc.want {
			t.Errorf("%v: %+v %v, want %+v", tc.args, got, ok, tc.want)
		}
	}
	for _, args := range [][]any{{"ping"}, {"set", "k", "v"}, {"set", "k", "v", "px", 5, "xx"}, {"get", "k"}, {"evalsha", "x", 2, "a", "b", "c"}} {
		if got, ok := parseGocron(args); ok {
			t.Errorf("%v taken for a lock request: %+v", args, got)
		}
	}
}

// Bad options are refused before anything connects.
func TestGocronRefusesBadOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{optGocronWatchdog: "yes"},
		{optGocronAutoExtend: "0s"},
		{optGocronAutoExtend: "2h"},
		{optGocronAutoExtend: "100ms", optGocronWatchdog: "false"},
		{optGocronDriftFactor: "-0.1"},
		{optGocronDriftFactor: "one"},
	} {
		if _, err := lockimpl.New("gocron-redis-lock", lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: "127.0.0.1:1"}, Options: opts}); err == nil {
			t.Errorf("options %v accepted", opts)
		}
	}
	l, err := lockimpl.New("gocron-redis-lock", lockimpl.Config{Endpoints: lockimpl.Endpoints{Primary: "127.0.0.1:1"},
		Options: map[string]string{optGocronAutoExtend: "100ms", optGocronDriftFactor: "0.02"}})
	if err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	l.Close()
}
