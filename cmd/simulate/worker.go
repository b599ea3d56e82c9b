package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockfault/lockfault/runner"
)

// describeWorker handles `run -worker 'COMMAND ...'`: it splits the command
// like a shell would (no shell runs it), asks the worker what its lock is,
// and sets the options so the run uses it. On a bad command or worker it
// prints why and returns false: nothing has started and nothing is left.
func describeWorker(opt *runner.Options, command string, quiet bool, stderr io.Writer) bool {
	argv, err := runner.SplitCommand(command)
	if err != nil {
		fmt.Fprintln(stderr, "simulate run:", err)
		return false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	info, err := runner.Describe(ctx, argv, opt.Lock)
	if err != nil {
		fmt.Fprintln(stderr, "simulate run: -worker:", err)
		return false
	}
	opt.WorkerCommand, opt.WorkerInfo = argv, &info
	if !quiet {
		fmt.Fprintf(stderr, "worker %s: lock %s, needs %s, caps [%s], failpoints [%s]\n", runner.JoinCommand(argv),
			info.Name, info.Needs, strings.Join(info.Caps, " "), strings.Join(info.Failpoints, " "))
	}
	return true
}
