package lockimpl

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redisson's RLock scripts. The lock and renew scripts are those of seed 003
// §35.3.3 and §35.3.2; the unlock script is Redisson's
// (RedissonLock.unlockInnerAsync), which publishes on the lock's channel when
// the hold count reaches zero.
const (
	// RedissonLockScript: KEYS[1] lock key; ARGV[1] lease (ms), ARGV[2]
	// holder identity. nil: acquired (or re-entered); otherwise the key's
	// remaining TTL in milliseconds.
	RedissonLockScript = `if (redis.call('exists', KEYS[1]) == 0) then
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])`

	// RedissonUnlockScript: KEYS[1] lock key, KEYS[2] channel; ARGV[1] unlock
	// message, ARGV[2] lease (ms), ARGV[3] holder identity. nil: not held by
	// this holder; 0: count decremented, still held (TTL reset to the lease);
	// 1: count reached zero, key deleted, waiters notified.
	RedissonUnlockScript = `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
else
    redis.call('del', KEYS[1])
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
return nil`

	// RedissonRenewScript: the watchdog's renewal. KEYS[1] lock key; ARGV[1]
	// lease (ms), ARGV[2] holder identity. 1: renewed; 0: no longer held.
	RedissonRenewScript = `if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0`

	// redissonUnlockMessage is LockPubSub.UNLOCK_MESSAGE.
	redissonUnlockMessage = 0
)

var (
	redissonLockScript   = redis.NewScript(RedissonLockScript)
	redissonUnlockScript = redis.NewScript(RedissonUnlockScript)
	redissonRenewScript  = redis.NewScript(RedissonRenewScript)
)

// ErrReplicasNotSynced is returned (wrapped) when option wait-replicas is set
// and fewer replicas acknowledged the lock write. The grant has been undone.
var ErrReplicasNotSynced = errors.New("replicas did not acknowledge the lock")

func init() {
	Register(Info{
		Name:     "redisson",
		Source:   "003 §35.3.2-35.3.3 (Redisson RLock: hash value, reentrancy, watchdog); Redisson RedissonLock/RedissonBaseLock",
		Promises: "reentrant mutual exclusion on one master; a watchdog keeps a live holder's lock (no TTL to tune) and a crashed holder's lock frees within one lease; waiters are woken by pub/sub; wait-replicas refuses a grant that fewer than N replicas acknowledged",
		Needs:    "single",
		Caps:     []string{CapReentrant, CapWatchdog},
		Options:  []string{"lease", "watchdog", "wait-replicas", "wait-timeout"},
		// Its lock script answers nil for a grant, so a trigger on "the
		// first write that succeeded" cannot see it: it says where it is.
		Failpoints: []string{"after-setnx"},
	}, newRedisson)
}

// redisson is a port of Redisson's RLock (seed 003 §35.3.2-35.3.3). The lock
// key is a hash whose one field is the holder identity
// "<ClientID>:<random id of this Lock object>" and whose value is the hold
// count. Acquire on the same Lock object while it holds re-enters (count+1);
// Release decrements and deletes at zero, publishing on
// "redisson_lock__channel:{<key>}" so that waiters, subscribed before they
// retry, wake at once instead of polling. Without an explicit TTL (or with
// option watchdog=true) the lease is option lease (30s) and a watchdog
// renews it every lease/3 while it is held; with an explicit TTL it is
// Redisson's tryLock(wait, leaseTime): no renewal. Option wait-replicas=N
// runs WAIT N after acquiring and undoes the grant when fewer replicas
// acknowledged (Redisson's synced-slaves check).
//
// It is the subject of the watchdog claims: the lock is only as safe as the
// renewals (a paused holder stops renewing, and its lock passes to another
// client while it still believes it holds), and a failover loses a grant
// that had not reached the replica unless wait-replicas is used.
//
// Not ported: Redisson's unlock latch key (it makes a retried unlock
// idempotent; this client never retries) and fair/read-write variants.
type redisson struct {
	cfg          Config
	rdb          redis.UniversalClient
	id           string        // hash field: holder identity
	lease        time.Duration // watchdog lease (lockWatchdogTimeout)
	watchdog     bool          // force the watchdog even with an explicit TTL
	waitReplicas int
	waitTimeout  time.Duration

	mu       sync.Mutex
	holdings map[string]*redissonHolding // by resource
	closed   chan struct{}
	isClosed bool
}

