package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

// gate lets the nemesis quiesce the workload: while closed, clients do not
// start new acquires, and Quiesce waits until no client holds or is acquiring.
type gate struct {
	mu     sync.Mutex
	closed bool
	inside int
	change chan struct{}
}

func newGate() *gate { return &gate{change: make(chan struct{})} }

func (g *gate) broadcast() {
	close(g.change)
	g.change = make(chan struct{})
}

// enter blocks while the gate is closed.
func (g *gate) enter(ctx context.Context) bool {
	g.mu.Lock()
	for g.closed {
		ch := g.change
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
		g.mu.Lock()
	}
	g.inside++
	g.mu.Unlock()
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	g.inside--
	g.broadcast()
	g.mu.Unlock()
}

// quiesce closes the gate and waits until nobody is inside. poke, if not
// nil, is called at once and then every pokeEvery while clients are inside
// (quiesce: cut uses it to end their holds early).
func (g *gate) quiesce(ctx context.Context, timeout time.Duration, poke func()) error {
	g.mu.Lock()
	g.closed = true
	g.broadcast()
	deadline := time.After(timeout)
	var tick <-chan time.Time
	if poke != nil && g.inside > 0 {
		g.mu.Unlock()
		poke()
		t := time.NewTicker(pokeEvery)
		defer t.Stop()
		tick = t.C
		g.mu.Lock()
	}
	for g.inside > 0 {
		ch := g.change
		n := g.inside
		g.mu.Unlock()
		select {
		case <-ch:
		case <-tick:
			poke()
		case <-deadline:
			return fmt.Errorf("quiesce: %d client(s) still inside after %v", n, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		g.mu.Lock()
	}
	g.mu.Unlock()
	return nil
}

func (g *gate) open() {
	g.mu.Lock()
	g.closed = false
	g.broadcast()
	g.mu.Unlock()
}

// opTimeout bounds how long the harness waits for a reply before calling
// the outcome unknown. It is generous: a paused worker is not a dead one.
func opTimeout(sc *scenarios.Scenario) time.Duration {
	return sc.Lock.Wait.D() + sc.Workload.Hold.D() + sc.Lock.TTL.D() + 60*time.Second
}

// completion fills an operation's completion event from the worker's reply.
func completion(e history.Event, m worker.Message) history.Event {
	switch m.Status {
	case worker.StatusOK:
		e.Kind = history.OK
	case worker.StatusFail:
		e.Kind = history.Fail
	default:
		e.Kind = history.Info
	}
	e.Error, e.Token, e.Fence, e.ValidityMs, e.ValidUntil = m.Error, m.Token, m.Fence, m.ValidityMs, m.ValidUntil
	e.Read, e.Wrote, e.Rejected = m.Read, m.Wrote, m.Rejected
	if m.Lease != "" {
		e.Lease = m.Lease
	}
	return e
}

// roundKey picks the key a round guards: the resource, or with keys N > 1
// one of "<resource>-1" .. "<resource>-N" at random.
// lockKey is the Redis key the subject's lock keeps for the run's (first)
// lock key: a cluster's key-master and key-replica targets follow its slot.
// A lock lockfault ships keeps lockimpl.KeyFor of it ("lock:order"); a
// library worker's lock keeps the key it is given in acquire, as is
// (PROTOCOL.md: redis-py, symfony/lock, Laravel with no prefix), whose
// slot is another master's.
func lockKey(sc *scenarios.Scenario, s Subject) string {
	key := sc.Workload.Resource
	if sc.Workload.Keys > 1 {
		key += "-1"
	}
	if s.Shipped {
		return lockimpl.KeyFor(key)
	}
	return key
}

func roundKey(wl scenarios.Workload) string {
	if wl.Keys <= 1 {
		return wl.Resource
	}
	return fmt.Sprintf("%s-%d", wl.Resource, 1+rand.IntN(wl.Keys))
}

// roundOps are the operations of one harness-driven round of one client on
// one key.
type roundOps struct {
	r   *run
	ctx context.Context
	p   *proc
	key string
}

func (o *roundOps) acquire(id string) (worker.Message, error) {
	r := o.r
	r.mu.Lock()
	r.leaseKey[id] = o.key
	r.mu.Unlock()
	return r.cl.invoke(o.ctx, o.p, o.key, worker.Command{Cmd: "acquire", Key: o.key, Lease: id,
		TTLMs: r.sc.Lock.TTL.D().Milliseconds(), WaitMs: r.sc.Lock.Wait.D().Milliseconds()})
}

func (o *roundOps) release(k, id string) error {
	_, err := o.r.cl.invoke(o.ctx, o.p, k, worker.Command{Cmd: "release", Lease: id})
	return err
}

func (o *roundOps) extend(k, id string) (worker.Message, error) {
	return o.r.cl.invoke(o.ctx, o.p, k, worker.Command{Cmd: "extend", Lease: id, TTLMs: o.r.sc.Lock.TTL.D().Milliseconds()})
}

// giveBack ends the client's hold and releases the lease.
func (o *roundOps) giveBack(lease string) error {
	o.notHolder()
	return o.release(o.key, lease)
}

// notHolder records that the client no longer holds the lock.
func (o *roundOps) notHolder() {
	o.r.mu.Lock()
	if o.r.holder == o.p.name {
		o.r.holder = ""
	}
	o.r.mu.Unlock()
}

// reenter acquires the held lock again (workload.reentry), then releases
// the inner grants. ok false: an inner acquire was refused, and every
// grant has been given back.
func (o *roundOps) reenter(lease string) (ok bool, err error) {
	var inner []string
	for k := 2; k <= o.r.sc.Workload.Reentry; k++ {
		id := fmt.Sprintf("%s#%d", lease, k)
		m, err := o.acquire(id)
		if err != nil {
			return false, err
		}
		if m.Status != worker.StatusOK {
			o.notHolder()
			if err := o.releaseAll(inner); err != nil {
				return false, err
			}
			return false, o.release(o.key, lease)
		}
		inner = append(inner, id)
	}
	return true, o.releaseAll(inner)
}

// releaseAll releases inner grants, innermost first.
func (o *roundOps) releaseAll(inner []string) error {
	for i := len(inner) - 1; i >= 0; i-- {
		if err := o.release(o.key, inner[i]); err != nil {
			return err
		}
	}
	return nil
}

// releaseOld extends (when the workload extends) and releases the client's
// previous lease (workload.release_old), which it no longer holds.
func (o *roundOps) releaseOld(prev [2]string) error {
	wl := o.r.sc.Workload
	if !wl.ReleaseOld || prev[1] == "" {
		return nil
	}
	if wl.Extends > 0 {
		if _, err := o.extend(prev[0], prev[1]); err != nil {
			return err
		}
	}
	return o.release(prev[0], prev[1])
}

// extendAll extends the lease workload.extends times, every extend_every,
// and returns the last validity. ok false: an extend was refused or the
// workload is stopping, and the lease has been given back.
func (o *roundOps) extendAll(lease string, validUntil int64) (int64, bool, error) {
	wl := o.r.sc.Workload
	for i := 0; i < wl.Extends; i++ {
		if err := sleep(o.ctx, wl.ExtendEvery.D()); err != nil {
			// The workload is stopping: give the lock back.
			return 0, false, o.giveBack(lease)
		}
		m, err := o.extend(o.key, lease)
		if err != nil {
			return 0, false, err
		}
		if m.Status != worker.StatusOK {
			return 0, false, o.giveBack(lease)
		}
		validUntil = m.ValidUntil
	}
	return validUntil, true, nil
}
