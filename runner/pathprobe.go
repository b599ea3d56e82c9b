package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/history"
	"github.com/redis/go-redis/v9"
)

// The path probe: evidence that the harness carried the lock's traffic in
// time. A liveness verdict (stuck) says the lock granted nothing for longer
// than its faults and leases allow; that is the lock's doing only if the
// path from its clients to the nodes answered meanwhile. That path runs
// through the harness (a client's tap and toxiproxy, both in this process)
// and the backend's port forwarding, and on a loaded machine it can stall
// for longer than a lock's per-node timeout with no fault on: the docker
// false-alarm campaign's redlock seed 2 was reported stuck while its 50 ms
// per-node calls timed out on every master with no fault on.
//
// While the workload runs, the harness asks every data node a trivial
// question (PING; etcd: GET /health) through a proxy of its own
// (Cluster.ProbeAddrs, never faulted) every probeEvery, and watches its own
// timer. Every stretch in which a probe took history.PathSlow or longer, or
// the timer fired that late, is one "path-slow" note: Target the node (or
// "harness" for the timer), DurationMs how long, at the stretch's end. A
// probe that fails fast (a node a fault has killed) is not a stall of the
// path. The checker does not charge a lock with those stretches.

const (
	probeEvery   = 100 * time.Millisecond
	probeTimeout = 2 * time.Second
	// maxPathSlowNotes bounds the notes of one run.
	maxPathSlowNotes = 2000
)

// probePaths starts the probe; stop ends it and records what is still open.
func (r *run) probePaths(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	budget := &atomic.Int64{}
	budget.Store(maxPathSlowNotes)
	start := func(target string, ask func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.cl.recoverInto(cancel)
			st := newStalls(r, target, ask == nil, budget)
			defer st.flush()
			next := time.Now()
			for {
				next = next.Add(probeEvery)
				if err := sleep(ctx, time.Until(next)); err != nil {
					return
				}
				woke := time.Now()
				if ask == nil {
					// The timer: how late it fired.
					st.observe(next, woke, woke.Sub(next))
					continue
				}
				err := ask(ctx)
				if ctx.Err() != nil {
					return
				}
				took := time.Since(woke)
				st.observe(woke, woke.Add(took), took)
				if err != nil && took >= history.PathSlow {
					st.failed = err.Error()
				}
				if took > probeEvery {
					next = time.Now() // no burst of probes to catch up
				}
			}
		}()
	}
	var closers []func()
	start("harness", nil)
	addrs, err := r.clus.ProbeAddrs()
	if err != nil {
		r.note("path-probe", "no probe of the nodes' paths: "+err.Error())
	} else {
		for _, m := range r.clus.DataNodes() {
			addr, ok := addrs[m.Name]
			if !ok {
				continue
			}
			ask, closeAsk := r.asker(addr)
			closers = append(closers, closeAsk)
			start(m.Name, ask)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			for _, c := range closers {
				c()
			}
		})
	}
}

// asker returns how to probe a node at addr: PING on redis (authenticated
// with the topology's password), GET /health on etcd.
func (r *run) asker(addr string) (ask func(context.Context) error, closeIt func()) {
	if r.clus.Topology.Kind == lockfault.Etcd {
		hc := &http.Client{Timeout: probeTimeout}
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			return err
		}, hc.CloseIdleConnections
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Password: r.sc.Topology.Password, PoolSize: 1, MaxRetries: -1,
		DialTimeout: probeTimeout, ReadTimeout: probeTimeout, WriteTimeout: probeTimeout})
	return func(ctx context.Context) error { return c.Ping(ctx).Err() }, func() { c.Close() }
}

// stalls joins one target's consecutive slow observations into stretches
// and notes each when it ends.
type stalls struct {
	r        *run
	target   string
	budget   *atomic.Int64
	subject  string // "the path to n1", "the harness"
	what     string // a format of the count, PathSlow and the worst
	from, to time.Time
	n        int
	worst    time.Duration
	failed   string // the error of the stretch's last failed probe
}

// newStalls watches a node's path, or the harness's own timer.
func newStalls(r *run, target string, timer bool, budget *atomic.Int64) *stalls {
	s := &stalls{r: r, target: target, budget: budget, subject: "the path to " + target,
		what: "%d probe(s) through its proxy took %v or more, the longest %v"}
	if timer {
		s.subject, s.what = "the harness", "its timer fired %[2]v or more late %[1]d time(s), at worst %[3]v late"
	}
	return s
}

// observe records one observation over [from, to] that took d.
func (s *stalls) observe(from, to time.Time, d time.Duration) {
	if d < history.PathSlow {
		s.flush()
		return
	}
	if s.n == 0 {
		s.from = from
	}
	s.to = to
	s.n++
	s.worst = max(s.worst, d)
}

// flush notes the open stretch, if any.
func (s *stalls) flush() {
	if s.n == 0 {
		return
	}
	n, worst, from, to, failed := s.n, s.worst, s.from, s.to, s.failed
	s.n, s.worst, s.failed = 0, 0, ""
	if s.budget.Add(-1) < 0 {
		return
	}
	end := history.Now() - time.Since(to).Nanoseconds()
	span := to.Sub(from)
	s.r.hist.Append(history.Event{Kind: history.Note, Op: history.NotePathSlow, Target: s.target, Time: end,
		DurationMs: max(span.Milliseconds(), 1), Cycle: s.r.currentCycle(),
		Detail: fmt.Sprintf("%s stalled for %v: ", s.subject, span.Round(time.Millisecond)) +
			fmt.Sprintf(s.what, n, history.PathSlow, worst.Round(time.Millisecond)) + lastFailed(failed)})
}

func lastFailed(err string) string {
	if err == "" {
		return ""
	}
	return " (the last failed: " + err + ")"
}
