package lockimpl

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAcquireReleaseMulti measures sequential, uncontended
// Acquire+Release pairs against real servers on loopback (the library
// adapters' are in the adapters module: adapters/golibs).
func BenchmarkAcquireReleaseMulti(b *testing.B) {
	cases := []struct {
		name string
		ep   func(b *testing.B) Endpoints
	}{
		{"redlock", func(b *testing.B) Endpoints { return Endpoints{Masters: startRedisTB(b, 5)} }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			l, err := New(c.name, Config{Endpoints: c.ep(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			opts := AcquireOptions{TTL: 10 * time.Second}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				lease, err := l.Acquire(ctx, "bench", opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx, lease); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
