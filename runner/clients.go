package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/procwatch"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

// clients drives a run's workers: it starts each client's worker process
// (and restarts and clones), runs the client loops of the workload (one
// round after another, every operation an invocation and a completion in
// the history), and ends them. The state the clients share with the nemesis
// and the taps (the processes by name, the holder) is the run's, under its
// mutex.
type clients struct {
	r *run
}

// startWorkers starts every client's worker process; each must answer
// init with its ready.
func (cl *clients) start(ctx context.Context) error {
	for i := 1; i <= cl.r.sc.Workload.Clients; i++ {
		name := fmt.Sprintf("c%d", i)
		p, err := cl.startProc(ctx, name)
		if err != nil {
			return err
		}
		cl.r.mu.Lock()
		cl.r.procs[name] = p
		cl.r.mu.Unlock()
	}
	return nil
}

// startProc launches a worker for a client of the run and initialises it.
func (cl *clients) startProc(ctx context.Context, name string) (*proc, error) {
	// A clone's worker is started under the identity of the client it
	// clones (its endpoints, its client id); the history knows it by its
	// own name.
	identity := name
	cl.r.mu.Lock()
	if id, ok := cl.r.clones[name]; ok {
		identity = id
	}
	cl.r.mu.Unlock()
	p, err := spawn(cl.r.subject.Command, name, cl.r.workerLog, cl.r)
	if err != nil {
		return nil, err
	}
	ep, err := cl.endpoints(identity)
	if err != nil {
		p.kill()
		return nil, err
	}
	init := worker.Command{Cmd: "init", Client: identity, Lock: cl.r.subject.Name(), Options: cl.r.lockOpts, Endpoints: ep, Resource: cl.r.res.Addr()}
	m, err := p.handshake(ctx, init, cl.r.opt.workerTimeout())
	if err != nil {
		return nil, err
	}
	if m.Lock != cl.r.subject.Name() {
		p.kill()
		return nil, fmt.Errorf("%s: ready names lock %q, but init asked for %q", p.label, m.Lock, cl.r.subject.Name())
	}
	return p, nil
}

// endpoints are the client's proxy addresses for what its lock needs.
func (cl *clients) endpoints(client string) (lockimpl.Endpoints, error) {
	addrs, err := cl.r.clus.ClientAddrs(client)
	if err != nil {
		return lockimpl.Endpoints{}, err
	}
	// etcd speaks gRPC, not RESP: its clients reach it through the proxy
	// alone (a RESP tap in front of it broke every call: the hunt's etcd
	// schedules granted nothing, "etcd: grant: context deadline exceeded").
	if cl.r.taps != nil && cl.r.subject.Info.Needs != lockfault.NeedsEtcd {
		for node, a := range addrs {
			if addrs[node], err = cl.r.taps.addr(client, node, a); err != nil {
				return lockimpl.Endpoints{}, err
			}
		}
	}
	info := cl.r.subject.Info
	ep := lockimpl.Endpoints{Password: cl.r.sc.Topology.Password}
	data := cl.r.clus.DataNodes()
	switch info.Needs {
	case "etcd":
		for _, m := range data {
			ep.Etcd = append(ep.Etcd, "http://"+addrs[m.Name])
		}
	case lockfault.NeedsCluster:
		// Seeds and remap both lead to this client's own path to each
		// node (its tap or proxy), whatever address the cluster announces.
		ep.ClusterRemap = map[string]string{}
		for _, m := range data {
			ep.Cluster = append(ep.Cluster, addrs[m.Name])
			a, err := cl.r.clus.Announced(m)
			if err != nil {
				return lockimpl.Endpoints{}, err
			}
			ep.ClusterRemap[a] = addrs[m.Name]
		}
	case "masters":
		for _, m := range data {
			ep.Masters = append(ep.Masters, addrs[m.Name])
		}
		if cl.r.clus.Topology.Kind == lockfault.Replicated {
			ep.Masters = []string{addrs[cl.r.clus.Primary().Name]}
		}
	default:
		p := cl.r.clus.Primary()
		if p == nil {
			p = data[0]
		}
		ep.Primary = addrs[p.Name]
	}
	return ep, nil
}

