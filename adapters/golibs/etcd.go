package golibs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

func init() {
	register(lockimpl.Info{
		Name: "etcd",
		Source: "go.etcd.io/etcd/client/v3/concurrency Mutex on a Session (etcd docs, \"distributed locks\"; " +
			"client/v3/concurrency/mutex.go): a key per waiter under the lock prefix, attached to the session's lease; " +
			"the waiter with the lowest create revision owns the lock",
		Promises: "mutual exclusion by Raft consensus, independent of clocks; a dead holder's lease expires within its TTL; " +
			"the owner key's create revision is a strictly increasing fencing token",
		Needs:   "etcd",
		Caps:    []string{lockimpl.CapFencing},
		Options: []string{"op-timeout"},
	}, "go.etcd.io/etcd/client/v3", newEtcd)
}

// EtcdPrefix starts every etcd lock key prefix; a resource's mutex prefix is
// EtcdPrefix + resource.
const EtcdPrefix = "/lockfault/lock/"

// EtcdOpTimeout is the default bound on each etcd request.
const EtcdOpTimeout = time.Second

// etcdLock is the etcd lock recipe as the etcd Go client publishes it
// (go.etcd.io/etcd/client/v3/concurrency): a Session on a lease and a Mutex
// on the resource's prefix.
//
// Acquire grants a lease of TTL seconds (AcquireOptions.TTL rounded up,
// at least 1; etcd itself may raise it to its minimum, about 2 s with the
// default election timeout), opens a Session on it (the session keeps the
// lease alive in the background) and calls Mutex.TryLock (Wait 0) or, if
// that finds the lock taken and Wait is positive, Mutex.Lock until Wait has
// passed. Every etcd request is bounded by the option op-timeout (default
// 1s); note that Mutex.Lock, when its wait fails, deletes its own key with
// the client's unbounded context, as published.
//
// Fence: the create revision of the owner key (read from Mutex.IsOwner, the
// comparison the mutex itself uses); grants are ordered by it, so it
// strictly increases across grants, sessions and client instances.
//
// Validity: the session renews the lease in the background and the
// concurrency package does not expose the keepalive responses, so the lock
// does not report renewals (no OnRenew events). Validity is the granted
// TTL counted from an instant at which the lease was certainly renewed: the
// clock read before the Grant request, or, if acquiring took more than half
// the TTL (a long wait in the queue), the clock read before one explicit
// KeepAliveOnce. ValidUntil is that bound on the monotonic clock, so it is a
// conservative end of the grant: the lease can only last longer while the
// holder's session is alive. If no positive validity can be claimed, the
// grant is given up.
//
// Failure semantics: a failed Acquire stops the session and revokes its
// lease, which deletes any key it left; it returns ErrNotAcquired (wrapped)
// when the revoke succeeded (or the lease was already gone) and an error
// that does not wrap ErrNotAcquired when the revoke failed, since a key may
// then remain until the lease expires (one TTL, the keepalive having
// stopped). Release deletes the key only if it is still the lease's key
// (create revision equal to the fence) — Mutex.Unlock with the ownership
// check that Unlock lacks, so a lost lock reports ErrNotHeld — then stops the
// session and revokes the lease. Close stops every session of this instance
// without revoking it (held leases then expire within their TTL, never
// before their ValidUntil) and closes the client.
type etcdLock struct {
	cfg       lockimpl.Config
	cli       *clientv3.Client
	opTimeout time.Duration

	mu       sync.Mutex
	sessions map[clientv3.LeaseID]*concurrency.Session
}

// etcdState is the Lease.State of an etcd lease: plain values, so a lock
// instance other than the one that acquired it can release it.
type etcdState struct {
	Key     string           // the owner key
	LeaseID clientv3.LeaseID // the session's lease
	TTL     int64            // granted TTL, seconds
}

func newEtcd(cfg lockimpl.Config) (lockimpl.Lock, error) {
	if len(cfg.Endpoints.Etcd) == 0 {
		return nil, fmt.Errorf("etcd: no etcd endpoints")
	}
	opTimeout := EtcdOpTimeout
	if v := cfg.Option("op-timeout", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("etcd: option op-timeout: %q is not a positive duration", v)
		}
		opTimeout = d
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints.Etcd,
		DialTimeout: opTimeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return &etcdLock{cfg: cfg, cli: cli, opTimeout: opTimeout, sessions: map[clientv3.LeaseID]*concurrency.Session{}}, nil
}

// etcdTTLSeconds rounds a TTL up to whole seconds, at least 1.
func etcdTTLSeconds(ttl time.Duration) int64 {
	s := int64((ttl + time.Second - 1) / time.Second)
	return max(s, 1)
}

