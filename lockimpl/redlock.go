package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name: "redlock",
		Source: "Redis docs, \"The Redlock algorithm\" (seeds 001, 002) and the Redlock listing in 003 §35.4.2: " +
			"SET NX PX with one random value on N independent masters, quorum N/2+1, " +
			"validity = TTL - elapsed - (1% of TTL + 2 ms), release everywhere on failure, random retry delay",
		Promises: "mutual exclusion while a majority of the masters is up and clocks drift little; " +
			"tolerates the loss of fewer than half of the masters (2 of 5); a crashed holder's lock frees within one TTL",
		Needs:      "masters",
		Caps:       []string{CapExtend},
		Failpoints: []string{"after-setnx", "after-extend"},
		Options:    []string{"node-timeout", "retry-delay", "retry-jitter"},
	}, newRedlock)
}

// Redlock defaults.
const (
	// RedlockMaxNodeTimeout caps the default per-node timeout. The Redis docs
	// (seeds 001/002, step 2) suggest 5-50 ms for a 10 s TTL.
	RedlockMaxNodeTimeout = 50 * time.Millisecond
	// RedlockMinNodeTimeout is the floor of the default per-node timeout, so
	// that a very short TTL still leaves time for a loopback round trip.
	RedlockMinNodeTimeout = 5 * time.Millisecond
	// RedlockRetryDelay is the default base delay between attempts.
	RedlockRetryDelay = 10 * time.Millisecond
)

// redlock is the Redlock algorithm of the Redis documentation ("The Redlock
// algorithm", seeds 001 and 002; the Python listing in seed 003 §35.4.2):
//
//  1. read the time T1 (Go's monotonic clock: a wall clock step does not
//     change the elapsed time);
//  2. send SET key token NX PX ttl to all N masters at once, the same random
//     token on each, every request bounded by a per-node timeout far below
//     the TTL;
//  3. read the time T2; the lock is acquired only if at least N/2+1 masters
//     said OK and the validity TTL - (T2-T1) - drift is positive, where drift
//     is 1% of the TTL plus 2 ms (the listing's CLOCK_DRIFT_FACTOR);
//  4. otherwise release (compare-and-delete, UnlockScript) on every master
//     and retry after a delay until AcquireOptions.Wait runs out.
//
// Release is compare-and-delete on every master; Extend is
// compare-and-pexpire on every master and counts only with a majority
// (the docs' "extending the lock").
//
// Options:
//
//   - node-timeout: the per-node request timeout (a Go duration such as
//     "20ms"). Default: TTL/10 (seed 003) bounded to [5ms, 50ms] (seeds
//     001/002: 5-50 ms for a 10 s TTL). Release uses the timeout of the
//     lease's TTL.
//   - retry-delay: the base delay between attempts (default 10ms).
//   - retry-jitter: "true" (default) waits retry-delay plus a uniformly
//     random extra of up to retry-delay, as the docs ask so that contending
//     clients fall out of step; "false" waits exactly retry-delay, so clients
//     that start together stay in lock-step (split votes, claim C15).
//
// Failpoint: "after-setnx" is hit after the SET round and before T2 is read,
// so a pause there lengthens the measured elapsed time.
//
// Error semantics. Acquire returns an error wrapping ErrNotAcquired only when
// it is certain that no key of this call is left on any master: every master
// that may have stored one of its tokens (it answered OK, or its SET failed
// after the request may have been sent) answered the compare-and-delete. A
// master whose SET failed at dial time never received it. If some such
// master could not be cleaned (it timed out or is partitioned), Acquire
// retries the clean-up once more before giving up and then returns a
// *RedlockUncertainError, which does not wrap ErrNotAcquired: a key may
// remain on those masters until its TTL, so another client can be refused
// for up to one TTL. Such leftovers never form a grant that this client
// believes in, and when a later attempt of the same call succeeds they are
// left to expire.
//
// Release returns nil when a majority deleted the key, ErrNotHeld (wrapped)
// when fewer than a majority can still have held it, and another error when
// unreachable masters make it impossible to tell. Extend likewise returns
// ErrNotHeld only when fewer than a majority can have extended (masters
// that refused the connection certainly did not).
type redlock struct {
	cfg         Config
	addrs       []string
	nodes       []redlockNode
	quorum      int
	nodeTimeout time.Duration // 0: derived from the TTL
	retryDelay  time.Duration
	jitter      bool
}

