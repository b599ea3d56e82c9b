//go:build lockfault_clock

package worker

import "time"

// ClockInProcess says this binary was built with lockfault's clock overlay
// (faults/clockoverlay: go build -overlay build/_clock/overlay.json -tags
// lockfault_clock): a `clock` command moves the wall reading of time.Now in
// the whole process, the lock library's own code included.
const ClockInProcess = true

// setProcessClock moves the wall reading of time.Now by d.
func setProcessClock(d time.Duration) { time.LockfaultSetOffset(d) }
