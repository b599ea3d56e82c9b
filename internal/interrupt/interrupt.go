// Package interrupt gives tests that start runs (lockfaulttest's Run, Suite
// and Hunt; lockfault's own hunt benchmark) a context that Ctrl-C or
// SIGTERM cancels, so the runs under way stop and remove what they started
// (nodes, worker processes and their cgroups, temporary folders) before the
// test binary exits, where the signal's default action would kill it and
// leave them.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Context is cancelled by the first Ctrl-C or SIGTERM; after it the
// signals' default action is back, so a second one ends the binary at once.
func Context() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
