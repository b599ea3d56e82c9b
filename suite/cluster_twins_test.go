package suite_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/suite"
)

// clusterTwin is the suffix of a mutation lock of broken_test.go
// registered again on a Redis Cluster: the same code and the same slip on
// go-redis's ClusterClient (lockimpl.NewClusterClient, which follows no
// redirection), so that the properties written for one master are proven
// on the cluster topology too (Property.Cluster). Its key lives on the
// master serving its slot; a redirection of its SET NX (after a failover,
// before its slot map is reloaded) is "not acquired", and any other error
// reloads the slot map, as single-cluster does.
const clusterTwin = "-cluster"

func init() {
	for _, b := range brokenLocks {
		s, ack := b.slip, b.ack
		lockimpl.Register(lockimpl.Info{Name: b.name + clusterTwin, Source: "suite mutation test", Needs: lockfault.NeedsCluster, Caps: b.caps,
			Failpoints: []string{"after-setnx", "release-after-get", "after-extend"},
			Promises:   "single-master lock with one deliberate slip, on a Redis Cluster (test code only)"},
			func(cfg lockimpl.Config) (lockimpl.Lock, error) {
				cc, err := lockimpl.NewClusterClient(cfg.Endpoints)
				if err != nil {
					return nil, err
				}
				return reloading{&broken{cfg: cfg, rdb: cc, cc: cc, slip: s, ack: ack, held: map[string]*lockimpl.Lease{}}}, nil
			})
	}
	// The failpoint properties' by-command variants, for the twins too.
	for _, p := range suite.All() {
		if p.Failpoint == "" || p.Cluster == nil {
			continue
		}
		registerNoFailpoints(p.Cluster.Broken)
		registerNoFailpoints(p.Cluster.Correct)
	}
}

// refused is what an acquire makes of its SET NX's error: on a cluster a
// redirection executed nothing (not acquired) and any other error reloads
// the slot map (the key's master may have been failed over).
func (b *broken) refused(ctx context.Context, err error) error {
	if b.cc == nil {
		return err
	}
	if lockimpl.Redirected(err) {
		return fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
	}
	b.cc.ReloadState(ctx)
	return err
}

// waitReplica waits up to 300 ms for one replica of the key's master to
// acknowledge the writes so far (WAIT 1 300), sent to the master serving
// the key on a cluster.
func (b *broken) waitReplica(ctx context.Context, key string) (int, error) {
	if b.cc == nil {
		return b.rdb.Do(ctx, "WAIT", 1, 300).Int()
	}
	m, err := b.cc.MasterForKey(ctx, key)
	if err != nil {
		return 0, err
	}
	return m.Do(ctx, "WAIT", 1, 300).Int()
}

// reloading reloads a cluster twin's slot map after a release or an
// extend that failed other than by "not held".
type reloading struct{ *broken }

func (r reloading) Release(ctx context.Context, l *lockimpl.Lease) error {
	return r.reload(ctx, r.broken.Release(ctx, l))
}

func (r reloading) Extend(ctx context.Context, l *lockimpl.Lease, ttl time.Duration) error {
	return r.reload(ctx, r.broken.Extend(ctx, l, ttl))
}

func (r reloading) reload(ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, lockimpl.ErrNotHeld) {
		r.cc.ReloadState(ctx)
	}
	return err
}