func (l *etcdLock) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("etcd: ttl must be positive")
	}
	waitEnd := time.Now().Add(opts.Wait)
	start := time.Now()
	gctx, cancel := context.WithTimeout(ctx, l.opTimeout)
	g, err := l.cli.Grant(gctx, etcdTTLSeconds(opts.TTL))
	cancel()
	if err != nil {
		// Without a lease ID no lock key can have been written.
		return nil, fmt.Errorf("%w: etcd: grant: %v", lockimpl.ErrNotAcquired, err)
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(g.ID), concurrency.WithTTL(int(g.TTL)))
	if err != nil {
		return nil, l.abandon(ctx, nil, g.ID, fmt.Errorf("session: %w", err))
	}
	m := concurrency.NewMutex(s, EtcdPrefix+resource)
	lctx, cancel := context.WithTimeout(ctx, l.opTimeout)
	err = m.TryLock(lctx)
	cancel()
	if errors.Is(err, concurrency.ErrLocked) && opts.Wait > 0 {
		lctx, cancel := context.WithDeadline(ctx, waitEnd)
		err = m.Lock(lctx)
		cancel()
	}
	if err != nil {
		return nil, l.abandon(ctx, s, g.ID, err)
	}
	key := m.Key()
	owner := m.IsOwner()
	fence := owner.GetCompare().GetCreateRevision()

	validUntil := start.Add(time.Duration(g.TTL) * time.Second)
	if time.Until(validUntil) < time.Duration(g.TTL)*time.Second/2 {
		// A long wait: renew once to know a later point of the lease.
		t := time.Now()
		kctx, cancel := context.WithTimeout(ctx, l.opTimeout)
		ka, err := l.cli.KeepAliveOnce(kctx, g.ID)
		cancel()
		if err == nil && ka.TTL > 0 {
			validUntil = t.Add(time.Duration(ka.TTL) * time.Second)
		}
	}
	validity := time.Until(validUntil)
	if validity <= 0 {
		return nil, l.abandon(ctx, s, g.ID, fmt.Errorf("acquired after the lease's known validity ran out"))
	}
	l.mu.Lock()
	l.sessions[g.ID] = s
	l.mu.Unlock()
	return &lockimpl.Lease{
		Resource:   resource,
		Token:      key,
		Fence:      fence,
		Validity:   validity,
		ValidUntil: validUntil,
		State:      &etcdState{Key: key, LeaseID: g.ID, TTL: g.TTL},
	}, nil
}

// abandon gives up an attempt: it stops the session's keepalive and
// revokes the lease, which deletes any key written under it.
func (l *etcdLock) abandon(ctx context.Context, s *concurrency.Session, id clientv3.LeaseID, cause error) error {
	if s != nil {
		s.Orphan()
	}
	if err := l.revoke(ctx, id); err != nil {
		return fmt.Errorf("etcd: not acquired (%v), and revoking lease %x failed, so a key may remain until the lease expires: %w", cause, int64(id), err)
	}
	return fmt.Errorf("%w: etcd: %v", lockimpl.ErrNotAcquired, cause)
}

// revoke revokes a lease; a lease that is already gone counts as revoked.
func (l *etcdLock) revoke(ctx context.Context, id clientv3.LeaseID) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opTimeout)
	defer cancel()
	_, err := l.cli.Revoke(rctx, id)
	if err != nil && errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return err
}

// Release deletes the owner key if it still has the lease's create
// revision, then stops the session and revokes its lease.
func (l *etcdLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	st, ok := lease.State.(*etcdState)
	if !ok {
		return fmt.Errorf("etcd: lease has no etcd state")
	}
	tctx, cancel := context.WithTimeout(ctx, l.opTimeout)
	resp, err := l.cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(st.Key), "=", lease.Fence)).
		Then(clientv3.OpDelete(st.Key)).
		Commit()
	cancel()
	l.mu.Lock()
	s := l.sessions[st.LeaseID]
	delete(l.sessions, st.LeaseID)
	l.mu.Unlock()
	if s != nil {
		s.Orphan()
	}
	// The key is gone or the outcome is already decided; a failed revoke
	// leaves at most a lease that expires within its TTL.
	_ = l.revoke(ctx, st.LeaseID)
	if err != nil {
		return fmt.Errorf("etcd: release: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: etcd: key %s no longer has create revision %d", lockimpl.ErrNotHeld, st.Key, lease.Fence)
	}
	return nil
}

// Close stops the sessions' keepalives (leases then expire on their own)
// and closes the client.
func (l *etcdLock) Close() error {
	l.mu.Lock()
	ss := l.sessions
	l.sessions = map[clientv3.LeaseID]*concurrency.Session{}
	l.mu.Unlock()
	for _, s := range ss {
		s.Orphan()
	}
	return l.cli.Close()
}
