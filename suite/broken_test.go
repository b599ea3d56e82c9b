package suite_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// The broken locks of the mutation tests: each is the single-master lock
// (SET NX PX, compare-and-delete release, compare-and-pexpire extend) with
// exactly one slip of the kind real lock libraries have shipped. They are
// registered here, in test code only: never in the product.

// slip names the one thing a broken lock gets wrong.
type slip int

const (
	slipNone               slip = iota
	slipIgnoreNX                // treats a refused SET NX as a grant (the reply is not checked)
	slipNoTTL                   // SET NX without PX: a crashed holder's key never expires
	slipDelRelease              // releases with a plain DEL, whoever holds the key
	slipBlindExtend             // extends with a plain PEXPIRE, whoever holds the key
	slipValidityFromEnd         // measures the validity from the end of the acquire, not its start
	slipExtendFromEnd           // measures an extend's validity from its reply, not its start
	slipTokenPerClient          // the token is the client's name: every grant of a client looks alike
	slipConstFence              // every grant carries fencing token 1: tokens never increase
	slipUncountedReentry        // reentrant, but re-entries are not counted: the first release frees the lock
	slipGetThenDel              // releases by GET, compare, then a plain DEL: the key may change hands in between
	slipClientFence             // fencing tokens from a counter in the client: they grow per client, not per key
	slipMemoryFence             // fencing tokens from a Redis counter without persistence: they restart with the node
	slipTimeFence               // no slip: fencing tokens are the grant's wall-clock time in ns (they survive restarts)
	slipSwallowExtendError      // an extend whose request failed (timeout, lost connection) reports success
	slipWallClock               // measures validity on the wall clock (Config.Now), not the monotonic one
	slipLocalReentry            // reentrant: grants a re-entry from its own count, without asking the server
	slipNameIdentity            // the holder's identity is the client's name (hostname:pid, which a restarted container keeps): a key holding it is taken as its own (a re-entry)
	// The hunt's own mutation locks (hunt.HuntOnly): slips the property
	// suite does not catch, kept out of the generator's tuning.
	slipExtendMicros // an extend passes its TTL in microseconds where PEXPIRE wants milliseconds: an extended key lives 1000 TTLs
)

// brokenLocks: name, slip, capabilities claimed.
var brokenLocks = []struct {
	name string
	slip slip
	caps []string
	ack  bool // waits for one replica to acknowledge the key (WAIT 1) before granting
}{
	// The same lock, correct, plus a replica acknowledgement: the control
	// of failover/async-replica, whose broken lock is broken-correct (it
	// does not wait for the replica: C5).
	{"acked", slipNone, []string{lockimpl.CapExtend, lockimpl.CapReplicaAck}, true},
	{"broken-correct", slipNone, []string{lockimpl.CapExtend}, false}, // the same code with no slip: the control
	{"broken-ignore-nx", slipIgnoreNX, []string{lockimpl.CapExtend}, false},
	{"broken-no-ttl", slipNoTTL, []string{lockimpl.CapExtend}, false},
	{"broken-del-release", slipDelRelease, []string{lockimpl.CapExtend}, false},
	{"broken-blind-extend", slipBlindExtend, []string{lockimpl.CapExtend}, false},
	{"broken-validity-from-end", slipValidityFromEnd, []string{lockimpl.CapExtend}, false},
	{"broken-extend-from-end", slipExtendFromEnd, []string{lockimpl.CapExtend}, false},
	{"broken-token-per-client", slipTokenPerClient, []string{lockimpl.CapExtend}, false},
	{"broken-const-fence", slipConstFence, []string{lockimpl.CapExtend, lockimpl.CapFencing}, false},
	{"broken-uncounted-reentry", slipUncountedReentry, []string{lockimpl.CapExtend, lockimpl.CapReentrant}, false},
	{"broken-get-then-del", slipGetThenDel, []string{lockimpl.CapExtend}, false},
	{"broken-client-fence", slipClientFence, []string{lockimpl.CapExtend, lockimpl.CapFencing}, false},
	{"broken-memory-fence", slipMemoryFence, []string{lockimpl.CapExtend, lockimpl.CapFencing}, false},
	{"broken-swallow-extend-error", slipSwallowExtendError, []string{lockimpl.CapExtend}, false},
	{"broken-wall-clock", slipWallClock, []string{lockimpl.CapExtend}, false},
	{"broken-name-identity", slipNameIdentity, []string{lockimpl.CapExtend}, false},
	{"broken-extend-micros", slipExtendMicros, []string{lockimpl.CapExtend}, false},
	{"time-fence", slipTimeFence, []string{lockimpl.CapExtend, lockimpl.CapFencing}, false}, // the control of fencing/node-restart
}

