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
	slipNone             slip = iota
	slipIgnoreNX              // treats a refused SET NX as a grant (the reply is not checked)
	slipNoTTL                 // SET NX without PX: a crashed holder's key never expires
	slipDelRelease            // releases with a plain DEL, whoever holds the key
	slipBlindExtend           // extends with a plain PEXPIRE, whoever holds the key
	slipValidityFromEnd       // measures the validity from the end of the acquire, not its start
	slipExtendFromEnd         // measures an extend's validity from its reply, not its start
	slipTokenPerClient        // the token is the client's name: every grant of a client looks alike
	slipConstFence            // every grant carries fencing token 1: tokens never increase
	slipUncountedReentry      // reentrant, but re-entries are not counted: the first release frees the lock
	slipGetThenDel            // releases by GET, compare, then a plain DEL: the key may change hands in between
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
}

func init() {
	for _, b := range brokenLocks {
		s, ack := b.slip, b.ack
		lockimpl.Register(lockimpl.Info{Name: b.name, Source: "suite mutation test", Needs: "single", Caps: b.caps,
			Failpoints: []string{"after-setnx", "release-after-get"},
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
	slip slip
	ack  bool

	mu   sync.Mutex
	held map[string]*lockimpl.Lease // slipUncountedReentry: this client's grant per resource
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
	if b.slip == slipTokenPerClient {
		token = b.cfg.ClientID
	}
	ttl := opts.TTL
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		start := b.cfg.Now()
		exp := ttl
		if b.slip == slipNoTTL {
			exp = 0
		}
		ok, err := b.rdb.SetNX(ctx, lockimpl.KeyFor(resource), token, exp).Result()
		if err != nil {
			return nil, err
		}
		if !ok && b.slip != slipIgnoreNX {
			return nil, lockimpl.ErrNotAcquired
		}
		b.cfg.Hit("after-setnx")
		if b.ack {
			// The grant counts only once a replica has the key.
			n, err := b.rdb.Do(ctx, "WAIT", 1, 300).Int()
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
			start = b.cfg.Now()
		}
		l := &lockimpl.Lease{Resource: resource, Token: token, Validity: ttl, ValidUntil: start.Add(ttl)}
		if b.slip == slipConstFence {
			l.Fence = 1
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
	start := b.cfg.Now()
	var n int
	var err error
	if b.slip == slipBlindExtend {
		var ok bool
		ok, err = b.rdb.PExpire(ctx, lockimpl.KeyFor(l.Resource), ttl).Result()
		if ok {
			n = 1
		}
	} else {
		n, err = extend.Run(ctx, b.rdb, []string{lockimpl.KeyFor(l.Resource)}, l.Token, ttl.Milliseconds()).Int()
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	if b.slip == slipExtendFromEnd {
		start = b.cfg.Now()
	}
	l.Validity, l.ValidUntil = ttl, start.Add(ttl)
	return nil
}

func (b *broken) Close() error { return b.rdb.Close() }
