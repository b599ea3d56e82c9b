package lockimpl

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAcquireRelease measures sequential Acquire+Release pairs of the
// single-master locks against one real redis-server on loopback.
func BenchmarkAcquireRelease(b *testing.B) {
	addr := startRedisTB(b, 1)[0]
	for _, name := range []string{"single", "setnx-expire", "get-set", "del-release", "get-del-release", "fenced", "redisson"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			lk := sfLock(b, name, addr, nil)
			resource := "bench-" + name
			opts := AcquireOptions{TTL: 10 * time.Second}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l, err := lk.Acquire(ctx, resource, opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := lk.Release(ctx, l); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
