package suite_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault/lockimpl"
)

// broken-cluster-no-redirect: single-cluster with one slip, the one
// redlock-rb#63 reports: it does not follow a redirection. An acquire
// answered MOVED or ASK is not acquired, and a release or an extend
// answered so fails; while the key's slot migrates, the holder's release
// never reaches the key, which stays until its TTL, and nobody acquires.
// Test code only: the control of cluster/slot-migration is single-cluster.
func init() {
	lockimpl.Register(lockimpl.Info{Name: "broken-cluster-no-redirect", Source: "suite mutation test", Needs: "cluster",
		Caps: []string{lockimpl.CapExtend}, Promises: "single-cluster without following MOVED or ASK (test code only)"},
		func(cfg lockimpl.Config) (lockimpl.Lock, error) {
			cc, err := lockimpl.NewClusterClient(cfg.Endpoints)
			if err != nil {
				return nil, err
			}
			return &noRedirect{cc: cc}, nil
		})
}

type noRedirect struct{ cc *redis.ClusterClient }

var (
	noRedirectUnlock = redis.NewScript(lockimpl.UnlockScript)
	noRedirectExtend = redis.NewScript(lockimpl.ExtendScript)
)

func (s *noRedirect) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	token := lockimpl.RandomToken()
	return lockimpl.RetryAcquire(ctx, opts.Wait, func() (*lockimpl.Lease, error) {
		start := time.Now()
		ok, err := s.cc.SetNX(ctx, lockimpl.KeyFor(resource), token, opts.TTL).Result()
		if lockimpl.Redirected(err) {
			return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
		}
		if err != nil {
			s.cc.ReloadState(ctx)
			return nil, err
		}
		if !ok {
			return nil, lockimpl.ErrNotAcquired
		}
		return &lockimpl.Lease{Resource: resource, Token: token, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

func (s *noRedirect) Release(ctx context.Context, l *lockimpl.Lease) error {
	n, err := noRedirectUnlock.Run(ctx, s.cc, []string{lockimpl.KeyFor(l.Resource)}, l.Token).Int()
	if err != nil {
		s.cc.ReloadState(ctx)
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

func (s *noRedirect) Extend(ctx context.Context, l *lockimpl.Lease, ttl time.Duration) error {
	start := time.Now()
	n, err := noRedirectExtend.Run(ctx, s.cc, []string{lockimpl.KeyFor(l.Resource)}, l.Token, ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	l.Validity, l.ValidUntil = ttl, start.Add(ttl)
	return nil
}

func (s *noRedirect) Close() error { return s.cc.Close() }

// minorityCap is cluster-capped-validity's validity: a quarter of the
// node timeout of suite/cluster-minority-grant.yaml (1 s). A grant from a
// master cut off at t0 comes before t0+node_timeout (the master refuses
// writes after that); the majority promotes its replica no earlier than
// t0+node_timeout+500 ms (the replica's fixed election delay); a validity
// under 500 ms ends before.
const minorityCap = 250 * time.Millisecond

// cluster-capped-validity: single-cluster whose grants are trusted for
// minorityCap at most, the control of cluster/minority-grant (test code
// only: the cap is fitted to that scenario's node timeout).
func init() {
	lockimpl.Register(lockimpl.Info{Name: "cluster-capped-validity", Source: "suite mutation test", Needs: "cluster",
		Caps: []string{lockimpl.CapExtend}, Promises: "single-cluster with every validity capped at 250 ms (test code only)"},
		func(cfg lockimpl.Config) (lockimpl.Lock, error) {
			l, err := lockimpl.New("single-cluster", cfg)
			if err != nil {
				return nil, err
			}
			return cappedValidity{l}, nil
		})
}

type cappedValidity struct{ lockimpl.Lock }

func (c cappedValidity) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	start := time.Now()
	l, err := c.Lock.Acquire(ctx, resource, opts)
	if err == nil && l.Validity > minorityCap {
		l.Validity, l.ValidUntil = minorityCap, start.Add(minorityCap)
	}
	return l, err
}

func (c cappedValidity) Extend(ctx context.Context, l *lockimpl.Lease, ttl time.Duration) error {
	start := time.Now()
	err := c.Lock.(lockimpl.Extender).Extend(ctx, l, ttl)
	if err == nil && l.Validity > minorityCap {
		l.Validity, l.ValidUntil = minorityCap, start.Add(minorityCap)
	}
	return err
}