func init() {
	// redisson whose watchdog never starts: the options that turn it on
	// are accepted and dropped, so the lease is the fixed TTL.
	lockimpl.Register(lockimpl.Info{Name: "broken-no-renewal", Source: "suite mutation test", Needs: "single",
		Caps: []string{lockimpl.CapReentrant, lockimpl.CapWatchdog}, Options: []string{"watchdog", "lease"},
		Promises: "redisson with its watchdog dropped (test code only)"},
		func(cfg lockimpl.Config) (lockimpl.Lock, error) {
			cfg.Options = nil
			return lockimpl.New("redisson", cfg)
		})
	for _, b := range brokenLocks {
		s, ack := b.slip, b.ack
		lockimpl.Register(lockimpl.Info{Name: b.name, Source: "suite mutation test", Needs: "single", Caps: b.caps,
			Failpoints: []string{"after-setnx", "release-after-get", "after-extend"},
			Promises:   "single-master lock with one deliberate slip (test code only)"},
			func(cfg lockimpl.Config) (lockimpl.Lock, error) {
				rdb, err := lockimpl.NewPrimaryClient(cfg.Endpoints)
				if err != nil {
					return nil, err
				}
				return &broken{cfg: cfg, rdb: rdb, slip: s, ack: ack, held: map[string]*lockimpl.Lease{}}, nil
			})
	}
}

var (
	unlock = redis.NewScript(lockimpl.UnlockScript)
	extend = redis.NewScript(lockimpl.ExtendScript)
)

type broken struct {
	cfg  lockimpl.Config
	rdb  redis.UniversalClient
	cc   *redis.ClusterClient // the same client, when the lock runs on a cluster (cluster_twins_test.go)
	slip slip
	ack  bool

	mu    sync.Mutex
	held  map[string]*lockimpl.Lease // slipUncountedReentry: this client's grant per resource
	fence int64                      // slipClientFence: this client's counter
}

func (b *broken) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if b.slip == slipUncountedReentry {
		b.mu.Lock()
		l := b.held[resource]
		b.mu.Unlock()
		if l != nil {
			again := *l // re-entry granted, but nothing counts it
			return &again, nil
		}
	}
	token := lockimpl.RandomToken()
	if b.slip == slipTokenPerClient || b.slip == slipNameIdentity {
		token = b.cfg.ClientID
	}
	ttl := opts.TTL
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		start := b.now()
		exp := ttl
		if b.slip == slipNoTTL {
			exp = 0
		}
		ok, err := b.rdb.SetNX(ctx, lockimpl.KeyFor(resource), token, exp).Result()
		if err != nil {
			return nil, b.refused(ctx, err)
		}
		if !ok && b.slip == slipNameIdentity {
			// The key may be "ours": renew it and take it (re-entry).
			n, err := extend.Run(ctx, b.rdb, []string{lockimpl.KeyFor(resource)}, token, ttl.Milliseconds()).Int()
			if err != nil {
				return nil, err
			}
			ok = n == 1
		}
		if !ok && b.slip != slipIgnoreNX {
			return nil, lockimpl.ErrNotAcquired
		}
		b.cfg.Hit("after-setnx")
		if b.ack {
			// The grant counts only once a replica has the key.
			n, err := b.waitReplica(ctx, lockimpl.KeyFor(resource))
			if err != nil {
				return nil, err
			}
			if n < 1 {
				if _, err := unlock.Run(ctx, b.rdb, []string{lockimpl.KeyFor(resource)}, token).Result(); err != nil {
					return nil, err
				}
				return nil, lockimpl.ErrNotAcquired
			}
		}
		if b.slip == slipValidityFromEnd {
			start = b.now()
		}
		l := &lockimpl.Lease{Resource: resource, Token: token, Validity: ttl, ValidUntil: start.Add(ttl)}
		if b.slip == slipConstFence {
			l.Fence = 1
		}
		if b.slip == slipMemoryFence {
			f, err := b.rdb.Incr(ctx, "fence:"+resource).Result()
			if err != nil {
				return nil, err
			}
			l.Fence = f
		}
		if b.slip == slipTimeFence {
			l.Fence = time.Now().UnixNano()
		}
		if b.slip == slipClientFence {
			b.mu.Lock()
			b.fence++
			l.Fence = b.fence
			b.mu.Unlock()
		}
		if b.slip == slipUncountedReentry {
			b.mu.Lock()
			b.held[resource] = l
			b.mu.Unlock()
		}
		return l, nil
	})
}

