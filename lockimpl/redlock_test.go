package lockimpl

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// multiTestClock is a wall clock (no monotonic reading) a test can step.
type multiTestClock struct{ offset atomic.Int64 }

func (c *multiTestClock) Now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.offset.Load()))
}

// newRedlockT builds a redlock client. Unless the test sets node-timeout,
// it is 1s: the tests are about quorum logic, not about timeouts, and a
// 50 ms timeout can expire on a loaded test machine.
func newRedlockT(t *testing.T, masters []string, cfg Config) Lock {
	t.Helper()
	cfg.Endpoints = Endpoints{Masters: masters}
	if _, ok := cfg.Options["node-timeout"]; !ok {
		opts := map[string]string{"node-timeout": "1s"}
		for k, v := range cfg.Options {
			opts[k] = v
		}
		cfg.Options = opts
	}
	l, err := New("redlock", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// multiRawClients connects to every address, for inspecting keys behind the lock.
func multiRawClients(t *testing.T, addrs []string) []*redis.Client {
	t.Helper()
	var cs []*redis.Client
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// multiKeyValue returns the key's value on a node, "" when it does not exist.
func multiKeyValue(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	v, err := c.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, c.Options().Addr, err)
	}
	return v
}

func TestRedlockAcquiresWithTwoOfFiveMastersDown(t *testing.T) {
	ctx := context.Background()
	addrs, nodes := startRedisNodes(t, 5)
	l := newRedlockT(t, addrs, Config{})
	killNodes(t, nodes[3], nodes[4])

	const ttl = 5 * time.Second
	lease, err := l.Acquire(ctx, "r", AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatalf("acquire with 3 of 5 masters up: %v", err)
	}
	raw := multiRawClients(t, addrs[:3])
	for i, c := range raw {
		if v := multiKeyValue(t, c, KeyFor("r")); v != lease.Token {
			t.Errorf("master %d holds %q, want the lease token %q", i, v, lease.Token)
		}
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("release on 3 of 5: %v", err)
	}
	for i, c := range raw {
		if v := multiKeyValue(t, c, KeyFor("r")); v != "" {
			t.Errorf("master %d still holds %q after release", i, v)
		}
	}
}

func TestRedlockFailsWithThreeOfFiveMastersDownAndLeavesNoKey(t *testing.T) {
	ctx := context.Background()
	addrs, nodes := startRedisNodes(t, 5)
	l := newRedlockT(t, addrs, Config{})
	killNodes(t, nodes[2], nodes[3], nodes[4])
	raw := multiRawClients(t, addrs[:2])

	for _, wait := range []time.Duration{0, 100 * time.Millisecond} {
		lease, err := l.Acquire(ctx, "r", AcquireOptions{TTL: 5 * time.Second, Wait: wait})
		if err == nil {
			t.Fatalf("wait %v: acquired %+v with only 2 of 5 masters up", wait, lease)
		}
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("wait %v: error %v does not wrap ErrNotAcquired, though the dead masters never got the SET", wait, err)
		}
		for i, c := range raw {
			if v := multiKeyValue(t, c, KeyFor("r")); v != "" {
				t.Errorf("wait %v: reachable master %d keeps %q after the failed acquire", wait, i, v)
			}
		}
	}
}

// TestRedlockQuorumIsExactlyThreeOfFive pins N/2+1 without killing anything:
// another holder's key on 2 masters leaves 3 for us, on 3 it leaves 2.
func TestRedlockQuorumIsExactlyThreeOfFive(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 5)
	l := newRedlockT(t, addrs, Config{})
	raw := multiRawClients(t, addrs)
	key := KeyFor("q")

	for _, c := range raw[:2] {
		if err := c.Set(ctx, key, "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := l.Acquire(ctx, "q", AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("acquire with 3 free masters of 5: %v", err)
	}
	for i, c := range raw {
		want := lease.Token
		if i < 2 {
			want = "other"
		}
		if v := multiKeyValue(t, c, key); v != want {
			t.Errorf("master %d holds %q, want %q", i, v, want)
		}
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}

	if err := raw[2].Set(ctx, key, "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if lease, err := l.Acquire(ctx, "q", AcquireOptions{TTL: 5 * time.Second}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire with 2 free masters of 5: lease %+v err %v, want ErrNotAcquired", lease, err)
	}
	for i, c := range raw {
		want := ""
		if i < 3 {
			want = "other"
		}
		if v := multiKeyValue(t, c, key); v != want {
			t.Errorf("after the failed acquire master %d holds %q, want %q", i, v, want)
		}
	}
}

