package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/lockfault/lockfault/faults"
)

// Clone starts a second worker under a client's identity (the client id its
// lock is given, its endpoints), as a process restarted under the same name
// while the old one still lives (paused, partitioned: a zombie). It runs
// the workload's rounds like any client; the history records it as
// "<client>-clone". The returned Heal stops it; the end of the workload
// stops it too.
func (r *run) Clone(ctx context.Context, client string) (faults.Heal, error) {
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
	p, err := r.startProc(ctx, name)
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
		defer r.recoverInto(stop)
		r.clientLoop(loopCtx, name)
	}()
	return func(context.Context) error {
		stop()
		r.mu.Lock()
		p := r.procs[name] // a restarted clone is a new process
		r.mu.Unlock()
		if p != nil {
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
