package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/register"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/redis/go-redis/v9"
)

// benchWindow is how long each side of the throughput comparison runs.
const benchWindow = 3 * time.Second

// throughputScenario: 8 clients, hold 0, no faults, one lock on one Redis
// master; the nemesis only sleeps for the measured window.
func throughputScenario(b *testing.B, round string) *Plan {
	src := fmt.Sprintf(`name: bench-throughput
topology: {kind: standalone}
lock: {name: single, ttl: 10s, wait: 10s}
workload: {clients: 8, hold: 0s, round: %s}
nemesis:
  cycles: 1
  warmup: 0s
  steps:
    - {sleep: %s}
expect: [safe]
`, round, benchWindow)
	sc, err := scenarios.Parse("bench-throughput.yaml", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	return plan(b, sc, nil, Overrides{})
}

// harnessGrantsPerSecond runs the throughput scenario on the process backend
// (rounds sequenced by the harness or by the worker) and counts the grants
// inside the cycle's window.
func harnessGrantsPerSecond(b *testing.B, round string) float64 {
	opt := Options{Backend: "process", ReportsDir: b.TempDir()}
	out, err := Run(context.Background(), throughputScenario(b, round), opt)
	if err != nil {
		b.Fatal(err)
	}
	if !out.Meta.Matched {
		b.Fatalf("throughput run not safe: %s", out.Meta.Why)
	}
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var from int64
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == "cycle" {
			from = e.Time
		}
	}
	if from == 0 {
		b.Fatal("no cycle note in the history")
	}
	to := from + benchWindow.Nanoseconds()
	grants := 0
	for _, e := range evs {
		if e.Kind == history.OK && e.Op == "acquire" && e.Time >= from && e.Time < to {
			grants++
		}
	}
	return float64(grants) / benchWindow.Seconds()
}

// rawPairsPerSecond: n goroutines, each with its own go-redis client, loop
// SET NX PX + Lua compare-and-delete on one key (retrying at once when the
// key is taken), for the window; returns completed pairs per second. With a
// resource address, each pair also runs the harness's critical section in
// between: read the resource's register and write it back plus one, over
// the resource's own protocol (the least any harness that can see a lost
// update must do per grant).
func rawPairsPerSecond(b *testing.B, addr, res string, n int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), benchWindow)
	defer cancel()
	unlock := redis.NewScript(lockimpl.UnlockScript)
	var pairs atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			rc := register.Dial(res)
			defer rc.Close()
			token := lockimpl.RandomToken()
			for ctx.Err() == nil {
				ok, err := rdb.SetNX(ctx, "lock:raw", token, 10*time.Second).Result()
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if !ok {
					continue
				}
				if res != "" {
					v, err := rc.ReadKey("raw", "raw", token, 0)
					if err == nil {
						err = rc.WriteKey("raw", "raw", token, 0, v+1)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				// Release even when the window just closed: the key must go.
				if _, err := unlock.Run(context.Background(), rdb, []string{"lock:raw"}, token).Result(); err != nil {
					errs <- err
					return
				}
				pairs.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return float64(pairs.Load()) / benchWindow.Seconds()
}

// BenchmarkHarnessThroughput compares, in the same run, the grants per second
// the whole harness achieves (8 worker processes, hold 0, no faults, the
// single lock, every operation recorded) with a raw go-redis
// acquire+release loop of 8 goroutines on one key. The ratio is what the
// harness costs; each iteration measures, for benchWindow each, rounds
// sequenced by the harness (one command per step: ratio), rounds run by the
// worker (workload.round: worker: round-ratio) and the raw loop. The floor
// is the raw loop with the critical section's resource read and write added
// (no worker processes, no proxy, no history): floor-ratio is the most any
// harness that keeps the critical section could reach on this machine.
func BenchmarkHarnessThroughput(b *testing.B) {
	p, err := cluster.NewProcess("bench-raw")
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.Close(ctx)
	}()
	node, err := p.Start(context.Background(), cluster.NodeSpec{Name: "raw", Kind: cluster.KindRedis})
	if err != nil {
		b.Fatal(err)
	}
	res := &register.Server{}
	if err := res.Listen("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer res.Close()
	var harness, round, raw, floor float64
	for i := 0; i < b.N; i++ {
		harness += harnessGrantsPerSecond(b, scenarios.RoundHarness)
		round += harnessGrantsPerSecond(b, scenarios.RoundWorker)
		raw += rawPairsPerSecond(b, node.Addr(), "", 8)
		floor += rawPairsPerSecond(b, node.Addr(), res.Addr(), 8)
	}
	harness /= float64(b.N)
	round /= float64(b.N)
	raw /= float64(b.N)
	floor /= float64(b.N)
	b.ReportMetric(harness, "grants/s")
	b.ReportMetric(round, "round-grants/s")
	b.ReportMetric(raw, "raw-pairs/s")
	b.ReportMetric(harness/raw, "ratio")
	b.ReportMetric(round/raw, "round-ratio")
	b.ReportMetric(floor, "floor-pairs/s")
	b.ReportMetric(floor/raw, "floor-ratio")
}