// identity is the client a worker acts as: its own name, or for a clone
// the client it clones (whose endpoints and taps it uses).
func (cl *clients) identity(name string) string {
	cl.r.mu.Lock()
	defer cl.r.mu.Unlock()
	if id, ok := cl.r.clones[name]; ok {
		return id
	}
	return name
}

// startWorkload starts every client's loop, cN's first round (N-1) ×
// start_apart after c1's; stop ends them, wg waits for them. A panic in a
// loop ends the run through cancel.
func (cl *clients) startWorkload(ctx context.Context, cancel func()) (stop func(), wg *sync.WaitGroup) {
	wctx, stopWorkload := context.WithCancel(ctx)
	cl.r.mu.Lock()
	cl.r.wctx = wctx
	cl.r.mu.Unlock()
	wg = &sync.WaitGroup{}
	for i := 1; i <= cl.r.sc.Workload.Clients; i++ {
		name := fmt.Sprintf("c%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.recoverInto(cancel)
			// workload.start_apart: cN's first round (N-1) × start_apart after c1's.
			if sleep(wctx, time.Duration(i-1)*cl.r.sc.Workload.StartApart.D()) != nil {
				return
			}
			cl.loop(wctx, name)
		}()
	}
	return stopWorkload, wg
}

func (cl *clients) recoverInto(cancel func()) {
	if p := recover(); p != nil {
		cl.r.protocolError(fmt.Sprintf("panic: %v", p))
		cancel()
	}
}

// clientLoop: acquire, critical section, release, until the workload stops.
// A worker that dies is recorded as crashed and, if the scenario says so,
// restarted under the same name.
func (cl *clients) loop(ctx context.Context, name string) {
	wl := cl.r.sc.Workload
	for ctx.Err() == nil {
		cl.r.mu.Lock()
		p := cl.r.procs[name]
		cl.r.mu.Unlock()
		if !cl.r.gate.enter(ctx) {
			return
		}
		err := cl.oneRound(ctx, p)
		cl.r.gate.leave()
		if errors.Is(err, errDead) {
			if cl.r.ctx.Err() != nil {
				return // the harness is ending the run and killed it
			}
			cl.r.hist.Append(history.Event{Kind: history.Note, Op: history.NoteCrashed, Process: name, Detail: p.deathNote()})
			if wl.RestartCrashed.D() <= 0 {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wl.RestartCrashed.D()):
			}
			np, err := cl.startProc(ctx, name)
			if err != nil {
				if ctx.Err() == nil {
					cl.r.protocolError(fmt.Sprintf("restart %s: %v", name, err))
				}
				return
			}
			cl.r.mu.Lock()
			cl.r.procs[name] = np
			cl.r.mu.Unlock()
			cl.r.hist.Append(history.Event{Kind: history.Note, Op: "restarted", Process: name})
			continue
		}
		if wl.Think.D() > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wl.Think.D()):
			}
		}
	}
}