func TestRedlockValidityIsBelowTTL(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 5)
	l := newRedlockT(t, addrs, Config{})
	const ttl = 2 * time.Second
	before := time.Now()
	lease, err := l.Acquire(ctx, "v", AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	d := ttl/100 + 2*time.Millisecond
	if lease.Validity <= 0 || lease.Validity > ttl-d {
		t.Errorf("validity %v, want in (0, %v]", lease.Validity, ttl-d)
	}
	if lease.ValidUntil.Before(before.Add(ttl-d)) || lease.ValidUntil.After(after.Add(ttl-d)) {
		t.Errorf("valid until %v, want start + TTL - drift within [%v, %v]", lease.ValidUntil, before.Add(ttl-d), after.Add(ttl-d))
	}
	if lease.Token == "" || lease.Fence != 0 {
		t.Errorf("token %q fence %d, want a token and no fence", lease.Token, lease.Fence)
	}
}

// TestRedlockSlowAcquireVoidsTheGrant sleeps past the TTL between the SETs
// and the second time reading: the elapsed time exceeds the TTL, so the
// grant is invalid and every key is released.
func TestRedlockSlowAcquireVoidsTheGrant(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 5)
	const ttl = 300 * time.Millisecond
	l := newRedlockT(t, addrs, Config{Failpoint: func(name string) {
		if name == "after-setnx" {
			time.Sleep(ttl + 50*time.Millisecond)
		}
	}})
	lease, err := l.Acquire(ctx, "c", AcquireOptions{TTL: ttl})
	if !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("lease %+v err %v, want ErrNotAcquired after an acquire longer than the TTL", lease, err)
	}
	for i, c := range multiRawClients(t, addrs) {
		if v := multiKeyValue(t, c, KeyFor("c")); v != "" {
			t.Errorf("master %d keeps %q after the voided grant", i, v)
		}
	}
}

// TestRedlockWallClockStepMovesNothing steps the wall clock (Config.Clock)
// back by a TTL between the SETs and the second time reading: Redlock
// measures elapsed time on the monotonic clock, so the grant and its
// validity are those of an acquire without the step.
func TestRedlockWallClockStepMovesNothing(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 5)
	clk := &multiTestClock{}
	const ttl = 3 * time.Second
	l := newRedlockT(t, addrs, Config{Clock: clk, Failpoint: func(name string) {
		if name == "after-setnx" {
			clk.offset.Add(-int64(ttl))
		}
	}})
	before := time.Now()
	lease, err := l.Acquire(ctx, "c", AcquireOptions{TTL: ttl})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	d := redlockDrift(ttl)
	if lease.ValidUntil.Before(before.Add(ttl-d)) || lease.ValidUntil.After(after.Add(ttl-d)) {
		t.Errorf("valid until %v, want start + TTL - drift within [%v, %v] whatever the wall clock did", lease.ValidUntil, before.Add(ttl-d), after.Add(ttl-d))
	}
	if lease.Validity > ttl-d {
		t.Errorf("validity %v, more than TTL - drift %v", lease.Validity, ttl-d)
	}
}