// redlockState is the Lease.State of a redlock lease.
type redlockState struct {
	ttl time.Duration // the TTL of the last grant or extension
}

func newRedlock(cfg Config) (Lock, error) {
	if len(cfg.Endpoints.Masters) == 0 {
		return nil, fmt.Errorf("redlock: no masters in endpoints")
	}
	r, err := redlockOptions(cfg)
	if err != nil {
		return nil, err
	}
	r.addrs, r.quorum = cfg.Endpoints.Masters, len(cfg.Endpoints.Masters)/2+1
	for _, addr := range r.addrs {
		r.nodes = append(r.nodes, redlockNode{c: QuorumNodeClient(addr, cfg.Endpoints.Password, r.baseTimeout())})
	}
	return r, nil
}

// redlockOptions is a redlock without nodes, its options read.
func redlockOptions(cfg Config) (*redlock, error) {
	r := &redlock{cfg: cfg, jitter: true}
	var err error
	if v := cfg.Option("node-timeout", ""); v != "" {
		if r.nodeTimeout, err = redlockDuration("node-timeout", v); err != nil {
			return nil, err
		}
	}
	if r.retryDelay, err = redlockDuration("retry-delay", cfg.Option("retry-delay", RedlockRetryDelay.String())); err != nil {
		return nil, err
	}
	if r.jitter, err = strconv.ParseBool(cfg.Option("retry-jitter", "true")); err != nil {
		return nil, fmt.Errorf("redlock: option retry-jitter: %q is not true or false", cfg.Option("retry-jitter", ""))
	}
	return r, nil
}

// baseTimeout is the nodes' dial, read and write timeout: the per-request
// deadlines come from the context (the per-node timeout).
func (r *redlock) baseTimeout() time.Duration {
	return max(RedlockMaxNodeTimeout, r.nodeTimeout)
}

// QuorumNodeClient connects to one of several independent masters (the
// ext module's redsync adapter uses it too): no hidden retries, base as
// the dial/read/write timeout, per-request deadlines from the context (the
// per-node timeout), and a single dial attempt so a dead master fails at
// once with a dial error (which proves the request was never sent) rather
// than after go-redis's dial retries.
func QuorumNodeClient(addr, password string, base time.Duration) *redis.Client {
	opt := clientTimeouts()
	opt.Addr = addr
	opt.Password = password
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = base, base, base
	opt.ContextTimeoutEnabled = true
	opt.DialerRetries = 1
	opt.DisableIdentity = true
	return redis.NewClient(opt)
}

func redlockDuration(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("redlock: option %s: %q is not a positive duration", name, v)
	}
	return d, nil
}

// timeoutFor is the per-node timeout for a TTL.
func (r *redlock) timeoutFor(ttl time.Duration) time.Duration {
	if r.nodeTimeout > 0 {
		return r.nodeTimeout
	}
	return min(max(ttl/10, RedlockMinNodeTimeout), RedlockMaxNodeTimeout)
}

// redlockDrift is the clock drift allowance: 1% of the TTL plus 2 ms (seed 003).
func redlockDrift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

func (r *redlock) delay() time.Duration {
	if !r.jitter {
		return r.retryDelay
	}
	return r.retryDelay + rand.N(r.retryDelay+1)
}

// redlockResult is one master's answer.
type redlockResult struct {
	ok  bool
	err error
}

// each runs f on every master concurrently, each call bounded by timeout,
// and returns the answers in master order.
func (r *redlock) each(ctx context.Context, timeout time.Duration, f func(ctx context.Context, n redlockNode) (bool, error)) []redlockResult {
	res := make([]redlockResult, len(r.nodes))
	var wg sync.WaitGroup
	for i, c := range r.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res[i].ok, res[i].err = f(cctx, c)
		}()
	}
	wg.Wait()
	return res
}

// NotSent reports whether a failed go-redis request certainly had no
// effect on the node: the connection was never established, or the server
// answered with an error reply.
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// redlockNode is where Redlock keeps one of its keys: an independent
// master (the key as named), or one of a Redis Cluster's masters through a
// cluster client (the key behind the hash tag that puts it in a slot of
// that master, redlock-cluster).
type redlockNode struct {
	c   redis.UniversalClient
	tag string
}

// key is the lock key as stored on this node.
func (n redlockNode) key(key string) string { return n.tag + key }

