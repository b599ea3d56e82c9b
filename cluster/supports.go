package cluster

import (
	"fmt"
	"slices"
)

// ShimFaults are the faults (names in package faults' registry) that need
// the node shim, faults/clockshim, preloaded in the node: it moves the
// node's clock and records what the node fsync'd.
var ShimFaults = []string{"clock-jump", "clock-drift", "power-loss"}

// Supports is nil when the process backend can inject fault: the shim's
// faults need the shim built (`make shim`).
func (p *Process) Supports(fault string) error {
	if !slices.Contains(ShimFaults, fault) {
		return nil
	}
	if _, err := ClockShimPath(); err != nil {
		return fmt.Errorf("fault %s needs the node shim: %v", fault, err)
	}
	return nil
}
