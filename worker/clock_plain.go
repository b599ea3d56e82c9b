//go:build !lockfault_clock

package worker

import "time"

// ClockInProcess says this binary was built with lockfault's clock overlay.
// Without it (this file), a `clock` command moves only Config.Now: a lock
// that calls time.Now itself is not moved, and the worker's clock reply
// says so (docs/FAULTS.md).
const ClockInProcess = false

func setProcessClock(time.Duration) {}