// TestRedlockUncertainCleanupIsNotErrNotAcquired stops one master (SIGSTOP)
// while another client holds 3 of 5: the attempt fails, and the stopped
// master may have stored the key (its SET timed out after being sent) and
// cannot be cleaned, so the error must not claim ErrNotAcquired.
func TestRedlockUncertainCleanupIsNotErrNotAcquired(t *testing.T) {
	ctx := context.Background()
	addrs, nodes := startRedisNodes(t, 5)
	l := newRedlockT(t, addrs, Config{Options: map[string]string{"node-timeout": "300ms"}})
	raw := multiRawClients(t, addrs)
	for _, c := range raw[:3] {
		if err := c.Set(ctx, KeyFor("u"), "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Warm the connection so the SET is written on an open socket.
	if _, err := l.Acquire(ctx, "warm", AcquireOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := nodes[4].Signal(ctx, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nodes[4].Signal(context.Background(), syscall.SIGCONT) })

	_, err := l.Acquire(ctx, "u", AcquireOptions{TTL: 2 * time.Second})
	var ue *RedlockUncertainError
	if !errors.As(err, &ue) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("err %v, want a *RedlockUncertainError that does not wrap ErrNotAcquired", err)
	}
	if len(ue.Masters) != 1 || ue.Masters[0] != addrs[4] {
		t.Errorf("uncertain masters %v, want [%s]", ue.Masters, addrs[4])
	}
	if v := multiKeyValue(t, raw[3], KeyFor("u")); v != "" {
		t.Errorf("the reachable free master keeps %q", v)
	}
}

// TestRedlockContendersNeverBothHold runs many rounds in which two clients
// try at the same instant on an intact cluster: at most one may win.
func TestRedlockContendersNeverBothHold(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 5)
	a := newRedlockT(t, addrs, Config{})
	b := newRedlockT(t, addrs, Config{})
	raw := multiRawClients(t, addrs)
	wins, splits := 0, 0
	for round := 0; round < 300; round++ {
		var wg sync.WaitGroup
		start := make(chan struct{})
		leases := make([]*Lease, 2)
		errs := make([]error, 2)
		for i, lk := range []Lock{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				leases[i], errs[i] = lk.Acquire(ctx, "x", AcquireOptions{TTL: 10 * time.Second})
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("round %d client %d: unexpected error %v", round, i, err)
			}
		}
		switch {
		case leases[0] != nil && leases[1] != nil:
			t.Fatalf("round %d: both clients hold the lock", round)
		case leases[0] != nil:
			wins++
			if err := a.Release(ctx, leases[0]); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		case leases[1] != nil:
			wins++
			if err := b.Release(ctx, leases[1]); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		default:
			splits++
		}
		for i, c := range raw {
			if v := multiKeyValue(t, c, KeyFor("x")); v != "" {
				t.Fatalf("round %d: master %d keeps %q after the round", round, i, v)
			}
		}
	}
	t.Logf("300 rounds: %d won, %d split votes", wins, splits)
}

