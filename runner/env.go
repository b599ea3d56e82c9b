package runner

import (
	"context"
	"fmt"
	"github.com/lockfault/lockfault/history"
	"sync"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/worker"
)

// env is the faults' view of a run (faults.Env): the cluster, the clients
// by target, re-pointing them after a failover, clones, and notes.
type env struct{ r *run }

func (e env) Cluster() *cluster.Cluster { return e.r.clus }

// Resource is the name the workload's lock guards (manual-unlock derives the
// lock key from it).
// LockKey is the Redis key the run's lock keeps (manual-unlock deletes it).
func (e env) LockKey() string { return lockKey(e.r.sc, e.r.subject) }

func (e env) Logf(format string, args ...any) {
	r := e.r
	r.note("nemesis", fmt.Sprintf(format, args...))
}

// Clients resolves a client target.
func (e env) Clients(target string) ([]faults.Client, error) {
	r := e.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []faults.Client
	switch target {
	case "all", "":
		for i := 1; i <= r.sc.Workload.Clients; i++ {
			if p := r.procs[fmt.Sprintf("c%d", i)]; p != nil {
				out = append(out, p)
			}
		}
	case lockfault.TargetTrigger:
		name := r.taps.trigger()
		if name == "" || r.procs[name] == nil {
			return nil, fmt.Errorf("target trigger: no await: command fired in this cycle")
		}
		out = append(out, r.procs[name])
	case "holder":
		if r.holder == "" {
			return nil, errNoHolder
		}
		out = append(out, r.procs[r.holder])
	case "others":
		for i := 1; i <= r.sc.Workload.Clients; i++ {
			n := fmt.Sprintf("c%d", i)
			if n != r.holder && r.procs[n] != nil {
				out = append(out, r.procs[n])
			}
		}
	default:
		p := r.procs[target]
		if p == nil {
			return nil, fmt.Errorf("unknown client %q (allowed: c1..c%d, holder, others, all)", target, r.sc.Workload.Clients)
		}
		out = append(out, p)
	}
	return out, nil
}

// Repoint sends every worker its endpoints for the current primary.
func (e env) Repoint(ctx context.Context) error {
	r := e.r
	r.mu.Lock()
	ps := make([]*proc, 0, len(r.procs))
	for _, p := range r.procs {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	for _, p := range ps {
		ep, err := r.cl.endpoints(p.name)
		if err != nil {
			return err
		}
		if err := p.Send(worker.Command{Cmd: "endpoints", Endpoints: ep}); err != nil {
			return fmt.Errorf("repoint %s: %w", p.name, err)
		}
	}
	return nil
}

// Clone starts a second worker under a client's identity (the client id its
// lock is given, its endpoints), as a process restarted under the same name
// while the old one still lives (paused, partitioned: a zombie). It runs
// the workload's rounds like any client; the history records it as
// "<client>-clone". The returned Heal stops it; the end of the workload
// stops it too.
func (e env) Clone(ctx context.Context, client string) (faults.Heal, error) {
	r := e.r
	name := client + "-clone"
	r.mu.Lock()
	wctx := r.wctx
	switch {
	case r.procs[client] == nil || wctx == nil:
		r.mu.Unlock()
		return nil, fmt.Errorf("unknown client %q", client)
	case r.procs[name] != nil:
		r.mu.Unlock()
		return nil, fmt.Errorf("%s already has a clone", client)
	}
	r.clones[name] = client
	r.mu.Unlock()
	p, err := r.cl.startProc(ctx, name)
	if err != nil {
		r.mu.Lock()
		delete(r.clones, name)
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Lock()
	r.procs[name] = p
	r.mu.Unlock()
	loopCtx, stop := context.WithCancel(wctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer r.cl.recoverInto(stop)
		r.cl.loop(loopCtx, name)
	}()
	return func(context.Context) error {
		stop()
		r.mu.Lock()
		p := r.procs[name] // a restarted clone is a new process
		r.mu.Unlock()
		if p != nil {
			r.hist.Append(history.Event{Kind: history.Note, Op: history.NoteStopping, Process: name, Detail: "the heal of clone-client stops the clone"})
			p.kill() // its round under way ends now (errDead)
		}
		wg.Wait()
		r.mu.Lock()
		delete(r.procs, name)
		delete(r.clones, name)
		if r.holder == name {
			r.holder = ""
		}
		r.mu.Unlock()
		return nil
	}, nil
}