// redissonHolding is this Lock object's grant on one resource: the leases
// handed out for it (one per successful Acquire) and its watchdog.
type redissonHolding struct {
	resource  string
	leaseTime time.Duration // internalLockLeaseTime: the last lease used
	leases    []*Lease
	watched   int           // live leases acquired in watchdog mode
	stop      chan struct{} // closed to stop the watchdog; nil when none runs
	done      chan struct{} // closed when the watchdog goroutine exits
}

// redissonState is a lease's private state.
type redissonState struct {
	watchdog bool
	released bool
}

func newRedisson(cfg Config) (Lock, error) {
	lease, err := time.ParseDuration(cfg.Option("lease", "30s"))
	if err != nil || lease <= 0 {
		return nil, fmt.Errorf("redisson: option lease=%q: want a positive duration such as 30s", cfg.Option("lease", ""))
	}
	watchdog, err := strconv.ParseBool(cfg.Option("watchdog", "false"))
	if err != nil {
		return nil, fmt.Errorf("redisson: option watchdog=%q: want true or false", cfg.Option("watchdog", ""))
	}
	waitReplicas, err := strconv.Atoi(cfg.Option("wait-replicas", "0"))
	if err != nil || waitReplicas < 0 {
		return nil, fmt.Errorf("redisson: option wait-replicas=%q: want a count >= 0", cfg.Option("wait-replicas", ""))
	}
	waitTimeout, err := time.ParseDuration(cfg.Option("wait-timeout", "1s"))
	if err != nil || waitTimeout <= 0 {
		return nil, fmt.Errorf("redisson: option wait-timeout=%q: want a positive duration such as 1s", cfg.Option("wait-timeout", ""))
	}
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	if _, ok := rdb.(*redis.Client); !ok && waitReplicas > 0 {
		rdb.Close()
		return nil, fmt.Errorf("redisson: option wait-replicas needs a single-connection client, got %T", rdb)
	}
	client := cfg.ClientID
	if client == "" {
		client = "client"
	}
	return &redisson{
		cfg:          cfg,
		rdb:          rdb,
		id:           client + ":" + newUUID(),
		lease:        lease,
		watchdog:     watchdog,
		waitReplicas: waitReplicas,
		waitTimeout:  waitTimeout,
		holdings:     map[string]*redissonHolding{},
		closed:       make(chan struct{}),
	}, nil
}

// newUUID returns a random (version 4) UUID, as Redisson's client id.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// RedissonChannelFor is the pub/sub channel on which the release of the
// lock key is announced: Redisson's prefixName("redisson_lock__channel", key),
// which adds a hash tag unless the key has one.
func RedissonChannelFor(key string) string {
	if strings.Contains(key, "{") {
		return "redisson_lock__channel:" + key
	}
	return "redisson_lock__channel:{" + key + "}"
}

// Acquire is Redisson's tryLock(wait, lease): one attempt, and if the lock is
// held and opts.Wait > 0, subscribe to the unlock channel and retry whenever
// an unlock message arrives or the TTL the lock script returned runs out,
// until opts.Wait is used up.
func (r *redisson) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	if r.isClosing() {
		return nil, fmt.Errorf("%w: redisson: lock is closed", ErrNotAcquired)
	}
	watchdog := opts.TTL <= 0 || r.watchdog
	leaseTime := opts.TTL
	if watchdog {
		leaseTime = r.lease
	}
	deadline := time.Now().Add(opts.Wait)

	l, ttl, err := r.tryAcquire(ctx, resource, leaseTime, watchdog)
	if err != nil || l != nil {
		return l, err
	}
	if opts.Wait <= 0 {
		return nil, ErrNotAcquired
	}

	// Subscribe, and wait for the subscription to be in place, before
	// retrying: an unlock between the retry and the wait is then not missed.
	key := KeyFor(resource)
	ps := r.rdb.Subscribe(ctx, RedissonChannelFor(key))
	defer ps.Close()
	subCtx, cancel := context.WithDeadline(ctx, deadline)
	_, err = ps.Receive(subCtx)
	cancel()
	if err != nil {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: wait ran out while subscribing", ErrNotAcquired)
		}
		// Nothing was written: the outcome is certain.
		return nil, fmt.Errorf("%w: redisson: subscribe: %v", ErrNotAcquired, err)
	}
	msgs := ps.Channel()

	for {
		l, ttl, err = r.tryAcquire(ctx, resource, leaseTime, watchdog)
		if err != nil || l != nil {
			return l, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, ErrNotAcquired
		}
		wait := left
		if ttl >= 0 && ttl < wait {
			wait = ttl
		}
		t := time.NewTimer(wait)
		select {
		case <-msgs:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %v", ErrNotAcquired, ctx.Err())
		case <-r.closed:
			t.Stop()
			return nil, fmt.Errorf("%w: redisson: lock closed while waiting", ErrNotAcquired)
		}
		t.Stop()
	}
}