// oneRound is one acquire, critical section, release. With workload.reentry
// N > 1 the client acquires N times on the same worker (leases L, L#2 ..
// L#N: a reentrant lock counts the holds), releases L#N .. L#2, runs the
// critical section under L, which must still be held, and releases L. A
// re-entry that is refused or whose outcome is unknown ends the round: what
// is held is released, innermost first, and there is no critical section.
//
// With release_old the client first releases (and, with extends, extends)
// its previous lease, which it no longer holds. With extends N it extends L
// N times, every extend_every; an extend that does not succeed means the
// client lost the lock: it releases L and skips the critical section. With
// hold_until_valid the critical section lasts until that margin before the
// end of the validity the lock last reported.
func (cl *clients) oneRound(ctx context.Context, p *proc) error {
	key := roundKey(cl.r.sc.Workload)
	lease := fmt.Sprintf("%s-%d", p.name, cl.nextOp())
	if cl.r.sc.Workload.Round == scenarios.RoundWorker {
		return cl.workerRound(ctx, p, key, lease)
	}
	o := &roundOps{r: cl.r, ctx: ctx, p: p, key: key}
	started := time.Now()
	m, err := o.acquire(lease)
	if err != nil || m.Status != worker.StatusOK {
		if err == nil && time.Since(started) < time.Millisecond {
			// A lock that refuses, or fails (connection refused), without
			// waiting at all: do not spin. An acquire that waited gets no
			// delay of the harness's own.
			time.Sleep(time.Millisecond)
		}
		return err
	}
	cl.r.mu.Lock()
	cl.r.holder = p.name
	prev := cl.r.lastLease[p]
	cl.r.lastLease[p] = [2]string{key, lease}
	cl.r.mu.Unlock()
	cl.r.events.signal("grant", p.name)
	if cl.r.qu.cutting(ctx) {
		// Granted while the nemesis waits for the lock to be free.
		return o.giveBack(lease)
	}
	if ok, err := o.reenter(lease); !ok || err != nil {
		return err
	}
	if err := o.releaseOld(prev); err != nil {
		return err
	}
	validUntil, ok, err := o.extendAll(lease, m.ValidUntil)
	if !ok || err != nil {
		return err
	}
	hold := cl.r.sc.Workload.Hold.D()
	if margin := cl.r.sc.Workload.HoldUntilValid.D(); margin > 0 && validUntil > 0 {
		left := time.Duration(validUntil - history.Now())
		if left < margin {
			// Too little validity left to do anything safely.
			return o.giveBack(lease)
		}
		hold = left - margin
	}
	_, err = cl.invoke(ctx, p, key, worker.Command{Cmd: "cs", Lease: lease, HoldMs: hold.Milliseconds(), WriteIfValidMs: cl.r.sc.Workload.WriteIfValid.D().Milliseconds()})
	if err != nil {
		return err
	}
	return o.giveBack(lease)
}

// workerRound is a plain round (workload.round: worker) run by one `round`
// command: the worker acquires, runs the critical section and releases
// without waiting for the harness between the steps. The acquire's invoke
// is recorded here before the command is sent; every other invoke, and
// every completion, is recorded at the time the worker reports for it
// (CLOCK_MONOTONIC, shared by all processes), so each step keeps its own
// invoke and completion times. A step invoked but not completed when the
// worker dies, stays silent or the run is interrupted is recorded as info.
func (cl *clients) workerRound(ctx context.Context, p *proc, key, lease string) error {
	sc := cl.r.sc
	rs := &roundSteps{r: cl.r, p: p, key: key, lease: lease, ops: [3]int64{cl.nextOp(), cl.nextOp(), cl.nextOp()},
		cmds: [3]string{"acquire", "cs", "release"}, ch: make(chan worker.Message, 8), invoked: 1}
	p.mu.Lock()
	for i, op := range rs.ops {
		p.pending[op] = pendingOp{cmd: worker.Command{Cmd: rs.cmds[i], Op: op, Lease: lease}, ch: rs.ch, round: true}
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		for _, op := range rs.ops {
			delete(p.pending, op)
		}
		p.mu.Unlock()
	}()
	inv := rs.ev(0)
	inv.Kind = history.Invoke
	cl.r.hist.Append(inv)
	rs.who = cl.identity(p.name)
	cl.r.taps.setOp(rs.who, p.name, rs.cmds[0])
	defer cl.r.taps.setOp(rs.who, p.name, "")
	rs.started = time.Now()
	c := worker.Command{Cmd: "round", Op: rs.ops[0], OpCS: rs.ops[1], OpRelease: rs.ops[2], Key: key, Lease: lease,
		TTLMs: sc.Lock.TTL.D().Milliseconds(), WaitMs: sc.Lock.Wait.D().Milliseconds(), HoldMs: sc.Workload.Hold.D().Milliseconds()}
	if err := p.Send(c); err != nil {
		return rs.unknown(errDead)
	}
	timeout := opTimeout(cl.r.sc)
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		var m worker.Message
		select {
		case m = <-rs.ch:
		case <-p.dead:
			// Messages the worker wrote before it died are still read.
			select {
			case m = <-rs.ch:
			default:
				return rs.unknown(errDead)
			}
		case <-t.C:
			return rs.unknown(fmt.Errorf("no reply within %v", timeout))
		case <-cl.r.opCtx.Done():
			return rs.unknown(cl.r.opsEnded())
		}
		t.Reset(timeout)
		if end, err := rs.handle(m); end {
			return err
		}
	}
}

