package runner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/worker"
)

// Describe starts a worker, asks it what its lock is (an init without
// endpoints, answered by ready), shuts it down, and returns what it
// declared: name, needs, capabilities and failpoints. workerCommand nil
// means the built-in worker (this executable). lock may be empty for an
// external worker that knows its own lock. Nothing else is started; the
// worker must answer within ctx's deadline and at most
// DefaultWorkerTimeout, and its process group is gone when Describe
// returns.
func Describe(ctx context.Context, workerCommand []string, lock string) (lockimpl.Info, error) {
	p, err := spawn(workerCommand, "describe", io.Discard, nil)
	if err != nil {
		return lockimpl.Info{}, err
	}
	timeout := DefaultWorkerTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	m, err := p.handshake(ctx, worker.Command{Cmd: "init", Client: "describe", Lock: lock}, timeout)
	if err != nil {
		return lockimpl.Info{}, err
	}
	p.shutdown()
	if lock != "" && m.Lock != lock {
		return lockimpl.Info{}, fmt.Errorf("%s: ready names lock %q, but init asked for %q", p.label, m.Lock, lock)
	}
	return lockimpl.Info{Name: m.Lock, Needs: m.Needs, Caps: m.Caps, Failpoints: m.Failpoints,
		Options: m.Options, Version: m.Version, Source: "external worker: " + JoinCommand(workerCommand)}, nil
}