// TestRedlockMutualExclusionUnderContention has three clients loop
// acquire (with wait) / hold / release; the holds must never overlap.
func TestRedlockMutualExclusionUnderContention(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 5)
	var holders, grants atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	for c := 0; c < 3; c++ {
		l := newRedlockT(t, addrs, Config{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 60; i++ {
				lease, err := l.Acquire(ctx, "m", AcquireOptions{TTL: 10 * time.Second, Wait: 5 * time.Second})
				if err != nil {
					errc <- err
					return
				}
				if holders.Add(1) != 1 {
					errc <- errors.New("two holders at once")
				}
				grants.Add(1)
				time.Sleep(200 * time.Microsecond)
				holders.Add(-1)
				if err := l.Release(ctx, lease); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if grants.Load() != 180 {
		t.Errorf("%d grants, want 180", grants.Load())
	}
}

func TestRedlockWaitsForTheHolder(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 3)
	a := newRedlockT(t, addrs, Config{})
	b := newRedlockT(t, addrs, Config{})
	la, err := a.Acquire(ctx, "w", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "w", AcquireOptions{TTL: 10 * time.Second}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second client without wait: %v, want ErrNotAcquired", err)
	}
	done := make(chan error, 1)
	go func() {
		lb, err := b.Acquire(ctx, "w", AcquireOptions{TTL: 10 * time.Second, Wait: 10 * time.Second})
		if err == nil && lb.Token == la.Token {
			err = errors.New("same token")
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting client after release: %v", err)
	}
}

func TestRedlockExtendNeedsAMajority(t *testing.T) {
	ctx := context.Background()
	addrs, nodes := startRedisNodes(t, 5)
	l := newRedlockT(t, addrs, Config{})
	ex := l.(Extender)
	lease, err := l.Acquire(ctx, "e", AcquireOptions{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	killNodes(t, nodes[3], nodes[4])
	const ttl = 30 * time.Second
	if err := ex.Extend(ctx, lease, ttl); err != nil {
		t.Fatalf("extend on 3 of 5: %v", err)
	}
	if d := ttl/100 + 2*time.Millisecond; lease.Validity <= 2*time.Second || lease.Validity > ttl-d {
		t.Errorf("validity after extend %v, want in (2s, %v]", lease.Validity, ttl-d)
	}
	for i, c := range multiRawClients(t, addrs[:3]) {
		pttl, err := c.PTTL(ctx, KeyFor("e")).Result()
		if err != nil || pttl <= 2*time.Second {
			t.Errorf("master %d: pttl %v err %v, want more than the original 2s", i, pttl, err)
		}
	}

	other := &Lease{Resource: "e", Token: "not-the-holder"}
	if err := ex.Extend(ctx, other, ttl); !errors.Is(err, ErrNotHeld) {
		t.Errorf("extend with a foreign token: %v, want ErrNotHeld", err)
	}

	killNodes(t, nodes[2])
	before := lease.ValidUntil
	if err := ex.Extend(ctx, lease, ttl); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend on 2 of 5: %v, want ErrNotHeld", err)
	}
	if !lease.ValidUntil.Equal(before) {
		t.Errorf("a failed extend moved ValidUntil from %v to %v", before, lease.ValidUntil)
	}
}

func TestRedlockReleaseOfALostLeaseIsErrNotHeld(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 3)
	l := newRedlockT(t, addrs, Config{})
	lease, err := l.Acquire(ctx, "g", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	raw := multiRawClients(t, addrs)
	for _, c := range raw[:2] {
		if err := c.Del(ctx, KeyFor("g")).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(ctx, lease); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with the key on 1 of 3: %v, want ErrNotHeld", err)
	}
	if v := multiKeyValue(t, raw[2], KeyFor("g")); v != "" {
		t.Errorf("release left the remaining key %q", v)
	}
}

func TestRedlockOptions(t *testing.T) {
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	for _, bad := range []map[string]string{
		{"node-timeout": "fast"},
		{"node-timeout": "-1ms"},
		{"retry-delay": "0s"},
		{"retry-jitter": "maybe"},
		{"unknown": "x"},
	} {
		if l, err := New("redlock", Config{Endpoints: Endpoints{Masters: addrs}, Options: bad}); err == nil {
			l.Close()
			t.Errorf("options %v accepted", bad)
		}
	}
	if _, err := New("redlock", Config{}); err == nil {
		t.Error("redlock without masters accepted")
	}

	l, err := New("redlock", Config{Endpoints: Endpoints{Masters: addrs}, Options: map[string]string{"retry-jitter": "false", "retry-delay": "7ms"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := l.(*redlock)
	for i := 0; i < 100; i++ {
		if d := r.delay(); d != 7*time.Millisecond {
			t.Fatalf("retry-jitter=false: delay %v, want exactly 7ms", d)
		}
	}
	if r.quorum != 2 {
		t.Errorf("quorum of 3 masters = %d, want 2", r.quorum)
	}
	j, err := New("redlock", Config{Endpoints: Endpoints{Masters: addrs}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rj := j.(*redlock)
	distinct := map[time.Duration]bool{}
	for i := 0; i < 100; i++ {
		d := rj.delay()
		if d < RedlockRetryDelay || d > 2*RedlockRetryDelay {
			t.Fatalf("jittered delay %v outside [%v, %v]", d, RedlockRetryDelay, 2*RedlockRetryDelay)
		}
		distinct[d] = true
	}
	if len(distinct) < 2 {
		t.Error("jittered delays are all equal")
	}
	for ttl, want := range map[time.Duration]time.Duration{
		10 * time.Second:       50 * time.Millisecond,
		200 * time.Millisecond: 20 * time.Millisecond,
		10 * time.Millisecond:  5 * time.Millisecond,
	} {
		if got := rj.timeoutFor(ttl); got != want {
			t.Errorf("default node timeout for TTL %v = %v, want %v", ttl, got, want)
		}
	}
}