func redlockUnlock(key, token string) func(context.Context, redlockNode) (bool, error) {
	return func(ctx context.Context, nd redlockNode) (bool, error) {
		n, err := unlockScript.Run(ctx, nd.c, []string{nd.key(key)}, token).Int()
		return n == 1, err
	}
}

// redlockLeftover is a token that may still be stored on a master.
type redlockLeftover struct {
	node  int
	token string
	err   error
}

// RedlockUncertainError is returned by redlock's Acquire when it failed to
// reach a quorum and could not make sure its keys are gone: the listed
// masters may hold a key of this call until its TTL runs out.
type RedlockUncertainError struct {
	Masters []string // addresses of the masters that may hold a key
	Cause   error    // why the last attempt failed
	Errs    error    // the clean-up errors
}

func (e *RedlockUncertainError) Error() string {
	return fmt.Sprintf("redlock: not acquired (%v), but the clean-up failed on %s, whose key may remain until its TTL: %v",
		e.Cause, strings.Join(e.Masters, ", "), e.Errs)
}

// Acquire runs Redlock attempts until one succeeds or opts.Wait runs out.
func (r *redlock) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("redlock: ttl must be positive")
	}
	key := KeyFor(resource)
	deadline := time.Now().Add(opts.Wait)
	var left []redlockLeftover
	var cause error
	for {
		l, dirty, err := r.attempt(ctx, resource, key, opts.TTL)
		if err == nil {
			return l, nil
		}
		left = append(left, dirty...)
		cause = err
		if !time.Now().Before(deadline) {
			break
		}
		t := time.NewTimer(r.delay())
		select {
		case <-ctx.Done():
			t.Stop()
			cause = fmt.Errorf("%v; %v", cause, ctx.Err())
		case <-t.C:
			continue
		}
		break
	}
	if len(left) > 0 {
		left = r.cleanup(ctx, key, opts.TTL, left)
	}
	if len(left) > 0 {
		e := &RedlockUncertainError{Cause: cause}
		var errs []error
		for _, x := range left {
			e.Masters = append(e.Masters, r.addrs[x.node])
			errs = append(errs, fmt.Errorf("%s: %w", r.addrs[x.node], x.err))
		}
		e.Errs = errors.Join(errs...)
		return nil, e
	}
	return nil, fmt.Errorf("%w: %v", ErrNotAcquired, cause)
}

// attempt is one round of the algorithm with a fresh token. On failure it
// has released on every master and returns the tokens that may remain.
func (r *redlock) attempt(ctx context.Context, resource, key string, ttl time.Duration) (*Lease, []redlockLeftover, error) {
	token := RandomToken()
	timeout := r.timeoutFor(ttl)
	start := time.Now()
	set := r.each(ctx, timeout, func(ctx context.Context, n redlockNode) (bool, error) {
		return n.c.SetNX(ctx, n.key(key), token, ttl).Result()
	})
	r.cfg.Hit("after-setnx")
	elapsed := time.Since(start)
	d := redlockDrift(ttl)
	validity := ttl - elapsed - d
	n := 0
	for _, x := range set {
		if x.ok {
			n++
		}
	}
	if n >= r.quorum && validity > 0 {
		return &Lease{
			Resource:   resource,
			Token:      token,
			Validity:   validity,
			ValidUntil: start.Add(ttl - d),
			State:      &redlockState{ttl: ttl},
		}, nil, nil
	}
	// Release on every master, even those that said no or failed: a timed
	// out SET may have landed. The clean-up runs even if ctx is cancelled.
	rel := r.each(context.WithoutCancel(ctx), timeout, redlockUnlock(key, token))
	var left []redlockLeftover
	var errs []error
	for i := range set {
		if set[i].err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.addrs[i], set[i].err))
		}
		mayHold := set[i].ok || (set[i].err != nil && !NotSent(set[i].err))
		if mayHold && rel[i].err != nil {
			left = append(left, redlockLeftover{node: i, token: token, err: rel[i].err})
		}
	}
	err := fmt.Errorf("%d of %d masters granted (quorum %d), validity %v", n, len(r.nodes), r.quorum, validity)
	if len(errs) > 0 {
		err = fmt.Errorf("%w; %w", err, errors.Join(errs...))
	}
	return nil, left, err
}

