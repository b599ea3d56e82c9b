package scenarios

import (
	"sync"
	"time"
)

// FaultRegistry is what the scenario format needs to know about the faults
// (the nemesis): whether a fault exists, whether its params are within
// their ranges, how long its injection itself takes (ScheduledTime counts
// it), and which client a `clients` param names. The faults package
// installs it (SetFaults, from its init), so a scenario is checked against
// the registry of faults without this package depending on the nemesis; a
// binary without the faults package checks every name and param but those.
type FaultRegistry interface {
	Known(name string) error
	Check(name string, params map[string]string) error
	InjectTime(name string, params map[string]string) time.Duration
	// ClientParam is the name of the param that names clients, and the
	// client number it names (0: none, or a role such as holder).
	ClientParam(params map[string]string) (param string, client int)
}

var (
	faultsMu sync.RWMutex
	faultCat FaultRegistry
)

// SetFaults installs the fault catalog.
func SetFaults(c FaultRegistry) {
	faultsMu.Lock()
	defer faultsMu.Unlock()
	faultCat = c
}

func faultRegistry() FaultRegistry {
	faultsMu.RLock()
	defer faultsMu.RUnlock()
	return faultCat
}

// injectTime is a fault's injection time, 0 without a catalog.
func injectTime(name string, params map[string]string) time.Duration {
	if c := faultRegistry(); c != nil {
		return c.InjectTime(name, params)
	}
	return 0
}
