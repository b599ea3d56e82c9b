package lockfaulttest

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptible is the context of a Run, Suite or Hunt: cancelled by
// Ctrl-C or SIGTERM, so the runs under way stop and remove what they
// started (nodes, worker processes and their cgroups, temporary folders)
// before the test binary exits, where the signal's default action would
// kill it and leave them. The first signal only cancels; after it the
// default action is back, so a second one ends the binary at once.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
