package lockfaulttest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault/lockfaulttest"
	"github.com/lockfault/lockfault/worker"
)

// wallLock is a user's lock that dates its key's expiry from the wall
// clock in Unix ms, and trusts it: from time.Now().UnixMilli() (as most
// code does), or from Config.Now().UnixMilli() (as lockfaulttest asks).
type wallLock struct {
	rdb       *redis.Client
	cfg       lockfaulttest.Config
	configNow bool
}

func (w *wallLock) nowMs() int64 {
	if w.configNow {
		return w.cfg.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

func (w *wallLock) Acquire(ctx context.Context, res string, o lockfaulttest.AcquireOptions) (*lockfaulttest.Lease, error) {
	token := w.cfg.ClientID + "-" + time.Now().Format("150405.000000000")
	deadline := time.Now().Add(o.Wait)
	for {
		expires := w.nowMs() + o.TTL.Milliseconds()
		ok, err := w.rdb.SetNX(ctx, "lock:"+res, token, o.TTL).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			left := time.Duration(expires-w.nowMs()) * time.Millisecond
			return &lockfaulttest.Lease{Resource: res, Token: token, Validity: left, ValidUntil: time.Now().Add(left)}, nil
		}
		if time.Now().After(deadline) {
			return nil, lockfaulttest.ErrNotAcquired
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *wallLock) Release(ctx context.Context, l *lockfaulttest.Lease) error {
	n, err := release.Run(ctx, w.rdb, []string{"lock:" + l.Resource}, l.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockfaulttest.ErrNotHeld
	}
	return nil
}

func (w *wallLock) Close() error { return w.rdb.Close() }

func wallLockDef(name string, configNow bool) lockfaulttest.LockDef {
	return lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: name, Needs: lockfaulttest.NeedsSingle},
		New: func(cfg lockfaulttest.Config) (lockfaulttest.Lock, error) {
			return &wallLock{rdb: redis.NewClient(&redis.Options{Addr: cfg.Endpoints.Primary, MaxRetries: -1}), cfg: cfg, configNow: configNow}, nil
		}}
}

// A user's lock that dates its expiry from time.Now().UnixMilli() is never
// held by clock/client-steps: in a test binary without the clock overlay
// the step cannot reach it, and the property says so (not exercised: read
// Config.Now); with the overlay it is caught. The same lock reading
// Config.Now is caught either way.
func TestClockStepsOfAUsersWallClockLock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes")
	}
	opts := lockfaulttest.Options{Backend: "process", Cycles: 1, ReportsDir: t.TempDir(), Only: []string{"clock/client-steps"}}
	for _, c := range []struct {
		name      string
		configNow bool
	}{{"lft-wall-time-now", false}, {"lft-wall-config-now", true}} {
		t.Run(c.name, func(t *testing.T) {
			card, err := lockfaulttest.Suite(t, wallLockDef(c.name, c.configNow), opts)
			if err != nil {
				t.Fatal(err)
			}
			row, ok := card.Row("clock/client-steps")
			if !ok {
				t.Fatalf("no clock/client-steps row: %+v", card.Rows)
			}
			t.Logf("%s: %s", row.Outcome, row.Finding)
			switch {
			case c.configNow || worker.ClockInProcess:
				if row.Outcome != lockfaulttest.Violated {
					t.Errorf("%s: %s (%s), want violated", c.name, row.Outcome, row.Finding)
				}
			case row.Outcome != lockfaulttest.Unknown || !strings.HasPrefix(row.Finding, lockfaulttest.NotReadingConfigNow):
				t.Errorf("%s: %s (%s), want unknown: %s", c.name, row.Outcome, row.Finding, lockfaulttest.NotReadingConfigNow)
			}
		})
	}
}
