package golibs

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

// raceResult is what two clients saw while contending for one resource.
type raceResult struct {
	grants   int64 // acquires that succeeded
	overlaps int64 // times a client found another inside the critical section
	errs     []error
}

// race has each client acquire, enter a critical section of 2 ms and
// release the resource rounds times (waiting up to 3 s for each grant),
// and counts the times a client entered while the other was inside.
func race(locks []lockimpl.Lock, resource string, ttl time.Duration, rounds int) raceResult {
	var (
		inside, grants, overlaps atomic.Int64
		mu                       sync.Mutex
		res                      raceResult
		wg                       sync.WaitGroup
	)
	ctx := context.Background()
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				lease, err := l.Acquire(ctx, resource, lockimpl.AcquireOptions{TTL: ttl, Wait: 3 * time.Second})
				if err != nil {
					mu.Lock()
					res.errs = append(res.errs, err)
					mu.Unlock()
					continue
				}
				grants.Add(1)
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				if err := l.Release(ctx, lease); err != nil {
					mu.Lock()
					res.errs = append(res.errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	res.grants, res.overlaps = grants.Load(), overlaps.Load()
	return res
}

// checkExclusion runs race on two clients and fails the test on an
// overlap, an error, or a client that never got the lock.
func checkExclusion(t *testing.T, a, b lockimpl.Lock, ttl time.Duration) {
	t.Helper()
	const rounds = 30
	r := race([]lockimpl.Lock{a, b}, "race", ttl, rounds)
	if r.overlaps != 0 || len(r.errs) != 0 || r.grants != 2*rounds {
		t.Fatalf("two clients, %d rounds each: %d grants, %d overlaps, errors %v; want %d grants, no overlap, no error",
			rounds, r.grants, r.overlaps, r.errs, 2*rounds)
	}
}

// grantAll is a lock broken in exactly the way race looks for: it grants
// every acquire.
type grantAll struct{}

func (grantAll) Acquire(_ context.Context, r string, _ lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	return &lockimpl.Lease{Resource: r}, nil
}
func (grantAll) Release(context.Context, *lockimpl.Lease) error { return nil }
func (grantAll) Close() error                                   { return nil }

// The exclusion check can fail: two clients of a lock that grants
// everything overlap.
func TestRaceSeesOverlaps(t *testing.T) {
	r := race([]lockimpl.Lock{grantAll{}, grantAll{}}, "race", time.Second, 30)
	if r.overlaps == 0 {
		t.Fatalf("a lock that grants every acquire: %d grants and no overlap seen", r.grants)
	}
}