// tryAcquire runs the lock script once. It returns a lease, or the key's
// remaining TTL (negative when the key has none) when another holder has it.
func (r *redisson) tryAcquire(ctx context.Context, resource string, leaseTime time.Duration, watchdog bool) (*Lease, time.Duration, error) {
	key := KeyFor(resource)
	// WAIT counts the replicas that have every write made on its own
	// connection, so with wait-replicas the script and WAIT share one
	// connection (Redisson sends them in one batch).
	var sc redis.Scripter = r.rdb
	var conn *redis.Conn
	if r.waitReplicas > 0 {
		conn = r.rdb.(*redis.Client).Conn()
		defer conn.Close()
		sc = conn
	}
	start := time.Now()
	ttl, err := redissonLockScript.Run(ctx, sc, []string{key}, leaseTime.Milliseconds(), r.id).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, err
	}
	if err == nil {
		return nil, time.Duration(ttl) * time.Millisecond, nil
	}
	r.cfg.Hit("after-setnx") // the key is set; the grant is still to be told
	l := &Lease{
		Resource:   resource,
		Token:      r.id,
		Validity:   leaseTime,
		ValidUntil: start.Add(leaseTime),
		State:      &redissonState{watchdog: watchdog},
	}
	if r.waitReplicas > 0 {
		n, werr := conn.Wait(ctx, r.waitReplicas, r.waitTimeout).Result()
		if werr != nil || int(n) < r.waitReplicas {
			// Redisson (handleNoSync) undoes the grant and fails the call.
			_, uerr := redissonUnlockScript.Run(ctx, conn, []string{key, RedissonChannelFor(key)},
				redissonUnlockMessage, leaseTime.Milliseconds(), r.id).Result()
			if werr != nil {
				return nil, 0, fmt.Errorf("redisson: WAIT %d: %w (undo: %v)", r.waitReplicas, werr, uerr)
			}
			if uerr != nil && !errors.Is(uerr, redis.Nil) {
				return nil, 0, fmt.Errorf("redisson: only %d of %d replicas acknowledged; undoing the grant failed: %w", n, r.waitReplicas, uerr)
			}
			return nil, 0, fmt.Errorf("%w: %w: %d of %d within %v", ErrNotAcquired, ErrReplicasNotSynced, n, r.waitReplicas, r.waitTimeout)
		}
	}
	r.addLease(l, leaseTime, watchdog, start)
	return l, 0, nil
}

// addLease records a grant. A re-entry resets the key's TTL to leaseTime, so
// the holding's other leases are told their new validity.
func (r *redisson) addLease(l *Lease, leaseTime time.Duration, watchdog bool, start time.Time) {
	r.mu.Lock()
	h := r.holdings[l.Resource]
	if h == nil {
		h = &redissonHolding{resource: l.Resource}
		r.holdings[l.Resource] = h
	}
	others := h.touch(start, leaseTime)
	h.leaseTime = leaseTime
	h.leases = append(h.leases, l)
	if watchdog {
		h.watched++
		if h.stop == nil && !r.isClosed {
			h.stop, h.done = make(chan struct{}), make(chan struct{})
			go r.watch(h, h.stop, h.done)
		}
	}
	r.mu.Unlock()
	r.notify(others)
}

// touch sets every live lease's validity to ttl from start and returns them.
// The caller holds r.mu.
func (h *redissonHolding) touch(start time.Time, ttl time.Duration) []*Lease {
	out := make([]*Lease, len(h.leases))
	for i, l := range h.leases {
		l.Validity, l.ValidUntil = ttl, start.Add(ttl)
		out[i] = l
	}
	return out
}