func (b *broken) Release(ctx context.Context, l *lockimpl.Lease) error {
	if b.slip == slipUncountedReentry {
		b.mu.Lock()
		delete(b.held, l.Resource)
		b.mu.Unlock()
	}
	if b.slip == slipDelRelease {
		n, err := b.rdb.Del(ctx, lockimpl.KeyFor(l.Resource)).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			return lockimpl.ErrNotHeld
		}
		return nil
	}
	// GET and compare first (a release that reports "not yours" without
	// touching the key), then delete: atomically (compare-and-delete
	// again) or, with the slip, by a plain DEL.
	v, err := b.rdb.Get(ctx, lockimpl.KeyFor(l.Resource)).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != l.Token) {
		return lockimpl.ErrNotHeld
	}
	if err != nil {
		return err
	}
	b.cfg.Hit("release-after-get")
	var n int
	if b.slip == slipGetThenDel {
		var d int64
		d, err = b.rdb.Del(ctx, lockimpl.KeyFor(l.Resource)).Result()
		n = int(d)
	} else {
		n, err = unlock.Run(ctx, b.rdb, []string{lockimpl.KeyFor(l.Resource)}, l.Token).Int()
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

func (b *broken) Extend(ctx context.Context, l *lockimpl.Lease, ttl time.Duration) error {
	start := b.now()
	var n int
	var err error
	if b.slip == slipBlindExtend {
		var ok bool
		ok, err = b.rdb.PExpire(ctx, lockimpl.KeyFor(l.Resource), ttl).Result()
		if ok {
			n = 1
		}
	} else {
		ms := ttl.Milliseconds()
		if b.slip == slipExtendMicros {
			ms = ttl.Microseconds()
		}
		n, err = extend.Run(ctx, b.rdb, []string{lockimpl.KeyFor(l.Resource)}, l.Token, ms).Int()
	}
	if err != nil {
		if b.slip == slipSwallowExtendError {
			return nil // "probably fine": the lease keeps its old validity
		}
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	b.cfg.Hit("after-extend")
	if b.slip == slipExtendFromEnd {
		start = b.now()
	}
	l.Validity, l.ValidUntil = ttl, start.Add(ttl)
	return nil
}

func (b *broken) Close() error { return b.rdb.Close() }

// now is the clock validity is measured on: the monotonic clock, or with
// slipWallClock the client's wall clock (Config.Now), which clock steps move.
func (b *broken) now() time.Time {
	if b.slip == slipWallClock {
		return b.cfg.Now()
	}
	return time.Now()
}

// quorumLock is a small Redlock (SET NX PX on every master, a majority
// and a positive validity grant) for the independent-masters properties.
// Its slip: an extend that succeeds when any one master still had the key
// (broken-extend-any-master), or only when every master had it
// (broken-extend-every-master).
type quorumLock struct {
	cfg        lockimpl.Config
	nodes      []*redis.Client
	extendNeed func(masters int) int // how many masters an extend needs
	timeFence  bool                  // quorum-time-fence: grants carry the grant's time in ns as fencing token
}

func init() {
	for _, b := range []struct {
		name, promises string
		need           func(masters int) int
		timeFence      bool
	}{
		{"broken-extend-any-master", "Redlock whose extend needs one master, not a majority (test code only)", func(int) int { return 1 }, false},
		{"broken-extend-every-master", "Redlock whose extend needs every master, not a majority (test code only)", func(n int) int { return n }, false},
		// No slip: the control of clock/masters-jump, whose broken lock is
		// redlock (safety from the masters' clocks alone).
		{"quorum-time-fence", "Redlock whose grants carry their time in ns as fencing token (test code only)", majority, true},
	} {
		need, timeFence := b.need, b.timeFence
		caps := []string{lockimpl.CapExtend}
		if timeFence {
			caps = append(caps, lockimpl.CapFencing)
		}
		lockimpl.Register(lockimpl.Info{Name: b.name, Source: "suite mutation test", Needs: "masters",
			Caps: caps, Promises: b.promises},
			func(cfg lockimpl.Config) (lockimpl.Lock, error) {
				q := &quorumLock{cfg: cfg, extendNeed: need, timeFence: timeFence}
				for _, a := range cfg.Endpoints.Masters {
					q.nodes = append(q.nodes, lockimpl.NewNodeClient(a, 100*time.Millisecond))
				}
				return q, nil
			})
	}
}

// majority is Redlock's quorum of n masters.
func majority(n int) int { return n/2 + 1 }

func (q *quorumLock) quorum() int { return majority(len(q.nodes)) }

// each runs f on every master at once and counts the successes.
func (q *quorumLock) each(ctx context.Context, f func(context.Context, *redis.Client) (bool, error)) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	n := 0
	for _, c := range q.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if ok, err := f(cctx, c); ok && err == nil {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return n
}

func (q *quorumLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	key := lockimpl.KeyFor(resource)
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		token := lockimpl.RandomToken()
		start := time.Now()
		n := q.each(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
			return c.SetNX(ctx, key, token, opts.TTL).Result()
		})
		drift := opts.TTL/100 + 2*time.Millisecond
		validity := opts.TTL - time.Since(start) - drift
		if n >= q.quorum() && validity > 0 {
			l := &lockimpl.Lease{Resource: resource, Token: token, Validity: validity, ValidUntil: start.Add(opts.TTL - drift)}
			if q.timeFence {
				l.Fence = time.Now().UnixNano()
			}
			return l, nil
		}
		q.each(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
			return true, unlock.Run(ctx, c, []string{key}, token).Err()
		})
		return nil, lockimpl.ErrNotAcquired
	})
}

func (q *quorumLock) Release(ctx context.Context, l *lockimpl.Lease) error {
	n := q.each(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		d, err := unlock.Run(ctx, c, []string{lockimpl.KeyFor(l.Resource)}, l.Token).Int()
		return d == 1, err
	})
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

func (q *quorumLock) Extend(ctx context.Context, l *lockimpl.Lease, ttl time.Duration) error {
	start := time.Now()
	n := q.each(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		d, err := extend.Run(ctx, c, []string{lockimpl.KeyFor(l.Resource)}, l.Token, ttl.Milliseconds()).Int()
		return d == 1, err
	})
	need := q.extendNeed(len(q.nodes))
	drift := ttl/100 + 2*time.Millisecond
	validity := ttl - time.Since(start) - drift
	if n < need || validity <= 0 {
		return lockimpl.ErrNotHeld
	}
	l.Validity, l.ValidUntil = validity, start.Add(ttl-drift)
	return nil
}

func (q *quorumLock) Close() error {
	for _, c := range q.nodes {
		c.Close()
	}
	return nil
}