// invoke records an invocation, runs the call, and records the completion.
// key is the name the lock guards in this operation (every lock event
// carries it).
func (cl *clients) invoke(ctx context.Context, p *proc, key string, c worker.Command) (worker.Message, error) {
	c.Op = cl.nextOp()
	cl.r.hist.Append(history.Event{Kind: history.Invoke, Process: p.name, Op: c.Cmd, OpID: c.Op, Lease: c.Lease, Key: key})
	cl.r.taps.setOp(cl.identity(p.name), p.name, c.Cmd)
	defer cl.r.taps.setOp(cl.identity(p.name), p.name, "")
	// In-flight operations finish when the workload stops; only an
	// interrupted run (cl.r.ctx cancelled) abandons them, or one whose
	// drain ran out (opCtx).
	m, err := p.call(cl.r.opCtx, c, opTimeout(cl.r.sc))
	e := history.Event{Process: p.name, Op: c.Cmd, OpID: c.Op, Lease: c.Lease, Key: key}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = cl.r.opsEnded()
		}
		e.Kind, e.Error = history.Info, err.Error()
		cl.r.hist.Append(e)
		return m, err
	}
	cl.r.hist.Append(completion(e, m))
	return m, nil
}

// opsEnded is why the operations in flight were given up: the run's
// interruption (its context's error) or the end of its drain.
func (r *run) opsEnded() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	return context.Cause(r.opCtx)
}

func (cl *clients) nextOp() int64 {
	cl.r.mu.Lock()
	defer cl.r.mu.Unlock()
	cl.r.opID++
	return cl.r.opID
}

// keyOf is the key a lease was acquired for ("" if unknown).
func (cl *clients) keyOf(lease string) string {
	cl.r.mu.Lock()
	defer cl.r.mu.Unlock()
	return cl.r.leaseKey[lease]
}

// slowCall notes that p's call c has had no reply for d.
func (cl *clients) slowCall(p *proc, c worker.Command, d time.Duration) {
	if d > time.Duration(maxSlowNotes)*slowCallAfter {
		return
	}
	pid := 0
	if p.cmd != nil && p.cmd.Process != nil {
		pid = p.cmd.Process.Pid
	}
	detail := fmt.Sprintf("%s's %s (op %d) without a reply for %v: worker pid %d: %s",
		p.name, c.Cmd, c.Op, d.Round(time.Millisecond), pid, describeThreads(procwatch.Threads(pid, true)))
	if cl.r.taps != nil {
		detail += "; " + cl.r.taps.describe(cl.identity(p.name))
	}
	cl.r.hist.Append(history.Event{Kind: history.Note, Op: history.NoteSlowCall, Process: p.name, OpID: c.Op, Cycle: cl.r.currentCycle(), Detail: detail})
}

func (cl *clients) killAll() {
	cl.r.mu.Lock()
	ps := make([]*proc, 0, len(cl.r.procs))
	for _, p := range cl.r.procs {
		ps = append(ps, p)
	}
	cl.r.mu.Unlock()
	interrupted := cl.r.ctx != nil && cl.r.ctx.Err() != nil
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if interrupted {
				p.kill()
			} else {
				p.shutdown()
			}
		}()
	}
	wg.Wait()
}