// cleanup retries the compare-and-delete for leftovers and returns those
// that still may remain.
func (r *redlock) cleanup(ctx context.Context, key string, ttl time.Duration, left []redlockLeftover) []redlockLeftover {
	ctx = context.WithoutCancel(ctx)
	out := make([]redlockLeftover, len(left))
	var wg sync.WaitGroup
	for i, x := range left {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, r.timeoutFor(ttl))
			defer cancel()
			_, err := redlockUnlock(key, x.token)(cctx, r.nodes[x.node])
			out[i] = redlockLeftover{node: x.node, token: x.token, err: err}
		}()
	}
	wg.Wait()
	var still []redlockLeftover
	for _, x := range out {
		if x.err != nil {
			still = append(still, x)
		}
	}
	return still
}

func (r *redlock) leaseTTL(l *Lease) time.Duration {
	if st, ok := l.State.(*redlockState); ok && st.ttl > 0 {
		return st.ttl
	}
	return RedlockMaxNodeTimeout * 10
}

// Release deletes the key on every master where it still carries the
// lease's token.
func (r *redlock) Release(ctx context.Context, l *Lease) error {
	res := r.each(ctx, r.timeoutFor(r.leaseTTL(l)), redlockUnlock(KeyFor(l.Resource), l.Token))
	deleted, failed := 0, 0
	var errs []error
	for i, x := range res {
		if x.ok {
			deleted++
		}
		if x.err != nil {
			failed++
			errs = append(errs, fmt.Errorf("%s: %w", r.addrs[i], x.err))
		}
	}
	switch {
	case deleted >= r.quorum:
		return nil
	case deleted+failed < r.quorum:
		err := fmt.Errorf("%w: only %d of %d masters still held the key (quorum %d)", ErrNotHeld, deleted, len(r.nodes), r.quorum)
		if failed > 0 {
			err = fmt.Errorf("%w; %w", err, errors.Join(errs...))
		}
		return err
	default:
		return fmt.Errorf("redlock: release deleted the key on %d of %d masters (quorum %d), the others failed: %w",
			deleted, len(r.nodes), r.quorum, errors.Join(errs...))
	}
}

// Extend sets the key's expiry to ttl on every master that still holds the
// lease's token. It succeeds only if a majority did so and the recomputed
// validity, ttl - elapsed - drift, is positive.
func (r *redlock) Extend(ctx context.Context, l *Lease, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("redlock: ttl must be positive")
	}
	key := KeyFor(l.Resource)
	start := time.Now()
	res := r.each(ctx, r.timeoutFor(ttl), func(ctx context.Context, nd redlockNode) (bool, error) {
		n, err := extendScript.Run(ctx, nd.c, []string{nd.key(key)}, l.Token, ttl.Milliseconds()).Int()
		return n == 1, err
	})
	r.cfg.Hit("after-extend")
	elapsed := time.Since(start)
	d := redlockDrift(ttl)
	validity := ttl - elapsed - d
	extended, maybe := 0, 0
	var errs []error
	for i, x := range res {
		if x.ok {
			extended++
		}
		if x.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.addrs[i], x.err))
			if !NotSent(x.err) {
				maybe++
			}
		}
	}
	switch {
	case extended >= r.quorum && validity > 0:
		l.Validity, l.ValidUntil = validity, start.Add(ttl-d)
		if st, ok := l.State.(*redlockState); ok {
			st.ttl = ttl
		} else {
			l.State = &redlockState{ttl: ttl}
		}
		return nil
	case extended >= r.quorum:
		return fmt.Errorf("redlock: extended on %d of %d masters but the validity %v is not positive", extended, len(r.nodes), validity)
	case extended+maybe < r.quorum:
		err := fmt.Errorf("%w: extended on %d of %d masters (quorum %d)", ErrNotHeld, extended, len(r.nodes), r.quorum)
		if len(errs) > 0 {
			err = fmt.Errorf("%w; %w", err, errors.Join(errs...))
		}
		return err
	default:
		return fmt.Errorf("redlock: extended on %d of %d masters (quorum %d), %d unknown: %w",
			extended, len(r.nodes), r.quorum, maybe, errors.Join(errs...))
	}
}

func (r *redlock) Close() error {
	var errs []error
	closed := map[redis.UniversalClient]bool{}
	for _, n := range r.nodes {
		if closed[n.c] {
			continue // the nodes of a cluster share its client
		}
		closed[n.c] = true
		if err := n.c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