func (r *redisson) notify(ls []*Lease) {
	if r.cfg.OnRenew == nil {
		return
	}
	for _, l := range ls {
		r.cfg.OnRenew(l)
	}
}

// watch is the watchdog: every lease/3 it runs the renew script. It stops
// when told to, or when the script finds the lock no longer held; an error
// is logged by Redisson and the next renewal is attempted anyway, and so it
// is here.
func (r *redisson) watch(h *redissonHolding, stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-done:
		}
	}()
	key := KeyFor(h.resource)
	for {
		t := time.NewTimer(r.lease / 3)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		n, err := redissonRenewScript.Run(ctx, r.rdb, []string{key}, r.lease.Milliseconds(), r.id).Int()
		if err != nil {
			continue
		}
		r.mu.Lock()
		select {
		case <-stop:
			r.mu.Unlock()
			return
		default:
		}
		if n == 0 {
			// Lost (expired and perhaps taken by another client): stop.
			if h.stop == stop {
				h.stop, h.done = nil, nil
			}
			r.mu.Unlock()
			return
		}
		renewed := h.touch(start, r.lease)
		r.mu.Unlock()
		r.notify(renewed)
	}
}

// Release is Redisson's unlock: decrement the hold count, resetting the TTL
// to the lease while it stays above zero, and delete the key and publish
// the unlock message at zero. A caller that does not hold the lock gets
// ErrNotHeld and nothing changes.
func (r *redisson) Release(ctx context.Context, l *Lease) error {
	st, _ := l.State.(*redissonState)
	r.mu.Lock()
	if st != nil && st.released {
		r.mu.Unlock()
		return ErrNotHeld
	}
	leaseTime := r.lease
	if h := r.holdings[l.Resource]; h != nil {
		leaseTime = h.leaseTime
	}
	r.mu.Unlock()

	key := KeyFor(l.Resource)
	start := time.Now()
	n, err := redissonUnlockScript.Run(ctx, r.rdb, []string{key, RedissonChannelFor(key)},
		redissonUnlockMessage, leaseTime.Milliseconds(), l.Token).Int()
	notHeld := errors.Is(err, redis.Nil)
	if err != nil && !notHeld {
		// Unknown outcome; Redisson forgets the hold either way.
		r.forget(l, st, false, start, 0)
		return err
	}
	if notHeld {
		r.forget(l, st, false, start, 0)
		return ErrNotHeld
	}
	r.forget(l, st, n == 1, start, leaseTime)
	return nil
}

// forget drops a released lease from its holding and stops the watchdog when
// the key is gone or no watchdog-mode lease is left. When the hold count
// stayed above zero the unlock script reset the TTL to ttl, and the other
// leases are told.
func (r *redisson) forget(l *Lease, st *redissonState, deleted bool, start time.Time, ttl time.Duration) {
	r.mu.Lock()
	h := r.holdings[l.Resource]
	if st != nil {
		st.released = true
	}
	if h == nil || l.Token != r.id {
		r.mu.Unlock()
		return
	}
	for i, x := range h.leases {
		if x == l {
			h.leases = append(h.leases[:i], h.leases[i+1:]...)
			if st != nil && st.watchdog {
				h.watched--
			}
			break
		}
	}
	var others []*Lease
	if !deleted && ttl > 0 {
		others = h.touch(start, ttl)
	}
	var stop, done chan struct{}
	if deleted || h.watched <= 0 {
		stop, done = h.stop, h.done
		h.stop, h.done = nil, nil
	}
	if len(h.leases) == 0 {
		delete(r.holdings, l.Resource)
	}
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	r.notify(others)
}

// Close stops every watchdog without releasing anything (the locks expire
// within one lease, as after a crash of the holder) and closes the client.
func (r *redisson) Close() error {
	r.mu.Lock()
	if r.isClosed {
		r.mu.Unlock()
		return nil
	}
	r.isClosed = true
	close(r.closed)
	var dones []chan struct{}
	for _, h := range r.holdings {
		if h.stop != nil {
			close(h.stop)
			dones = append(dones, h.done)
			h.stop, h.done = nil, nil
		}
	}
	r.mu.Unlock()
	for _, d := range dones {
		<-d
	}
	return r.rdb.Close()
}

func (r *redisson) isClosing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isClosed
}
