package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkTap compares a tap with a direct connection to the same node,
// alternating the two in every iteration: go-redis pipelines of 100 SET and
// GET pairs with 1 KiB values, and sequential round trips (SET then GET).
// A trigger that never matches is armed, as during a run. It reports the
// operations per second of each path and tap/direct, the ratio of the two.
func BenchmarkTap(b *testing.B) {
	node := startRedis(b)
	reg := NewRegistry()
	tap := newTap(b, reg, "c1", "n1", node)
	arm(b, reg, Trigger{Names: []string{"NEVER"}})
	direct, through := newClient(b, node, 2), newClient(b, tap.Addr(), 2)
	ctx := ctxT(b)
	value := strings.Repeat("v", 1024)
	modes := []struct {
		name string
		ops  int
		run  func(*redis.Client) error
	}{
		{"pipeline", 200, func(c *redis.Client) error {
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range 100 {
					k := fmt.Sprintf("b:%d", i)
					p.Set(ctx, k, value, 0)
					p.Get(ctx, k)
				}
				return nil
			})
			return err
		}},
		{"roundtrip", 2, func(c *redis.Client) error {
			if err := c.Set(ctx, "b:rt", value, 0).Err(); err != nil {
				return err
			}
			return c.Get(ctx, "b:rt").Err()
		}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			var onDirect, onTap time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				if err := m.run(direct); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := m.run(through); err != nil {
					b.Fatal(err)
				}
				onDirect, onTap, n = onDirect+t1.Sub(t0), onTap+time.Since(t1), n+1
			}
			ops := float64(n * m.ops)
			b.ReportMetric(ops/onDirect.Seconds(), "direct-ops/s")
			b.ReportMetric(ops/onTap.Seconds(), "tap-ops/s")
			b.ReportMetric(onDirect.Seconds()/onTap.Seconds(), "tap/direct")
		})
	}
}
