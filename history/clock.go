package history

import "golang.org/x/sys/unix"

// Now returns the system-wide CLOCK_MONOTONIC reading in nanoseconds.
//
// The harness and every worker run on the same host, so they all read the
// same monotonic clock: timestamps taken in different processes compare
// directly. The clock never jumps, so clock faults injected into nodes or
// into a client's lock clock do not disturb the history's timeline.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}
